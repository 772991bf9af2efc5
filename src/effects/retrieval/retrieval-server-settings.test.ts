import { describe, expect, it } from 'vitest'
import { resolveBailianConfig } from './bailian-config.ts'
import { applyServerSettings, decodeServerSettings, parseServerSetting, viewServerSettings } from './retrieval-server-settings.ts'

describe('parseServerSetting', () => {
  it.each([
    ['endpointHost', '{workspaceId}.ap-southeast-1.maas.aliyuncs.com', { endpointHost: '{workspaceId}.ap-southeast-1.maas.aliyuncs.com' }],
    ['endpointHost', 'https://bailian-proxy.internal/{workspaceId}', { endpointHost: 'https://bailian-proxy.internal/{workspaceId}' }],
    ['endpointHost', 'bailian-proxy.internal:8443/{workspaceId}', { endpointHost: 'bailian-proxy.internal:8443/{workspaceId}' }],
    ['agentVersion', 'beta', { agentVersion: 'beta' }],
    ['chatTimeoutMs', ' 60000 ', { chatTimeoutMs: 60_000 }],
    ['workspaceId', 'llm-4u2y7bx3', { workspaceId: 'llm-4u2y7bx3' }],
  ])('takes %s = %s', (key, text, value) => {
    expect(parseServerSetting(key, text)).toEqual({ ok: true, value })
  })

  it.each([
    ['endpointHost', 'ftp://files.example/{workspaceId}', 'http(s) address'],
    ['endpointHost', 'https://user:pw@proxy/{workspaceId}', 'must not carry credentials'],
    ['endpointHost', 'two words', 'spaces or control characters'],
    ['endpointHost', '', '1–512 characters'],
    ['agentVersion', 'beta\n', 'without spaces or control characters'],
    ['chatTimeoutMs', '500', 'from 1000 to 3600000'],
    ['chatTimeoutMs', '1e9', 'from 1000 to 3600000'],
    ['chatTimeoutMs', '99999999999', 'from 1000 to 3600000'],
    ['apiKey', 'sk-1', 'unknown setting "apiKey"'],
    ['workspaceId', 'ws/../other', 'workspaceId must be 1–128 letters, digits, "-" and "_"'],
    ['workspaceId', '', 'workspaceId must be 1–128'],
    ['workspaceId', '-leading-dash', 'starting with a letter or digit'],
  ])('refuses %s = %j, saying why', (key, text, why) => {
    const parsed = parseServerSetting(key, text)
    expect(parsed.ok).toBe(false)
    expect(parsed.ok ? '' : parsed.message).toContain(why)
  })
})

describe('a stored document', () => {
  const config = resolveBailianConfig({ endpointHost: 'http://127.0.0.1:9/ws/{workspaceId}', agentVersion: 'published' })

  it('overrides the config file key by key', () => {
    expect(applyServerSettings(config, { agentVersion: 'beta' })).toEqual({ endpointHost: config.endpointHost, agentVersion: 'beta', chatTimeoutMs: 300_000 })
  })

  it('leaves the workspace id out of the connection values (it is a layer of each user\'s chain)', () => {
    expect(applyServerSettings(config, { workspaceId: 'ws-server' })).not.toHaveProperty('workspaceId')
  })

  it('says for each value where it comes from: stored, the config file, or the built-in default', () => {
    expect(viewServerSettings(config, { chatTimeoutMs: 60_000 })).toEqual([
      { key: 'workspaceId', value: undefined, source: 'default', configValue: undefined },
      { key: 'endpointHost', value: config.endpointHost, source: 'config', configValue: config.endpointHost },
      { key: 'agentVersion', value: 'published', source: 'config', configValue: 'published' },
      { key: 'chatTimeoutMs', value: 60_000, source: 'stored', configValue: 300_000 },
    ])
    const fromFile = resolveBailianConfig({ workspaceId: 'ws-file' })
    expect(viewServerSettings(fromFile, { workspaceId: 'ws-server' }).slice(0, 2)).toEqual([
      { key: 'workspaceId', value: 'ws-server', source: 'stored', configValue: 'ws-file' },
      { key: 'endpointHost', value: '{workspaceId}.cn-beijing.maas.aliyuncs.com', source: 'default', configValue: '{workspaceId}.cn-beijing.maas.aliyuncs.com' },
    ])
  })

  it('refuses anything else: unknown keys, wrong types, a non-object', () => {
    for (const document of [{ apiKey: 'x' }, { chatTimeoutMs: '60000' }, { chatTimeoutMs: 1.5 }, [], 'text', null]) {
      expect(decodeServerSettings(document).ok, JSON.stringify(document)).toBe(false)
    }
  })
})
