// The catalog cache on real PostgreSQL: atomic publish, failures that keep the document, NOTIFY
// reaching another process's cache, the LISTEN connection reconnecting, and close() releasing it.
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { silentLogger } from '../../src/effects/logging/logger.ts'
import type { CatalogEntry, Scene, SceneListing } from '../../src/effects/retrieval/bailian-client.ts'
import { type CatalogCache, makeCatalogCache } from '../../src/effects/retrieval/catalog-cache.ts'
import { CATALOG_CHANNEL } from '../../src/effects/retrieval/catalog-store.ts'
import { LISTENER_APPLICATION_NAME, startChangeFeed } from '../../src/effects/db/change-feed.ts'
import { openTestDatabase, type TestDatabase } from '../support/test-database.ts'
import { waitUntil } from '../support/wait-until.ts'

const SECRET = 'catalog-cache-secret-0123456789'
let database: TestDatabase
const caches: CatalogCache[] = []
const withListener: CatalogCache[] = []

beforeAll(async () => {
  database = await openTestDatabase('postgres')
})
afterAll(async () => {
  for (const cache of caches) await cache.close()
  await database?.close()
})

function newCache({ listen = true }: { listen?: boolean } = {}): CatalogCache {
  // As the retrieval feature has it: a change feed of its own, closed with the cache.
  const feed = listen
    ? startChangeFeed({ connection: { connectionString: database.url }, channels: [CATALOG_CHANNEL], logger: silentLogger, reconnectDelayMs: { initial: 10, max: 50 } })
    : undefined
  const inner = makeCatalogCache({ db: database.db, secret: SECRET, logger: silentLogger, feed })
  const cache: CatalogCache = {
    ...inner,
    close: async () => {
      await inner.close()
      await feed?.close()
    },
  }
  caches.push(cache)
  if (listen) withListener.push(cache)
  return cache
}

const entry = (scene: Scene, agentId: string, agentName = `${agentId} name`): CatalogEntry => ({
  agentId,
  agentName,
  scene,
  status: 'deployed',
  modifyTime: '2026-01-01T00:00:00Z',
  description: undefined,
})
const listing = (search: CatalogEntry[], chat: CatalogEntry[], truncated = false): Record<Scene, SceneListing> => ({
  search: { scene: 'search', entries: search, total: search.length + (truncated ? 100 : 0), truncated },
  chat: { scene: 'chat', entries: chat, total: chat.length, truncated: false },
})
const publish = (cache: CatalogCache, workspaceId: string, scenes: Record<Scene, SceneListing>, apiKey = 'sk-reader') =>
  cache.publish({ workspaceId, endpointHost: 'http://fake/{workspaceId}', listing: scenes, apiKey, fetchedAt: new Date() })

describe('publish and read', () => {
  test('a published document reads back whole: entries in order, counts, totals, truncation, the reader', async () => {
    const cache = newCache({ listen: false })
    await publish(cache, 'ws-read', listing([entry('search', 's2'), entry('search', 's1')], [entry('chat', 'c1')], true))
    const status = await cache.read('ws-read')
    expect(status.document?.entries.map((e) => `${e.scene}:${e.agentId}`)).toEqual(['search:s2', 'search:s1', 'chat:c1'])
    expect(status.document?.scenes).toEqual({ search: { count: 2, total: 102, truncated: true }, chat: { count: 1, total: 1, truncated: false } })
    expect(status.document?.revision).toBe(1)
    expect(status.readers.has(cache.fingerprint('sk-reader'))).toBe(true)
    expect(status.readers.has(cache.fingerprint('sk-someone-else'))).toBe(false)
    expect(JSON.stringify([...status.readers])).not.toContain('sk-reader')
    await publish(cache, 'ws-read', listing([], [entry('chat', 'c9')]))
    const next = await cache.read('ws-read')
    expect(next.document?.revision).toBe(2)
    expect(next.document?.entries.map((e) => e.agentId)).toEqual(['c9'])
  })

  test('no document before a first successful fetch', async () => {
    const cache = newCache({ listen: false })
    expect((await cache.read('ws-never')).document).toBeUndefined()
  })

  test('a publish is all or nothing: a failing insert leaves the old document as it was', async () => {
    const cache = newCache({ listen: false })
    await publish(cache, 'ws-atomic', listing([entry('search', 'old-1')], [entry('chat', 'old-2')]))
    const before = await cache.read('ws-atomic')
    // The same agent id twice in one scene violates the primary key half-way through the publish.
    await expect(publish(cache, 'ws-atomic', listing([entry('search', 'new-1'), entry('search', 'new-1')], [entry('chat', 'new-2')]))).rejects.toThrow()
    const after = await cache.read('ws-atomic')
    expect(after.document).toEqual(before.document)
  })

  test('a failed refresh keeps the document and records the error; a refused key stops reading it', async () => {
    const cache = newCache({ listen: false })
    await publish(cache, 'ws-fail', listing([entry('search', 's1')], []), 'sk-good')
    const before = await cache.read('ws-fail')
    await cache.recordFailure({ workspaceId: 'ws-fail', endpointHost: 'x', message: 'Bailian list failed (HTTP 503)', at: new Date() })
    await cache.revokeReader({ workspaceId: 'ws-fail', apiKey: 'sk-good' })
    const after = await cache.read('ws-fail')
    expect(after.document).toEqual(before.document)
    expect(after.lastError).toBe('Bailian list failed (HTTP 503)')
    expect(after.lastErrorAt).toBeInstanceOf(Date)
    expect(after.readers.has(cache.fingerprint('sk-good'))).toBe(false)
    // The next success clears the error.
    await publish(cache, 'ws-fail', listing([entry('search', 's1')], []), 'sk-good')
    expect((await cache.read('ws-fail')).lastError).toBeUndefined()
  })

  test('a failure before any document is recorded without inventing one', async () => {
    const cache = newCache({ listen: false })
    await cache.recordFailure({ workspaceId: 'ws-first-fail', endpointHost: 'x', message: 'down', at: new Date() })
    const status = await cache.read('ws-first-fail')
    expect(status.document).toBeUndefined()
    expect(status.lastError).toBe('down')
  })
})

describe('shared by every process (LISTEN/NOTIFY)', () => {
  test('a publish in one process reaches another process\'s cache', async () => {
    const [processA, processB] = [newCache(), newCache()]
    await waitUntil(() => processA.listening() && processB.listening(), 'both listeners')
    await publish(processA, 'ws-shared', listing([entry('search', 'v1')], []))
    await waitUntil(async () => (await processB.read('ws-shared')).document?.revision === 1, 'process B to see revision 1')
    const notified: string[] = []
    processB.subscribe((workspaceId) => notified.push(workspaceId))
    await publish(processA, 'ws-shared', listing([entry('search', 'v2')], []))
    await waitUntil(() => notified.includes('ws-shared'), 'the notification in process B')
    expect((await processB.read('ws-shared')).document?.entries.map((e) => e.agentId)).toEqual(['v2'])
  })

  test('a read right after a publish in the same process sees it, before its own NOTIFY arrives', async () => {
    const cache = newCache()
    await waitUntil(() => cache.listening(), 'the listener')
    await publish(cache, 'ws-own', listing([entry('search', 'first')], []))
    await waitUntil(async () => (await cache.read('ws-own')).document?.revision === 1, 'revision 1 in memory')
    await publish(cache, 'ws-own', listing([entry('search', 'second')], []))
    expect((await cache.read('ws-own')).document?.entries.map((e) => e.agentId)).toEqual(['second'])
    await cache.recordFailure({ workspaceId: 'ws-own', endpointHost: 'x', message: 'failed just now', at: new Date() })
    expect((await cache.read('ws-own')).lastError).toBe('failed just now')
  })

  test('the listener reconnects after its connection is killed, and notifications flow again', async () => {
    const [writer, reader] = [newCache(), newCache()]
    await waitUntil(() => reader.listening(), 'the listener')
    const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity where application_name = ${LISTENER_APPLICATION_NAME} and datname = current_database()`.execute(database.db)
    expect(rows.length).toBeGreaterThan(0)
    await sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${LISTENER_APPLICATION_NAME} and datname = current_database()`.execute(database.db)
    await waitUntil(() => !reader.listening(), 'the listener to notice the lost connection')
    await waitUntil(() => reader.listening() && writer.listening(), 'the listeners to reconnect')
    const notified: string[] = []
    reader.subscribe((workspaceId) => notified.push(workspaceId))
    await publish(writer, 'ws-reconnect', listing([entry('search', 'after')], []))
    await waitUntil(() => notified.includes('ws-reconnect'), 'a notification after the reconnect')
  })

  test('closing the cache and its change feed releases the LISTEN connection', async () => {
    const cache = newCache()
    // Every listener is settled (the previous test killed them all), so the count is stable.
    await waitUntil(() => withListener.every((c) => c.listening()), 'every listener')
    const count = async () =>
      Number(
        (await sql<{ n: string }>`select count(*) as n from pg_stat_activity where application_name = ${LISTENER_APPLICATION_NAME} and datname = current_database()`.execute(database.db))
          .rows[0]!.n,
      )
    const before = await count()
    await cache.close()
    await waitUntil(async () => (await count()) === before - 1, 'the listening backend to go away')
    expect(cache.listening()).toBe(false)
  })
})
