// docs/embedding.md's example must stay true: it is the file below, run here, and quoted verbatim.
import { describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { runEmbeddedTurn } from '../../docs/examples/embed-turn.ts'

describe('the embedding example', () => {
  it('runs a turn with host-provided model and tool actors', async () => {
    const { output, streamed } = await runEmbeddedTurn('What is a turn?')
    expect(output.status).toBe('done')
    expect(output.counters).toMatchObject({ modelSteps: 2, toolCalls: 1 })
    expect(streamed).toContain('A turn is "one question and its answer (turn)"')
    expect(output.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant'])
  })

  it('is quoted verbatim in docs/embedding.md and stays under 50 lines', () => {
    const source = readFileSync(new URL('../../docs/examples/embed-turn.ts', import.meta.url), 'utf8')
    const doc = readFileSync(new URL('../../docs/embedding.md', import.meta.url), 'utf8')
    expect(doc).toContain(source.trim())
    expect(source.trim().split('\n').length).toBeLessThan(50)
  })
})
