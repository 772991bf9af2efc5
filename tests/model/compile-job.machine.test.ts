// Model-based tests of the compile job machine, through the kit (`knowagent/testing`): every simple
// path of its graph (per input profile) is replayed against the real machine and the real bridge
// (`fromEffect`), with scripted actors reporting the outcomes the path prescribes and a simulated
// clock for the attempt's timeout; `replay` checks the states passed and the machine's contract.
// Together the replays must reach every state node and take every transition.
import { describe, expect, it } from 'vitest'
import { compileJobMachine } from '../../src/machines/index.ts'
import { COMPILE_JOB_PROFILES, compileJobPaths, coverageOf, formatCoverage, type Reached, replay } from '../../src/testing/index.ts'

const reached: Reached[] = []

describe.each(COMPILE_JOB_PROFILES.map((profile) => [profile.name, profile] as const))('%s', (_, profile) => {
  const paths = compileJobPaths({ profiles: [profile] })

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
    const report = coverageOf(compileJobMachine, reached)
    expect(report.transitions.total).toBeGreaterThan(30)
    expect(report.complete, formatCoverage(report)).toBe(true)
  })
})
