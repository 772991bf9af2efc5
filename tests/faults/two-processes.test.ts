// Two real `knowagent serve` processes on one PostgreSQL database: the per-user stream limit holds
// across both; a stream on one is unaffected when the other restarts (SIGTERM, start again); and
// after a kill -9, the restarted process closes only its own dead turns as `turn.interrupted` and
// nothing committed is lost. Both survivors answer /healthz after each fault; every process exits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { main } from '../../src/cli.ts'
import { decodeSseStream, type SseEvent } from '../../src/sse/sse-decoder.ts'
import { chatCompletionSse } from '../support/scripted-provider.ts'
import { readSseEvents } from '../support/sse-frames.ts'
import { createPostgresDatabase } from '../support/test-database.ts'
import { type ServeOnDatabase, startServeOnDatabase, stopServeProcesses } from '../support/serve-process.ts'

const SECRET = 'two-processes-secret-0123456789'
const LIMIT = 5

/** A provider whose answers stop after their first delta until the test releases them. */
async function startHeldProvider() {
  let release!: () => void
  let released = new Promise<void>((resolve) => (release = resolve))
  const open = new Set<ServerResponse>()
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      open.add(res)
      res.on('close', () => open.delete(res))
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(chatCompletionSse([{ text: 'part one, ' }]))
      void released.then(() => {
        if (!res.destroyed) res.end(chatCompletionSse([{ text: 'part two' }, { finish: 'stop' }, 'done']))
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    /** Lets every held answer finish; later requests are held again. */
    releaseAll: () => {
      release()
      released = new Promise<void>((resolve) => (release = resolve))
    },
    close: async () => {
      release()
      for (const res of open) res.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

describe('two server processes on one database', () => {
  let databaseUrl: string
  let dropDatabase: () => Promise<void>
  let dir: string
  let provider: Awaited<ReturnType<typeof startHeldProvider>>
  let token: string
  let query: pg.Client

  const startServe = (name: string) =>
    startServeOnDatabase({ databaseUrl, secret: SECRET, configPath: join(dir, 'config.json'), dataDir: join(dir, name) })

  const stream = (serve: ServeOnDatabase, modelId: string) =>
    fetch(`${serve.url}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: modelId, message: 'hello' }),
    })

  /** Opens a held stream and reads until its first delta; the rest is read by `rest()`. */
  async function heldStream(serve: ServeOnDatabase) {
    const res = await stream(serve, 'held')
    expect(res.status).toBe(200)
    const events: SseEvent[] = []
    const iterator = decodeSseStream(res.body!)[Symbol.asyncIterator]()
    for (;;) {
      const next = await iterator.next()
      if (next.done) throw new Error('the stream ended before its first delta')
      events.push(next.value)
      if (next.value.event === 'delta') break
    }
    return {
      turnId: res.headers.get('x-turn-id')!,
      rest: async () => {
        for (let next = await iterator.next(); !next.done; next = await iterator.next()) events.push(next.value)
        return events.map((e) => ({ event: e.event, data: JSON.parse(e.data) as Record<string, unknown> }))
      },
    }
  }

  const turnStatus = async (id: string) => {
    const { rows } = await query.query<{ status: string; error_code: string | null }>('select status, error_code from turns where id = $1', [id])
    return rows[0] ? [rows[0].status, rows[0].error_code].filter(Boolean).join(':') : 'missing'
  }

  beforeAll(async () => {
    ;({ url: databaseUrl, drop: dropDatabase } = await createPostgresDatabase())
    dir = mkdtempSync(join(tmpdir(), 'knowagent-two-'))
    provider = await startHeldProvider()
    const model = { profile: 'test', baseUrl: provider.baseUrl, model: 'm', contextWindow: 32768, maxOutputTokens: 1024, supportsNativeToolCalling: true, maxRetries: 0 }
    // A short drain: B's SIGTERM lets its running stream go on for a second, then cancels it (issue 38).
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ models: [{ id: 'held', name: 'Held', ...model }], limits: { streamsPerMinute: LIMIT }, shutdown: { drainSeconds: 1 } }))
    const env = { DATABASE_URL: databaseUrl, KNOWAGENT_SECRET: SECRET }
    const io = (out: string[]) => ({ out: (line: string) => out.push(line), err: (line: string) => out.push(line), env })
    const out: string[] = []
    expect(await main(['user', 'add', 'alice', '--password', 'a-long-password'], io(out))).toBe(0)
    expect(await main(['token', 'create', 'alice'], io(out))).toBe(0)
    token = out.at(-1)!
    query = new pg.Client({ connectionString: databaseUrl })
    await query.connect()
  }, 60_000)

  afterAll(async () => {
    stopServeProcesses()
    await query?.end()
    await provider?.close()
    await dropDatabase?.()
    rmSync(dir, { recursive: true, force: true })
  })

  it('share one stream limit; a stream on one survives the other\'s restart; kill -9 closes only the dead one\'s turns', async () => {
    const [a, b] = await Promise.all([startServe('a'), startServe('b')])

    // The limit holds across both processes.
    for (const serve of [a, b, a]) {
      const res = await stream(serve, 'local')
      expect(res.status).toBe(200)
      await readSseEvents(res)
    }
    const onA = await heldStream(a) // the 4th stream of the minute, left running
    const onB = await heldStream(b) // the 5th
    const refused = await stream(b, 'local')
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await refused.json()).error.code).toBe('rate_limited')

    // B restarts (SIGTERM: its own stream, still held when the drain ends, is cancelled), A's stream carries on untouched.
    expect((await b.stop('SIGTERM')).code).toBe(0)
    expect((await onB.rest()).at(-1)).toMatchObject({ event: 'error', data: { code: 'cancelled' } })
    const b2 = await startServe('b2')
    expect((await fetch(`${a.url}/healthz`)).status).toBe(200)
    expect(await turnStatus(onA.turnId)).toBe('running')
    expect((await stream(b2, 'local')).status).toBe(429) // the limit outlived B's restart
    provider.releaseAll()
    const eventsOnA = await onA.rest()
    expect(eventsOnA.filter((e) => e.event === 'delta').map((e) => e.data.text).join('')).toBe('part one, part two')
    expect(eventsOnA.at(-1)!.event).toBe('done')
    expect(await turnStatus(onA.turnId)).toBe('done')
    expect(await turnStatus(onB.turnId)).toBe('cancelled:cancelled')

    // kill -9 of A while it and B2 each run a stream: A's restart closes A's turn only.
    await query.query('delete from rate_limit_hits') // a new minute
    const dying = await heldStream(a)
    const living = await heldStream(b2)
    expect((await a.stop('SIGKILL')).signal).toBe('SIGKILL')
    const a2 = await startServe('a2')
    expect(await turnStatus(dying.turnId)).toBe('failed:turn.interrupted')
    expect(await turnStatus(living.turnId)).toBe('running')
    expect(await turnStatus(onA.turnId)).toBe('done') // committed before the kill: kept
    for (const serve of [a2, b2]) expect((await fetch(`${serve.url}/healthz`)).status).toBe(200)
    provider.releaseAll()
    expect((await living.rest()).at(-1)!.event).toBe('done')

    expect((await Promise.all([a2.stop(), b2.stop()])).map((exit) => exit.code)).toEqual([0, 0])
    const { rows } = await query.query<{ n: string }>('select count(*) as n from instances')
    expect(rows[0]!.n).toBe('0') // every process forgot itself on the way out, the killed one was swept
  }, 240_000)
})
