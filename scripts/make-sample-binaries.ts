// Writes (or, with --check, verifies) the generated binary fixtures and sample documents; the
// writers and the list of files are in tests/support/sample-binaries.ts, the samples' prose in
// samples/.sources/.
//
//   npm run samples:write    write the files
//   npm run samples:check    exit 1 if a committed file differs from what would be written
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { ROOT, generatedFiles } from '../tests/support/sample-binaries.ts'

const main = (args: ReadonlyArray<string>): number => {
  const check = args.includes('--check')
  let stale = 0
  for (const { path, bytes } of generatedFiles()) {
    const target = join(ROOT, path)
    let current: Buffer | undefined
    try {
      current = readFileSync(target)
    } catch {
      current = undefined
    }
    const same = current !== undefined && current.equals(bytes)
    if (check) {
      if (!same) {
        stale++
        console.error(`stale: ${path}`)
      }
      continue
    }
    if (!same) {
      mkdirSync(dirname(target), { recursive: true })
      writeFileSync(target, bytes)
    }
    console.log(`${same ? 'unchanged' : 'wrote    '} ${path} (${bytes.length} bytes)`)
  }
  return stale === 0 ? 0 : 1
}

process.exitCode = main(process.argv.slice(2))
