// Model-based tests of the turn machine, through the kit (`knowagent/testing`): every simple path
// of its graph (per input profile) is replayed against the real machine, the real bridge
// (`fromEffect`) and the real model adapter, with the scripted model and actors reporting the
// outcomes the path prescribes; `replay` checks the states passed and the machine's contract.
// Together the replays must reach every state node and take every transition.
import { describe, expect, it } from 'vitest'
import { turnMachine } from '../../src/machines/index.ts'
import { coverageOf, formatCoverage, replay, TURN_PROFILES, type TurnPath, turnPaths } from '../../src/testing/index.ts'
import { replayOnce } from '../support/replay-once.ts'

const replayed = replayOnce((path: TurnPath) => replay(path))
const PATHS = new Map(TURN_PROFILES.map((profile) => [profile, turnPaths({ profiles: [profile] })]))

describe.each(TURN_PROFILES.map((profile) => [profile.name, profile] as const))('%s', (_, profile) => {
  const paths = PATHS.get(profile)!

  it('has paths to a final state', () => {
    expect(paths.length).toBeGreaterThan(0)
  })

  it.each(paths.map((path) => [path.name.slice(profile.name.length + 2), path] as const))('%s', async (_, path) => {
    const result = await replayed(path)
    expect(result.diverged).toBeUndefined()
    expect(result.output.status).toBe(path.finalState.output?.status)
  })
})

describe('coverage of the machine definition', () => {
  it('reaches every state node and takes every transition', async () => {
    const report = coverageOf(turnMachine, await Promise.all([...PATHS.values()].flat().map(replayed)))
    expect(report.transitions.total).toBeGreaterThan(30)
    expect(report.stateNodes.reached).toBeGreaterThan(0)
    expect(report.complete, formatCoverage(report)).toBe(true)
  })
})
