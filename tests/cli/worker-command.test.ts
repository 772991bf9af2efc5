// `knowagent worker` end to end (a real child process taking jobs, killed with SIGKILL) is in
// tests/db/compile-worker-process.test.ts; here: the command is listed and takes no arguments.
import { expect, it } from 'vitest'
import { main } from '../../src/cli.ts'

it('knowagent help lists the worker command', async () => {
  const out: string[] = []
  expect(await main(['help'], { out: (line) => out.push(line), err: () => {}, env: {} })).toBe(0)
  expect(out.join('\n')).toMatch(/^\s+worker\s+run compile jobs only/m)
})

it('knowagent worker refuses arguments', async () => {
  const err: string[] = []
  expect(await main(['worker', '--bogus'], { out: () => {}, err: (line) => err.push(line), env: {} })).toBe(2)
  expect(err.join('\n')).toContain("Unknown option '--bogus'")
})
