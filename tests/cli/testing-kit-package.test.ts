// `knowagent/testing` works from a fresh project: the project is packed with `npm pack`, the tarball
// installed into a temporary directory, and the docs example (docs/examples/prove-own-tool.ts, which
// imports `knowagent/machines` and `knowagent/testing`) type-checked and run there against the
// installed copy, where no test runner is installed. The install asks the npm registry only for what
// its cache lacks.
import { execFile } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../../', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'knowagent-kit-'))
const app = join(dir, 'app')

afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('knowagent/testing from an installed tarball', () => {
  it('installs, type-checks and runs the docs example', { timeout: 300_000 }, async () => {
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: root, maxBuffer: 16 * 1024 * 1024 })
    const { filename } = (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!
    mkdirSync(app)
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'embedder', private: true, type: 'module', dependencies: { knowagent: `file:../${filename}` }, devDependencies: { '@types/node': '24.19.4', tsx: '4.23.15', typescript: '5.9.3' } }),
    )
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2024', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, allowImportingTsExtensions: true, skipLibCheck: true, types: ['node'] },
        include: ['*.ts'],
      }),
    )
    copyFileSync(join(root, 'docs/examples/prove-own-tool.ts'), join(app, 'prove-own-tool.ts'))
    writeFileSync(
      join(app, 'main.ts'),
      [
        "import { proveTool } from './prove-own-tool.ts'",
        'const { paths, diverged, coverage } = await proveTool()',
        "console.log(JSON.stringify({ kit: import.meta.resolve('knowagent/testing'), paths, diverged, stateNodes: coverage.stateNodes }))",
      ].join('\n'),
    )
    await run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: app, maxBuffer: 16 * 1024 * 1024 })
    expect(existsSync(join(app, 'node_modules/knowagent/src/testing/index.ts'))).toBe(true)
    expect(existsSync(join(app, 'node_modules/vitest'))).toBe(false) // the kit runs without a test runner

    const typecheck = await run(process.execPath, [join(app, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: app }).then(
      () => 'ok',
      (error: { stdout?: string }) => error.stdout ?? String(error),
    )
    expect(typecheck).toBe('ok')

    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'main.ts'], { cwd: app, maxBuffer: 16 * 1024 * 1024 })
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { kit: string; paths: number; diverged: number; stateNodes: { total: number; reached: number } }
    expect(fileURLToPath(result.kit)).toBe(join(app, 'node_modules/knowagent/src/testing/index.ts'))
    expect(result.paths).toBeGreaterThan(100)
    expect(result.diverged).toBeLessThan(result.paths / 2)
    expect(result.stateNodes.reached).toBe(result.stateNodes.total)
  })
})
