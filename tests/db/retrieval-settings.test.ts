// The settings chain against real PostgreSQL: each layer wins in turn, clearing falls back, the
// key is encrypted at rest, every call reads current values, and the one-time import from the
// `bl` login never fills back a value the user cleared; the stored layers are kept in memory only
// while the change feed is connected, and a write in any process reaches every other's memory.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createUser, type User } from '../../src/effects/auth/users.ts'
import { silentLogger } from '../../src/effects/logging/logger.ts'
import { resolveBailianConfig } from '../../src/effects/retrieval/bailian-config.ts'
import { type BailianSettings, type BailianSettingsOptions, connectionOf, makeBailianSettings, type SettingsChange } from '../../src/effects/retrieval/bailian-settings.ts'
import { type ChangeFeed, LISTENER_APPLICATION_NAME, startChangeFeed } from '../../src/effects/db/change-feed.ts'
import { SETTINGS_CHANNEL } from '../../src/effects/retrieval/retrieval-settings-store.ts'
import { openTestDatabase, type TestDatabase } from '../support/test-database.ts'
import { waitUntil } from '../support/wait-until.ts'

const SECRET = 'db-test-secret-0123456789abcdef'
let database: TestDatabase
let dir: string
let users: User[] = []
let counter = 0

beforeAll(async () => {
  database = await openTestDatabase('postgres')
  dir = mkdtempSync(join(tmpdir(), 'retrieval-settings-'))
})
afterAll(async () => {
  await database?.close()
  rmSync(dir, { recursive: true, force: true })
})

async function newUser(): Promise<User> {
  const user = await createUser(database.db, { login: `user${++counter}`, password: 'a-long-password' })
  users.push(user)
  return user
}

function settingsWith(overrides: Partial<BailianSettingsOptions> & { configFile?: Parameters<typeof resolveBailianConfig>[0] } = {}): BailianSettings {
  const { configFile, ...rest } = overrides
  return makeBailianSettings({
    db: database.db,
    secret: SECRET,
    config: resolveBailianConfig(configFile),
    env: {},
    blConfigPath: null,
    logger: silentLogger,
    ...rest,
  })
}

const sources = async (settings: BailianSettings, userId: string) => {
  const { settings: resolved } = await settings.resolve(userId)
  return Object.fromEntries(Object.entries(resolved).map(([key, value]) => [key, `${value.source}:${value.value ?? ''}`]))
}

describe('the chain over real storage', () => {
  test('each layer wins in turn; clearing the user layer falls back to the next', async () => {
    const user = await newUser()
    const env: Record<string, string | undefined> = {
      DASHSCOPE_API_KEY: 'sk-env-key-111',
      BAILIAN_WORKSPACE_ID: 'ws-env',
      BAILIAN_DEFAULT_CHAT_AGENT_ID: 'chat-env',
    }
    const settings = settingsWith({ env, configFile: { workspaceId: 'ws-config', defaultRetrieveAgentId: 'search-config' } })
    expect(await sources(settings, user.id)).toEqual({
      apiKey: 'environment:sk-env-key-111',
      workspaceId: 'config:ws-config',
      defaultRetrieveAgentId: 'config:search-config',
      defaultChatAgentId: 'environment:chat-env',
    })

    await settings.setApiKey(user.id, 'sk-stored-key-222')
    await settings.saveSettings(user.id, { workspaceId: 'ws-user', defaultRetrieveAgentId: 'search-user', defaultChatAgentId: 'chat-user' })
    expect(await sources(settings, user.id)).toEqual({
      apiKey: 'credential-store:sk-stored-key-222',
      workspaceId: 'user:ws-user',
      defaultRetrieveAgentId: 'user:search-user',
      defaultChatAgentId: 'user:chat-user',
    })

    await settings.saveSettings(user.id, { workspaceId: '', defaultRetrieveAgentId: '', defaultChatAgentId: '' })
    expect(await settings.removeApiKey(user.id)).toBe(true)
    expect(await sources(settings, user.id)).toEqual({
      apiKey: 'environment:sk-env-key-111',
      workspaceId: 'config:ws-config',
      defaultRetrieveAgentId: 'config:search-config',
      defaultChatAgentId: 'environment:chat-env',
    })
  })

  test('the credential layer: a stored value beats the environment', async () => {
    const user = await newUser()
    const settings = settingsWith({ env: { DASHSCOPE_API_KEY: 'sk-env-1' } })
    await settings.setApiKey(user.id, 'sk-store-1')
    expect((await settings.resolve(user.id)).settings.apiKey).toEqual({ value: 'sk-store-1', source: 'credential-store' })
  })

  test('saving the form with echoed values does not copy other layers into the user layer', async () => {
    const user = await newUser()
    const settings = settingsWith({ configFile: { workspaceId: 'ws-config' } })
    expect(await settings.saveSettings(user.id, { workspaceId: 'ws-config', defaultChatAgentId: '' })).toEqual([])
    const row = await database.db.selectFrom('retrieval_settings').selectAll().where('user_id', '=', user.id).executeTakeFirst()
    expect(row?.workspace_id ?? null).toBeNull()
  })

  test('the API key is encrypted at rest and bound to its owner', async () => {
    const [alice, bob] = [await newUser(), await newUser()]
    const settings = settingsWith()
    await settings.setApiKey(alice.id, 'sk-alice-plaintext-key')
    const rows = await database.db.selectFrom('user_credentials').selectAll().where('user_id', '=', alice.id).execute()
    expect(rows).toHaveLength(1)
    expect(JSON.stringify(rows)).not.toContain('sk-alice-plaintext-key')
    const dump = await sql<{ text: string }>`select string_agg(ciphertext, ',') as text from user_credentials`.execute(database.db)
    expect(dump.rows[0]!.text).not.toContain('sk-alice')
    // The same ciphertext copied to another user does not decrypt for them.
    await database.db.insertInto('user_credentials').values({ user_id: bob.id, name: 'DASHSCOPE_API_KEY', ciphertext: rows[0]!.ciphertext }).execute()
    const bobView = await settings.resolve(bob.id)
    expect(bobView.settings.apiKey.source).toBe('unset')
    expect(bobView.unreadableCredentials).toEqual(['DASHSCOPE_API_KEY'])
    // Another server secret cannot read it either.
    const other = settingsWith({ secret: 'another-secret-0123456789abcdef' })
    expect((await other.resolve(alice.id)).settings.apiKey.source).toBe('unset')
  })

  test('every call reads current values: no restart needed', async () => {
    const user = await newUser()
    const env: Record<string, string | undefined> = {}
    const settings = settingsWith({ env })
    expect(connectionOf(await settings.resolve(user.id))).toMatchObject({ _tag: 'BailianMissingCredentials', missing: 'apiKey' })
    env['DASHSCOPE_API_KEY'] = 'sk-late-env'
    expect(connectionOf(await settings.resolve(user.id))).toMatchObject({ _tag: 'BailianMissingCredentials', missing: 'workspaceId' })
    // Written by another process (another settings instance), seen at once.
    await settingsWith().saveSettings(user.id, { workspaceId: 'ws-other-process' })
    expect(connectionOf(await settings.resolve(user.id))).toEqual({
      apiKey: 'sk-late-env',
      workspaceId: 'ws-other-process',
      endpointHost: '{workspaceId}.cn-beijing.maas.aliyuncs.com',
      agentVersion: undefined,
    })
  })

  test('users never see each other\'s settings', async () => {
    const [alice, bob] = [await newUser(), await newUser()]
    const settings = settingsWith()
    await settings.setApiKey(alice.id, 'sk-alice-only')
    await settings.saveSettings(alice.id, { workspaceId: 'ws-alice' })
    expect(await sources(settings, bob.id)).toEqual({ apiKey: 'unset:', workspaceId: 'unset:', defaultRetrieveAgentId: 'unset:', defaultChatAgentId: 'unset:' })
  })

  test('invalid values are refused', async () => {
    const user = await newUser()
    const settings = settingsWith()
    await expect(settings.saveSettings(user.id, { workspaceId: 'ws/../../x' })).rejects.toMatchObject({ _tag: 'InvalidSettings', status: 400 })
    await expect(settings.saveSettings(user.id, { defaultChatAgentId: 'x'.repeat(300) })).rejects.toMatchObject({ _tag: 'InvalidSettings' })
    await expect(settings.setApiKey(user.id, '   ')).rejects.toMatchObject({ _tag: 'InvalidSettings' })
    await expect(settings.setApiKey(user.id, 'sk with spaces')).rejects.toMatchObject({ _tag: 'InvalidSettings' })
  })

  test('changes are announced to subscribers, with the keys changed', async () => {
    const user = await newUser()
    const settings = settingsWith()
    const changes: SettingsChange[] = []
    const unsubscribe = settings.subscribe((change) => changes.push(change))
    await settings.saveSettings(user.id, { workspaceId: 'ws-a' })
    await settings.saveSettings(user.id, { workspaceId: 'ws-a' }) // unchanged: no announcement
    await settings.setApiKey(user.id, 'sk-abc')
    unsubscribe()
    await settings.saveSettings(user.id, { workspaceId: 'ws-b' })
    expect(changes).toEqual([
      { userId: user.id, keys: ['workspaceId'] },
      { userId: user.id, keys: ['apiKey'] },
    ])
  })
})

describe('one-time import from the bl login', () => {
  const blFile = (content: unknown) => {
    const path = join(dir, `bl-${++counter}.json`)
    writeFileSync(path, JSON.stringify(content))
    return path
  }

  test('nothing configured anywhere: the key goes to the credential store, the workspace to the user layer', async () => {
    const user = await newUser()
    const path = blFile({ api_key: 'sk-from-bl-login', workspace_id: 'ws-from-bl' })
    const settings = settingsWith({ blConfigPath: path })
    expect(await sources(settings, user.id)).toMatchObject({ apiKey: 'credential-store:sk-from-bl-login', workspaceId: 'user:ws-from-bl' })
    const row = await database.db.selectFrom('retrieval_settings').select('seeded_fields').where('user_id', '=', user.id).executeTakeFirstOrThrow()
    expect(row.seeded_fields).toEqual(['apiKey', 'workspaceId'])
  })

  test('a value the user cleared is never filled back, in this process or the next', async () => {
    const user = await newUser()
    const path = blFile({ api_key: 'sk-from-bl-2', workspace_id: 'ws-from-bl-2' })
    const first = settingsWith({ blConfigPath: path })
    await first.resolve(user.id)
    await first.saveSettings(user.id, { workspaceId: '' })
    await first.removeApiKey(user.id)
    expect(await sources(first, user.id)).toMatchObject({ apiKey: 'unset:', workspaceId: 'unset:' })
    const nextProcess = settingsWith({ blConfigPath: path })
    expect(await sources(nextProcess, user.id)).toMatchObject({ apiKey: 'unset:', workspaceId: 'unset:' })
  })

  test('a field configured elsewhere is user-managed: not imported now, nor after it disappears', async () => {
    const user = await newUser()
    const path = blFile({ api_key: 'sk-from-bl-3', workspace_id: 'ws-from-bl-3' })
    const env: Record<string, string | undefined> = { DASHSCOPE_API_KEY: 'sk-env-3' }
    expect(await sources(settingsWith({ blConfigPath: path, env }), user.id)).toMatchObject({ apiKey: 'environment:sk-env-3', workspaceId: 'user:ws-from-bl-3' })
    delete env['DASHSCOPE_API_KEY']
    expect(await sources(settingsWith({ blConfigPath: path, env }), user.id)).toMatchObject({ apiKey: 'unset:' })
  })

  test('a field the file lacks stays importable for a later login', async () => {
    const user = await newUser()
    const path = blFile({ api_key: 'sk-only-key' })
    expect(await sources(settingsWith({ blConfigPath: path }), user.id)).toMatchObject({ workspaceId: 'unset:' })
    writeFileSync(path, JSON.stringify({ api_key: 'sk-only-key', workspace_id: 'ws-later' }))
    expect(await sources(settingsWith({ blConfigPath: path }), user.id)).toMatchObject({ apiKey: 'credential-store:sk-only-key', workspaceId: 'user:ws-later' })
  })

  test('no file, or an unreadable one: nothing happens', async () => {
    const user = await newUser()
    expect(await sources(settingsWith({ blConfigPath: join(dir, 'absent.json') }), user.id)).toMatchObject({ apiKey: 'unset:' })
    writeFileSync(join(dir, 'broken.json'), '{ not json')
    expect(await sources(settingsWith({ blConfigPath: join(dir, 'broken.json') }), user.id)).toMatchObject({ apiKey: 'unset:' })
  })
})

describe('the stored layers in memory, behind the change feed', () => {
  const feeds: ChangeFeed[] = []
  afterAll(async () => {
    for (const feed of feeds) await feed.close()
  })
  /** A settings instance as one process has it: its own feed, and a count of the queries it sends. */
  const processWithFeed = async (options: Partial<BailianSettingsOptions> = {}, reconnectDelayMs = { initial: 10, max: 50 }) => {
    const feed = startChangeFeed({ connection: { connectionString: database.url }, channels: [SETTINGS_CHANNEL], logger: silentLogger, reconnectDelayMs })
    feeds.push(feed)
    await waitUntil(() => feed.connected(), 'the change feed')
    let queries = 0
    const db = database.db.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        queries += 1
        return args.result
      },
    })
    return { feed, settings: settingsWith({ db, feed, ...options }), queries: () => queries }
  }

  test('a second resolve is served from memory; without a feed every resolve reads the database', async () => {
    const user = await newUser()
    const a = await processWithFeed()
    await a.settings.resolve(user.id)
    const afterFirst = a.queries()
    expect(afterFirst).toBe(3) // the user layer, the credentials and the server-wide connection settings
    await a.settings.resolve(user.id)
    expect(a.queries()).toBe(afterFirst)

    let queries = 0
    const counted = database.db.withPlugin({ transformQuery: (args) => args.node, transformResult: async (args) => ((queries += 1), args.result) })
    const noFeed = settingsWith({ db: counted })
    await noFeed.resolve(user.id)
    await noFeed.resolve(user.id)
    expect(queries).toBe(6)
  })

  test("a write in this process is seen at once, and another process's write once its NOTIFY arrives", async () => {
    const user = await newUser()
    const a = await processWithFeed()
    const b = await processWithFeed()
    expect(await sources(a.settings, user.id)).toMatchObject({ workspaceId: 'unset:' })
    expect(await sources(b.settings, user.id)).toMatchObject({ workspaceId: 'unset:' })

    await a.settings.saveSettings(user.id, { workspaceId: 'ws-written-by-a' })
    expect(await sources(a.settings, user.id)).toMatchObject({ workspaceId: 'user:ws-written-by-a' })
    await waitUntil(async () => (await sources(b.settings, user.id)).workspaceId === 'user:ws-written-by-a', 'process b to see the write')

    await b.settings.setApiKey(user.id, 'sk-set-in-b')
    await waitUntil(async () => (await sources(a.settings, user.id)).apiKey === 'credential-store:sk-set-in-b', 'process a to see the key')
    await a.settings.removeApiKey(user.id)
    await waitUntil(async () => (await sources(b.settings, user.id)).apiKey === 'unset:', 'process b to see the key removed')

    // A process without a feed (the worker) still tells the others.
    await settingsWith().saveSettings(user.id, { workspaceId: 'ws-from-a-worker' })
    await waitUntil(async () => (await sources(a.settings, user.id)).workspaceId === 'user:ws-from-a-worker', 'process a to see the worker\'s write')
  })

  test('while the feed is down nothing is served from memory, and a reconnect forgets everything', async () => {
    const user = await newUser()
    // Down for 2 s: long enough for the reads below to happen while it is.
    const a = await processWithFeed({}, { initial: 2_000, max: 2_000 })
    await a.settings.resolve(user.id)
    const cached = a.queries()
    await a.settings.resolve(user.id)
    expect(a.queries()).toBe(cached)

    await sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${LISTENER_APPLICATION_NAME} and datname = current_database()`.execute(database.db)
    await waitUntil(() => !a.feed.connected(), 'the feed to notice')
    // Written behind its back (no NOTIFY reaches a disconnected listener).
    await sql`insert into retrieval_settings (user_id, workspace_id) values (${user.id}, 'ws-while-down') on conflict (user_id) do update set workspace_id = excluded.workspace_id`.execute(database.db)
    expect(await sources(a.settings, user.id)).toMatchObject({ workspaceId: 'user:ws-while-down' })
    const down = a.queries()
    await a.settings.resolve(user.id)
    expect(a.queries()).toBe(down + 3)

    await waitUntil(() => a.feed.connected(), 'the feed to reconnect')
    await sql`update retrieval_settings set workspace_id = 'ws-after' where user_id = ${user.id}`.execute(database.db)
    expect(await sources(a.settings, user.id)).toMatchObject({ workspaceId: 'user:ws-after' })
  })

  test('an entry lives at most cacheTtlMs', async () => {
    const user = await newUser()
    let clock = 1_000_000
    const a = await processWithFeed({ cacheTtlMs: 5_000, now: () => clock })
    await a.settings.resolve(user.id)
    await sql`insert into retrieval_settings (user_id, workspace_id) values (${user.id}, 'ws-silent') on conflict (user_id) do update set workspace_id = excluded.workspace_id`.execute(database.db)
    expect(await sources(a.settings, user.id)).toMatchObject({ workspaceId: 'unset:' }) // memory, as designed: no NOTIFY was sent
    clock += 5_000
    expect(await sources(a.settings, user.id)).toMatchObject({ workspaceId: 'user:ws-silent' })
  })
})
