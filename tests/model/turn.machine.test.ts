// Model-based tests of the turn machine, through the kit (`knowagent/testing`): every simple path
// of its graph (per input profile) is replayed against the real machine, the real bridge
// (`fromEffect`) and the real model adapter, with the scripted model and actors reporting the
// outcomes the path prescribes; `replay` checks the states passed and the machine's contract.
// Together the replays must reach every state node and take every transition.
import { describe, expect, it } from 'vitest'
import { turnMachine } from '../../src/machines/index.ts'
import { coverageOf, formatCoverage, type Reached, replay, TURN_PROFILES, turnPaths } from '../../src/testing/index.ts'

const reached: Reached[] = []

describe.each(TURN_PROFILES.map((profile) => [profile.name, profile] as const))('%s', (_, profile) => {
  const paths = turnPaths({ profiles: [profile] })

  it('has paths to a final state', () => {
    expect(paths.length).toBeGreaterThan(0)
  })

  it.each(paths.map((path) => [path.name.slice(profile.name.length + 2), path] as const))('%s', async (_, path) => {
    const result = await replay(path)
    expect(result.diverged).toBeUndefined()
    expect(result.output.status).toBe(path.finalState.output?.status)
    reached.push(result)
  })
})

describe('coverage of the machine definition', () => {
  it('reaches every state node and takes every transition', () => {
    const report = coverageOf(turnMachine, reached)
    expect(report.transitions.total).toBeGreaterThan(30)
    expect(report.stateNodes.reached).toBeGreaterThan(0)
    expect(report.complete, formatCoverage(report)).toBe(true)
  })
})
