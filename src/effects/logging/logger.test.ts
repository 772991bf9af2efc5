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

  it('redacts session ids, signatures, keys and connection strings by their field name, and keeps the fields whose names only mention one', () => {
    const lines: string[] = []
    createLogger({ write: (l) => lines.push(l) }).info('checked', {
      sessionId: 'sess-0001',
      session_key: 'sess-0002',
      signature: 'sig-0003',
      passwd: 'pw-0004',
      privateKey: 'pk-0005',
      x_access_key: 'ak-0006',
      jwt: 'jwt-0007',
      databaseUrl: 'postgres://u:pw-0008@db/kb',
      sessionsEnded: 3,
      messageKey: 'k-1',
      tokenId: 'a4b1c2d3-0000-4000-8000-000000000001',
      passages: 12,
    })
    const record = JSON.parse(lines[0]!) as Record<string, unknown>
    for (const secret of ['sess-0001', 'sess-0002', 'sig-0003', 'pw-0004', 'pk-0005', 'ak-0006', 'jwt-0007', 'pw-0008']) expect(lines[0]).not.toContain(secret)
    expect(record).toMatchObject({ sessionId: '[redacted]', session_key: '[redacted]', signature: '[redacted]', sessionsEnded: 3, messageKey: 'k-1', passages: 12 })
    expect(record['tokenId']).toBe('a4b1c2d3-0000-4000-8000-000000000001') // which token an audit line is about
  })

  it('drops records below the level', () => {
    const lines: string[] = []
    createLogger({ level: 'warn', write: (l) => lines.push(l) }).info('quiet')
    expect(lines).toEqual([])
  })
})
