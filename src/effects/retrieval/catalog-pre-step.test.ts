import { describe, expect, test } from 'vitest'
import { decideCatalogBlock } from './catalog-pre-step.ts'
import { chatProgressText } from './kb-chat.tool.ts'

describe('decideCatalogBlock', () => {
  test.each([
    ['the same content is visible → nothing', 'A', 'A', []],
    ['nothing wanted, nothing visible → nothing', undefined, undefined, []],
    ['not visible → placed', 'A', undefined, [{ source: 'retrieval-catalog', content: 'A' }]],
    ['changed → replaced', 'B', 'A', [{ source: 'retrieval-catalog', content: 'B' }]],
    ['no longer wanted → removed', undefined, 'A', [{ source: 'retrieval-catalog', content: null }]],
  ])('%s', (_name, desired, visible, changes) => {
    expect(decideCatalogBlock({ desired, visible })).toEqual(changes)
  })
})

describe('chatProgressText', () => {
  test('a line per step, the answer as it comes, nothing for the steps\' own content', () => {
    expect(chatProgressText({ type: 'step', step: 'planning' })).toBe('Planning the retrieval…\n')
    expect(chatProgressText({ type: 'step', step: 'generating' })).toBe('Writing the answer:\n')
    expect(chatProgressText({ type: 'step', step: 'odd\nstep' })).toBe('Step: odd step\n')
    expect(chatProgressText({ type: 'answer', text: 'Twenty' })).toBe('Twenty')
    expect(chatProgressText({ type: 'progress', step: 'tool_calling', text: 'search(x)' })).toBeUndefined()
  })
})
