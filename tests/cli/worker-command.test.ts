import { expect, it } from 'vitest'
import { main } from '../../src/cli.ts'

it('knowagent worker refuses to start without DATABASE_URL, saying why', async () => {
  const err: string[] = []
  const code = await main(['worker'], { out: () => {}, err: (line) => err.push(line), env: { KNOWAGENT_DATA_DIR: '/nonexistent' } })
  expect(code).toBe(1)
  expect(err.join('\n')).toContain('a worker process needs DATABASE_URL')
})

it('knowagent help lists the worker command', async () => {
  const out: string[] = []
  expect(await main(['help'], { out: (line) => out.push(line), err: () => {}, env: {} })).toBe(0)
  expect(out.join('\n')).toMatch(/^\s+worker\s+run compile jobs/m)
})
