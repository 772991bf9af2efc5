#!/usr/bin/env node
// `npm test`: the type check (so the type-level tests, `expectTypeOf`, are enforced) and every
// vitest project, run at the same time. The type check is TypeScript 7's native compiler
// (`typescript-native`, ~10 s of CPU from nothing where 5.9's tsc took ~30 s); 5.9 stays the
// `typescript` package for the tools that load its JavaScript API (madge). The
// type check's errors are printed after the tests; the exit code fails if either failed.
// Arguments go to vitest: `npm test -- --project db`.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const bin = (name) => fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url))

const typeCheck = new Promise((resolve) => {
  // incremental: a second run checks only what changed (the cache lives in node_modules/.cache)
  const child = spawn(process.execPath, [fileURLToPath(new URL('../node_modules/typescript-native/bin/tsc', import.meta.url)), '--noEmit', '-p', 'tsconfig.json', '--incremental', '--tsBuildInfoFile', 'node_modules/.cache/knowagent/tsc.tsbuildinfo'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  child.on('close', (code) => resolve({ code: code ?? 1, output }))
})

const tests = new Promise((resolve) => {
  const child = spawn(bin('vitest'), ['run', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' })
  const forward = (signal) => child.kill(signal)
  process.on('SIGINT', forward)
  process.on('SIGTERM', forward)
  child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)))
})

const [checked, tested] = await Promise.all([typeCheck, tests])
if (checked.code !== 0) process.stdout.write(`\nThe type check failed (npm run check):\n${checked.output}\n`)
process.exit(checked.code !== 0 ? checked.code : tested)
