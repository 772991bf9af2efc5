import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { parseBlCliConfig, planBlImport, readBlCliConfig } from './bl-config-import.ts'

describe('parseBlCliConfig', () => {
  test('reads the default profile at the top level', () => {
    expect(parseBlCliConfig(JSON.stringify({ api_key: ' sk-abc ', workspace_id: 'llm-ws1', base_url: 'x', profiles: {} }))).toEqual({
      apiKey: 'sk-abc',
      workspaceId: 'llm-ws1',
    })
  })
  test.each([
    ['not JSON', '{'],
    ['an array', '[]'],
    ['blank values', '{"api_key": "  ", "workspace_id": ""}'],
    ['wrong types', '{"api_key": 1, "workspace_id": true}'],
    ['a workspace id that is not an id', '{"workspace_id": "../etc"}'],
    ['a key with spaces', '{"api_key": "sk a b"}'],
  ])('%s reads as empty', (_name, text) => {
    expect(parseBlCliConfig(text)).toEqual({})
  })
  test('a missing file reads as empty; an existing one is read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bl-config-'))
    expect(await readBlCliConfig(join(dir, 'absent.json'))).toEqual({})
    writeFileSync(join(dir, 'config.json'), '{"api_key":"sk-file"}')
    expect(await readBlCliConfig(join(dir, 'config.json'))).toEqual({ apiKey: 'sk-file' })
  })
})

describe('planBlImport', () => {
  const file = { apiKey: 'sk-file', workspaceId: 'ws-file' }
  const nothing = { apiKey: false, workspaceId: false }

  test('nothing configured, nothing seeded: imports both and marks both', () => {
    expect(planBlImport({ seeded: [], configured: nothing, file })).toEqual({ apiKey: 'sk-file', workspaceId: 'ws-file', mark: ['apiKey', 'workspaceId'] })
  })
  test('a field configured elsewhere is marked as user-managed, never imported', () => {
    expect(planBlImport({ seeded: [], configured: { apiKey: true, workspaceId: false }, file })).toEqual({
      apiKey: undefined,
      workspaceId: 'ws-file',
      mark: ['apiKey', 'workspaceId'],
    })
  })
  test('a consumed field is never filled back, even when cleared since', () => {
    expect(planBlImport({ seeded: ['apiKey', 'workspaceId'], configured: nothing, file })).toEqual({ apiKey: undefined, workspaceId: undefined, mark: [] })
  })
  test('a field the file lacks stays unmarked, so a later `bl auth login` can still seed it', () => {
    expect(planBlImport({ seeded: [], configured: nothing, file: { apiKey: 'sk-file' } })).toEqual({ apiKey: 'sk-file', workspaceId: undefined, mark: ['apiKey'] })
  })
})
