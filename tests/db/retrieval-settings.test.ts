// The settings chain against real PostgreSQL: each layer wins in turn, clearing falls back, the
// key is encrypted at rest, every call reads current values, and the one-time import from the
// `bl` login never fills back a value the user cleared.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createUser, type User } from '../../src/effects/auth/users.ts'
import { silentLogger } from '../../src/effects/logging/logger.ts'
import { resolveBailianConfig } from '../../src/effects/retrieval/bailian-config.ts'
import { type BailianSettings, type BailianSettingsOptions, connectionOf, makeBailianSettings, type SettingsChange } from '../../src/effects/retrieval/bailian-settings.ts'
import { openTestDatabase, type TestDatabase } from '../support/test-database.ts'

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
