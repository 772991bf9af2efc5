import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { ConfigError, loadConfig } from '../config/app-config.ts'

function load(json: unknown) {
  const cwd = mkdtempSync(join(tmpdir(), 'knowagent-retrieval-config-'))
  writeFileSync(join(cwd, 'knowagent.config.json'), JSON.stringify(json))
  return loadConfig({ env: {}, cwd })
}

describe('retrieval.bailian in the config file', () => {
  test('defaults: enabled, the Beijing endpoint, a five-minute chat timeout, no entry values', () => {
    expect(load({}).retrievalBailian).toEqual({
      enabled: true,
      endpointHost: '{workspaceId}.cn-beijing.maas.aliyuncs.com',
      workspaceId: undefined,
      defaultRetrieveAgentId: undefined,
      defaultChatAgentId: undefined,
      chatTimeoutMs: 300_000,
      agentVersion: undefined,
      catalogMinIntervalMs: 5_000,
    })
  })

  test('every key is read', () => {
    const bailian = {
      enabled: false,
      endpointHost: 'https://proxy.example.com/bailian/{workspaceId}',
      workspaceId: 'llm-abc_1',
      defaultRetrieveAgentId: 'search-1',
      defaultChatAgentId: 'chat-1',
      chatTimeoutMs: 600_000,
      agentVersion: 'beta',
      catalogMinIntervalMs: 2_000,
    }
    expect(load({ retrieval: { bailian } }).retrievalBailian).toEqual(bailian)
  })

  test.each([
    [{ enabled: 'no' }, '["retrieval"]["bailian"]["enabled"]'],
    [{ chatTimeoutMs: 0 }, '["retrieval"]["bailian"]["chatTimeoutMs"]'],
    [{ catalogMinIntervalMs: -1 }, '["retrieval"]["bailian"]["catalogMinIntervalMs"]'],
    [{ workspaceId: 'ws/../x' }, '["retrieval"]["bailian"]["workspaceId"]'],
    [{ apiKey: 'sk-in-the-file' }, '["retrieval"]["bailian"]["apiKey"]'],
  ])('%j is refused, naming the key', (bailian, path) => {
    expect(() => load({ retrieval: { bailian } })).toThrow(ConfigError)
    expect(() => load({ retrieval: { bailian } })).toThrow(path)
  })
})
