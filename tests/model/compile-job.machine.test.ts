// Model-based tests of the compile job machine, through the kit (`knowagent/testing`): every simple
// path of its graph (per input profile) is replayed against the real machine and the real bridge
// (`fromEffect`), with scripted actors reporting the outcomes the path prescribes and a simulated
// clock for the attempt's timeout; `replay` checks the states passed and the machine's contract.
// Together the replays must reach every state node and take every transition.
import { describe, expect, it } from 'vitest'
import { compileJobMachine } from '../../src/machines/index.ts'
import { COMPILE_JOB_PROFILES, type CompileJobPath, compileJobPaths, coverageOf, formatCoverage, replay } from '../../src/testing/index.ts'
import { replayOnce } from '../support/replay-once.ts'

const replayed = replayOnce((path: CompileJobPath) => replay(path))
const PATHS = new Map(COMPILE_JOB_PROFILES.map((profile) => [profile, compileJobPaths({ profiles: [profile] })]))

describe.each(COMPILE_JOB_PROFILES.map((profile) => [profile.name, profile] as const))('%s', (_, profile) => {
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
    const report = coverageOf(compileJobMachine, await Promise.all([...PATHS.values()].flat().map(replayed)))
    expect(report.transitions.total).toBeGreaterThan(30)
    expect(report.complete, formatCoverage(report)).toBe(true)
  })
})
