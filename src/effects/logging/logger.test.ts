import { describe, expect, it } from 'vitest'
import { createLogger } from './logger.ts'

describe('createLogger', () => {
  it('writes one JSON object a line with level and message', () => {
    const lines: string[] = []
    createLogger({ write: (l) => lines.push(l) }).info('started', { port: 3000 })
    expect(lines).toHaveLength(1)
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'info', msg: 'started', port: 3000 })
  })

  it('redacts secret-looking keys and token-looking values at any depth', () => {
    const lines: string[] = []
    const logger = createLogger({ write: (l) => lines.push(l) })
    logger.warn('oops', {
      password: 'hunter2hunter2',
      nested: { apiKey: 'abc', headers: { authorization: 'Bearer xyz' } },
      note: 'token ka_ABCDEFGHIJKLMNOPQRSTUV leaked and sk-live12345678',
    })
    const text = lines.join('\n')
    for (const secret of ['hunter2hunter2', 'abc"', 'Bearer xyz', 'ka_ABCDEFGHIJKLMNOPQRSTUV', 'sk-live12345678']) {
      expect(text).not.toContain(secret)
    }
    expect(text).toContain('[redacted]')
  })

  it('drops records below the level', () => {
    const lines: string[] = []
    createLogger({ level: 'warn', write: (l) => lines.push(l) }).info('quiet')
    expect(lines).toEqual([])
  })
})
