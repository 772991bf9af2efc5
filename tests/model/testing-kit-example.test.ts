// docs/testing.md's example must stay true: it is the file below, run here, and quoted verbatim.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { proveTool } from '../../docs/examples/prove-own-tool.ts'

describe('the testing kit example', () => {
  it('proves an in-memory runTool against every path of the turn machine', async () => {
    const { paths, diverged, coverage, report } = await proveTool()
    expect(paths).toBeGreaterThan(100)
    // small outputs take some small-window paths elsewhere (no compaction): reported, still checked
    expect(diverged).toBeGreaterThan(0)
    expect(diverged).toBeLessThan(paths / 2)
    expect(coverage.stateNodes.missing).toEqual([])
    // what a tool that never crashes and never returns a big page cannot reach (context.over_limit
    // is reached by a question alone too large for its window, whatever the tool)
    expect(coverage.transitions.missing).toEqual([
      'turn.checkingContext —(always)#2',
      'turn.checkingContext —(always)#3',
      'turn.runningTools.executing —xstate.error.actor.runTool#0',
    ])
    expect(report).toContain(`turn: ${coverage.stateNodes.total}/${coverage.stateNodes.total} state nodes`)
  })

  it('is quoted verbatim in docs/testing.md and stays under 50 lines', () => {
    const source = readFileSync(new URL('../../docs/examples/prove-own-tool.ts', import.meta.url), 'utf8')
    const doc = readFileSync(new URL('../../docs/testing.md', import.meta.url), 'utf8')
    expect(doc).toContain(source.trim())
    expect(source.trim().split('\n').length).toBeLessThan(50)
  })
})
