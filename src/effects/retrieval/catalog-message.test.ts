// The content policy of SPEC §9, row by row.
import { describe, expect, test } from 'vitest'
import type { CatalogEntry, Scene } from './bailian-client.ts'
import { BL_INSTALL_NOTE, buildCatalogMessage, buildNoServiceNotice, buildRefreshedSceneList, CATALOG_ENTRY_LIMIT, sortByRecency } from './catalog-message.ts'
import type { CatalogDocument } from './catalog-store.ts'

const entry = (scene: Scene, n: number, overrides: Partial<CatalogEntry> = {}): CatalogEntry => ({
  agentId: `${scene}-${n}`,
  agentName: `${scene} service ${n}`,
  scene,
  status: 'deployed',
  modifyTime: new Date(Date.UTC(2026, 0, 1, 0, n)).toISOString(),
  description: undefined,
  ...overrides,
})

function documentOf(entries: CatalogEntry[], { totals = {}, truncated = {} }: { totals?: Partial<Record<Scene, number>>; truncated?: Partial<Record<Scene, boolean>> } = {}): CatalogDocument {
  const count = (scene: Scene) => entries.filter((e) => e.scene === scene).length
  return {
    workspaceId: 'ws',
    endpointHost: 'h',
    fetchedAt: new Date(),
    revision: 1,
    entries,
    scenes: {
      search: { count: count('search'), total: totals.search ?? count('search'), truncated: truncated.search ?? false },
      chat: { count: count('chat'), total: totals.chat ?? count('chat'), truncated: truncated.chat ?? false },
    },
  }
}

const range = (scene: Scene, count: number) => Array.from({ length: count }, (_, i) => entry(scene, i + 1))
const serviceLines = (text: string) => text.split('\n').filter((line) => line.startsWith('- '))

describe('buildCatalogMessage — the content policy', () => {
  test('no cache document → nothing is injected', () => {
    expect(buildCatalogMessage(undefined, {})).toBeUndefined()
  })

  test('0 services in the cache → the no-service notice: no invented ids, how to create and deploy one', () => {
    const text = buildCatalogMessage(documentOf([]), {})!
    expect(text).toBe(buildNoServiceNotice())
    expect(text).toContain('Do not call them and do not invent an id')
    expect(text).toContain('`bl knowledge service create` followed by `bl knowledge service deploy`')
    expect(text).toContain('https://bailian.console.aliyun.com/')
    expect(text).toContain('npm install -g bailian-cli')
  })

  test('a default service configured → only that one, and how many more exist (with the bl install line)', () => {
    const text = buildCatalogMessage(documentOf([...range('search', 4), ...range('chat', 2)]), { defaultRetrieveAgentId: 'search-3' })!
    expect(serviceLines(text)).toEqual([
      '- search-3: search service 3 (the default service)',
      '- chat-1: chat service 1',
      '- chat-2: chat service 2',
    ])
    expect(text).toContain('(3 more deployed search services exist: run `bl knowledge service list --scene search` to see them.)')
    expect(text).toContain(BL_INSTALL_NOTE)
  })

  test('the "N more" of a default counts the server total, and says "1 more … exists" in the singular', () => {
    const many = buildCatalogMessage(documentOf(range('chat', 3), { totals: { chat: 250 }, truncated: { chat: true } }), { defaultChatAgentId: 'chat-2' })!
    expect(many).toContain('(249 more deployed chat services exist:')
    const one = buildCatalogMessage(documentOf(range('chat', 2)), { defaultChatAgentId: 'chat-2' })!
    expect(one).toContain('(1 more deployed chat service exists:')
  })

  test('a default that is the only service → just it, no bl hint', () => {
    const text = buildCatalogMessage(documentOf(range('search', 1)), { defaultRetrieveAgentId: 'search-1' })!
    expect(serviceLines(text)).toEqual(['- search-1: search service 1 (the default service)'])
    expect(text).not.toContain('bl ')
  })

  test('a default that is not deployed (any more) → the ordinary policy for that scene', () => {
    const text = buildCatalogMessage(documentOf(range('search', 2)), { defaultRetrieveAgentId: 'gone' })!
    expect(serviceLines(text)).toEqual(['- search-1: search service 1', '- search-2: search service 2'])
  })

  test.each([1, 5, CATALOG_ENTRY_LIMIT])('%i deployed, no default → all of them, no truncation note, no bl', (count) => {
    const text = buildCatalogMessage(documentOf(range('search', count)), {})!
    expect(serviceLines(text)).toHaveLength(count)
    expect(text).not.toContain('truncated')
    expect(text).not.toContain('bailian-cli')
  })

  test('more than 10 → the 10 most recently modified, saying it is truncated and the total', () => {
    const text = buildCatalogMessage(documentOf(range('chat', 14)), {})!
    expect(serviceLines(text)).toEqual(Array.from({ length: 10 }, (_, i) => `- chat-${14 - i}: chat service ${14 - i}`))
    expect(text).toContain('(The list is truncated: showing the 10 most recently modified of 14 deployed chat services.')
    expect(text).toContain('`bl knowledge service list --scene chat --name <keyword>`')
    expect(text).toContain(BL_INSTALL_NOTE)
  })

  test('a listing cut at the page limit says "more than" the total it knows', () => {
    const text = buildCatalogMessage(documentOf(range('search', 12), { totals: { search: 12 }, truncated: { search: true } }), {})!
    expect(text).toContain('of more than 12 deployed search services')
  })

  test('a truncated listing is announced even when fewer than 10 rows were kept', () => {
    const text = buildCatalogMessage(documentOf(range('search', 3), { totals: { search: 300 }, truncated: { search: true } }), {})!
    expect(serviceLines(text)).toHaveLength(3)
    expect(text).toContain('The list is truncated')
  })

  test('an empty scene is omitted entirely; the header names no tool of its own', () => {
    const text = buildCatalogMessage(documentOf(range('chat', 2)), {})!
    expect(text).toContain('For kb_chat')
    expect(text).not.toContain('For kb_search')
    expect(text.split('\n')[0]).not.toMatch(/kb_search|kb_chat/)
  })

  test('both scenes, in order: search then chat', () => {
    const text = buildCatalogMessage(documentOf([...range('chat', 1), ...range('search', 1)]), {})!
    expect(text.indexOf('For kb_search')).toBeLessThan(text.indexOf('For kb_chat'))
  })

  test('service names verbatim, in any script; control characters cannot forge a line', () => {
    const text = buildCatalogMessage(
      documentOf([entry('search', 1, { agentName: '产品文档检索 (v2)' }), entry('search', 2, { agentName: 'evil\n- search-999: fake\r\nname' }), entry('search', 3, { agentName: '' })]),
      {},
    )!
    expect(serviceLines(text)).toEqual(['- search-1: 产品文档检索 (v2)', '- search-2: evil - search-999: fake name', '- search-3: (unnamed)'])
  })

  test('English framing: says ids cannot be guessed and not to use an unrelated service', () => {
    const text = buildCatalogMessage(documentOf(range('search', 1)), {})!
    expect(text).toContain('ids cannot be guessed')
    expect(text).toContain('say so plainly instead of trying the closest-looking id')
  })

  test('the same document and settings give the same text (change suppression relies on it)', () => {
    const document = documentOf([...range('search', 12), ...range('chat', 3)])
    expect(buildCatalogMessage(document, {})).toBe(buildCatalogMessage(structuredClone(document), {}))
  })
})

describe('buildRefreshedSceneList (appended to a 4xx)', () => {
  test('lists the scene newest first', () => {
    expect(buildRefreshedSceneList('search', range('search', 2))).toBe(
      [
        'The deployed search services of this workspace, re-read just now (use one of these ids, or tell the user none fits):',
        '- search-2: search service 2',
        '- search-1: search service 1',
      ].join('\n'),
    )
  })
  test('more than 10: says how many more and how to list them, with the install line', () => {
    const text = buildRefreshedSceneList('chat', range('chat', 13), 40)
    expect(serviceLines(text)).toHaveLength(10)
    expect(text).toContain('(and 30 more: run `bl knowledge service list --scene chat` to see them.')
    expect(text).toContain('npm install -g bailian-cli')
  })
  test('none left: do not retry with another id, how to create one', () => {
    const text = buildRefreshedSceneList('chat', [])
    expect(text).toContain('no deployed chat service at all')
    expect(text).toContain('do not retry with another id')
    expect(text).toContain('`bl knowledge service create`')
    expect(text).toContain('npm install -g bailian-cli')
  })
})

describe('sortByRecency', () => {
  test('reads ISO, "YYYY-MM-DD hh:mm:ss", and epoch seconds or milliseconds; unreadable times go last in listed order', () => {
    const entries = [
      entry('search', 1, { modifyTime: 'yesterday' }),
      entry('search', 2, { modifyTime: '2026-02-01 10:00:00' }),
      entry('search', 3, { modifyTime: String(Date.UTC(2026, 2, 1) / 1000) }),
      entry('search', 4, { modifyTime: String(Date.UTC(2026, 3, 1)) }),
      entry('search', 5, { modifyTime: undefined }),
      entry('search', 6, { modifyTime: '2026-01-15T00:00:00Z' }),
    ]
    expect(sortByRecency(entries).map((e) => e.agentId)).toEqual(['search-4', 'search-3', 'search-2', 'search-6', 'search-1', 'search-5'])
  })
})
