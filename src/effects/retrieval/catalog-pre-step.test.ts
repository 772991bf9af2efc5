import { describe, expect, test } from 'vitest'
import { decideCatalogBlock, offersRetrievalTools } from './catalog-pre-step.ts'
import { createChatProgress } from './kb-chat.tool.ts'

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

describe('createChatProgress', () => {
  test('a line per phase (not per step), then the answer as it comes; the steps\' own content stays out', () => {
    const progress = createChatProgress()
    const steps = ['tool_calling', 'tool_return', 'tool_calling', 'plan_start', 'planning', 'plan_end', 'generation_start']
    const texts = [
      ...steps.map((step) => progress({ type: 'step', step })),
      progress({ type: 'progress', step: 'planning', text: 'internal plan' }),
      progress({ type: 'step', step: 'generating' }),
      progress({ type: 'answer', text: 'Twenty' }),
      progress({ type: 'answer', text: ' days.' }),
      progress({ type: 'step', step: 'generation_end' }),
      progress({ type: 'step', step: 'odd\nstep' }),
    ]
    expect(texts.filter((text) => text !== undefined).join('')).toBe(
      'Searching the knowledge base…\nPlanning…\nWriting the answer:\nTwenty days.Step: odd step\n',
    )
  })

  test('answer text without a step announced first still gets its heading', () => {
    const progress = createChatProgress()
    expect(progress({ type: 'answer', text: 'Plain' })).toBe('Writing the answer:\nPlain')
  })
})

describe('offersRetrievalTools', () => {
  test.each([
    { toolNames: [], expected: false },
    { toolNames: ['kb_ls', 'kb_read'], expected: false },
    { toolNames: ['kb_ls', 'kb_search'], expected: true },
    { toolNames: ['kb_chat'], expected: true },
  ])('$toolNames → $expected', ({ toolNames, expected }) => {
    expect(offersRetrievalTools(toolNames)).toBe(expected)
  })
})
