// A server process keeps ONE LISTEN connection (the composition root's change feed) for every
// feature that follows changes: the retrieval catalog and settings, the compile job events and the
// stored model connections (the model registry, which every server follows).
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { JobEvent } from '../../src/effects/compile/job-events.ts'
import { JOBS_CHANNEL } from '../../src/effects/compile/compile-jobs-store.ts'
import { CATALOG_CHANNEL } from '../../src/effects/retrieval/catalog-store.ts'
import { SETTINGS_CHANNEL } from '../../src/effects/retrieval/retrieval-settings-store.ts'
import { MODEL_CONNECTIONS_CHANNEL } from '../../src/effects/llm/model-connections-store.ts'
import { startTestServer, type TestServer } from '../support/test-server.ts'
import { waitUntil } from '../support/wait-until.ts'

describe('the process-wide change feed', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer({ retrieval: true, compile: { worker: true } })
    await server.compile!.feature.events.ready()
  })
  afterAll(async () => {
    await server?.close()
  })

  it('is the one listening backend of a server running retrieval and compile jobs, on all their channels', async () => {
    const { rows } = await sql<{ application_name: string; n: string }>`
      select application_name, count(*) as n from pg_stat_activity
       where datname = current_database() and query ilike 'LISTEN%' group by application_name`.execute(server.database.db)
    expect(rows.map((row) => ({ name: row.application_name, n: Number(row.n) }))).toEqual([{ name: 'knowagent-listener', n: 1 }])
    const [listener] = (
      await sql<{ query: string }>`select query from pg_stat_activity where datname = current_database() and query ilike 'LISTEN%'`.execute(server.database.db)
    ).rows
    for (const channel of [CATALOG_CHANNEL, SETTINGS_CHANNEL, JOBS_CHANNEL, MODEL_CONNECTIONS_CHANNEL]) expect(listener!.query).toContain(`LISTEN ${channel}`)
  })

  it('carries the compile job events through it', async () => {
    const seen: JobEvent[] = []
    const arrived = new Promise<void>((resolve) => {
      const stop = server.compile!.feature.events.subscribe((event) => {
        seen.push(event)
        stop()
        resolve()
      })
    })
    const payload = JSON.stringify({ job_id: 'job-1', owner_id: 'owner-1' })
    await sql`select pg_notify(${JOBS_CHANNEL}, ${payload})`.execute(server.database.db)
    await arrived
    expect(seen).toEqual([{ type: 'changed', jobId: 'job-1', ownerId: 'owner-1' }])
  })
})

describe('a process without retrieval or compile jobs', () => {
  it('still opens the one listening connection, for the model connections (retrieval turned off in the configuration, no compile jobs)', async () => {
    const server = await startTestServer({
      retrieval: true,
      configure: (config) => ({ ...config, retrievalBailian: { ...config.retrievalBailian, enabled: false } }),
    })
    try {
      expect(server.ctx.retrieval).toBeUndefined()
      const listening = async () =>
        (await sql<{ query: string }>`select query from pg_stat_activity where datname = current_database() and query ilike 'LISTEN%'`.execute(server.database.db)).rows
      await waitUntil(async () => (await listening()).length > 0, 'the LISTEN connection')
      const rows = await listening()
      expect(rows).toHaveLength(1)
      expect(rows[0]!.query).toContain(`LISTEN ${MODEL_CONNECTIONS_CHANNEL}`)
    } finally {
      await server.close()
    }
  })
})
