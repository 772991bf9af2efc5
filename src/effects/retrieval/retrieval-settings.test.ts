import { describe, expect, test } from 'vitest'
import {
  describeSource,
  planSettingsUpdate,
  resolveRetrievalSettings,
  resolveSetting,
  type SettingKey,
  type SettingLayers,
  withSoleServiceFallback,
} from './retrieval-settings.ts'

const NONE: SettingLayers = { user: {}, entry: {}, credentials: {}, env: {} }

/** Every layer holds a distinct value for every key it can hold. */
const FULL: SettingLayers = {
  user: { workspaceId: 'ws-user', defaultRetrieveAgentId: 'search-user', defaultChatAgentId: 'chat-user' },
  entry: { workspaceId: 'ws-config', defaultRetrieveAgentId: 'search-config', defaultChatAgentId: 'chat-config' },
  credentials: {
    DASHSCOPE_API_KEY: 'sk-store',
    BAILIAN_WORKSPACE_ID: 'ws-store',
    BAILIAN_DEFAULT_RETRIEVE_AGENT_ID: 'search-store',
    BAILIAN_DEFAULT_CHAT_AGENT_ID: 'chat-store',
  },
  env: {
    DASHSCOPE_API_KEY: 'sk-env',
    BAILIAN_WORKSPACE_ID: 'ws-env',
    BAILIAN_DEFAULT_RETRIEVE_AGENT_ID: 'search-env',
    BAILIAN_DEFAULT_CHAT_AGENT_ID: 'chat-env',
  },
}

/** Removes layers from the top, one at a time: each next layer must win in turn. */
function withoutLayers(count: number): SettingLayers {
  const order: Array<keyof SettingLayers> = ['user', 'entry', 'credentials', 'env']
  const layers = { ...FULL }
  for (const name of order.slice(0, count)) (layers as Record<string, unknown>)[name] = {}
  return layers
}

describe('resolveSetting: each layer wins in turn', () => {
  test.each([
    ['workspaceId', ['ws-user', 'ws-config', 'ws-store', 'ws-env', undefined]],
    ['defaultRetrieveAgentId', ['search-user', 'search-config', 'search-store', 'search-env', undefined]],
    ['defaultChatAgentId', ['chat-user', 'chat-config', 'chat-store', 'chat-env', undefined]],
  ] as const)('%s', (key, expected) => {
    const sources = ['user', 'config', 'credential-store', 'environment', 'unset']
    expected.forEach((value, removed) => {
      expect(resolveSetting(key, withoutLayers(removed))).toEqual({ value, source: sources[removed] })
    })
  })

  test('the API key has no user or config face: credential store, then environment', () => {
    const layers: SettingLayers = { ...FULL, user: { workspaceId: 'x' }, entry: {} }
    expect(resolveSetting('apiKey', layers)).toEqual({ value: 'sk-store', source: 'credential-store' })
    expect(resolveSetting('apiKey', { ...layers, credentials: {} })).toEqual({ value: 'sk-env', source: 'environment' })
    expect(resolveSetting('apiKey', NONE)).toEqual({ value: undefined, source: 'unset' })
  })

  test('blank and null values count as absent; values are trimmed', () => {
    const layers: SettingLayers = {
      user: { workspaceId: '   ', defaultChatAgentId: null },
      entry: { workspaceId: '' },
      credentials: {},
      env: { BAILIAN_WORKSPACE_ID: '  ws-env  ', BAILIAN_DEFAULT_CHAT_AGENT_ID: 'chat-env' },
    }
    expect(resolveSetting('workspaceId', layers)).toEqual({ value: 'ws-env', source: 'environment' })
    expect(resolveSetting('defaultChatAgentId', layers)).toEqual({ value: 'chat-env', source: 'environment' })
  })

  test("the server default workspace id sits between the user's own and the config file's; only the workspace id has one", () => {
    const server = { workspaceId: 'ws-server' }
    expect(resolveSetting('workspaceId', { ...FULL, server })).toEqual({ value: 'ws-user', source: 'user' })
    expect(resolveSetting('workspaceId', { ...FULL, user: {}, server })).toEqual({ value: 'ws-server', source: 'server' })
    expect(resolveSetting('workspaceId', { ...FULL, user: {}, server: { workspaceId: '  ' } })).toEqual({ value: 'ws-config', source: 'config' })
    expect(resolveSetting('defaultChatAgentId', { ...FULL, user: {}, server })).toEqual({ value: 'chat-config', source: 'config' })
  })

  test('resolveRetrievalSettings resolves all four', () => {
    const resolved = resolveRetrievalSettings(FULL)
    expect(Object.fromEntries(Object.entries(resolved).map(([key, setting]) => [key, setting.source]))).toEqual({
      apiKey: 'credential-store',
      workspaceId: 'user',
      defaultRetrieveAgentId: 'user',
      defaultChatAgentId: 'user',
    })
  })
})

describe('withSoleServiceFallback', () => {
  test('a configured id wins', () => {
    expect(withSoleServiceFallback({ value: 'mine', source: 'user' }, ['only'])).toEqual({ value: 'mine', source: 'user' })
  })
  test('no configured id: the only deployed service of the scene', () => {
    expect(withSoleServiceFallback({ value: undefined, source: 'unset' }, ['only'])).toEqual({ value: 'only', source: 'sole-service' })
  })
  test.each([[[]], [['a', 'b']], [undefined]])('none when there is not exactly one (%j)', (ids) => {
    expect(withSoleServiceFallback({ value: undefined, source: 'unset' }, ids)).toEqual({ value: undefined, source: 'unset' })
  })
})

describe('planSettingsUpdate', () => {
  const current = resolveRetrievalSettings({ ...FULL, user: { defaultChatAgentId: 'chat-user' } })

  test('clearing a user value removes it (the next layer shows through)', () => {
    expect(planSettingsUpdate({ submitted: { defaultChatAgentId: '' }, current })).toEqual({ defaultChatAgentId: null })
  })

  test('saving the echoed value of another layer does not copy it into the user layer', () => {
    expect(planSettingsUpdate({ submitted: { workspaceId: 'ws-config', defaultRetrieveAgentId: 'search-config', defaultChatAgentId: 'chat-user' }, current })).toEqual({})
  })

  test('an empty field over a value from another layer changes nothing', () => {
    expect(planSettingsUpdate({ submitted: { workspaceId: '' }, current })).toEqual({})
  })

  test('a new value is written, trimmed', () => {
    expect(planSettingsUpdate({ submitted: { workspaceId: ' ws-new ', defaultChatAgentId: 'chat-new' }, current })).toEqual({
      workspaceId: 'ws-new',
      defaultChatAgentId: 'chat-new',
    })
  })

  test('fields not submitted are left alone', () => {
    expect(planSettingsUpdate({ submitted: {}, current })).toEqual({})
  })
})

test.each([
  ['user', 'workspaceId', 'your settings'],
  ['server', 'workspaceId', 'the server default (Administration → Retrieval defaults)'],
  ['config', 'workspaceId', 'the server config file (retrieval.bailian)'],
  ['credential-store', 'apiKey', 'configured (stored encrypted for your account)'],
  ['environment', 'apiKey', 'from environment (DASHSCOPE_API_KEY)'],
  ['environment', 'workspaceId', 'from environment (BAILIAN_WORKSPACE_ID)'],
  ['unset', 'apiKey', 'not configured'],
] as const)('describeSource(%s, %s)', (source, key: SettingKey, text) => {
  expect(describeSource(source, key)).toBe(text)
})
