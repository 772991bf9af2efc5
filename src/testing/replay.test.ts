// replay catches broken provided actors, with the path and the rule in its message, and passes
// actors that keep the contract; a path the machine does not follow is refused.
import { afterEach, describe, expect, it } from 'vitest'
import { fromPromise } from 'xstate'
import type { ParseInput, ParseOutput, RunToolInput, RunToolOutput } from '../machines/index.ts'
import { compileJobPaths } from './compile-job-paths.ts'
import { catalogRefreshPaths } from './catalog-refresh-paths.ts'
import { ContractViolation } from './path-runner.ts'
import { isActorOutcome } from './paths.ts'
import { replay } from './replay.ts'
import { TURN_PROFILES, turnPaths } from './turn-paths.ts'

const timers: Array<ReturnType<typeof setTimeout>> = []
afterEach(() => {
  for (const timer of timers.splice(0)) clearTimeout(timer)
})

/** A slow tool that waits for a timer; `honoursAbort` decides whether a stop clears it. */
function slowTool({ honoursAbort }: { honoursAbort: boolean }) {
  return fromPromise<RunToolOutput, RunToolInput>(
    ({ signal }) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve({ ok: true, content: 'late', summary: 'late' }), 60_000)
        timers.push(timer)
        if (honoursAbort) {
          signal.addEventListener('abort', () => {
            clearTimeout(timer)
            reject(signal.reason)
          })
        }
      }),
  )
}

const oneStep = TURN_PROFILES.find((profile) => profile.name === 'one model step')!
const runToolPaths = turnPaths({ profiles: [oneStep], provided: ['runTool'] })
const stoppedDuringTool = runToolPaths.find(
  (path) => path.events.at(-1)?.type === 'user.stop' && JSON.parse(path.states.at(-2)!).value?.runningTools === 'executing',
)!
const toolAnswered = runToolPaths.find((path) => path.events.some((event) => event.label === 'provided'))!

async function violationOf(run: Promise<unknown>): Promise<ContractViolation> {
  const error = await run.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error).toBeInstanceOf(ContractViolation)
  return error as ContractViolation
}

describe('replay with provided actors', () => {
  it('catches a runTool that drops its result', async () => {
    const pages = new Map<string, string>()
    // a page or nothing: a missing page gets no result at all
    const dropsMissing = fromPromise<RunToolOutput | undefined, RunToolInput>(async ({ input }) => {
      const page = pages.get(String(input.call.arguments.uri))
      return page === undefined ? undefined : { ok: true, content: page, summary: 'read' }
    })
    const violation = await violationOf(replay(toolAnswered, { actors: { runTool: dropsMissing } }))
    expect(violation.rule).toBe('every tool call has exactly one result')
    expect(violation.path).toBe(toolAnswered.name)
    expect(violation.message).toContain(toolAnswered.name)
    expect(violation.message).toMatch(/runTool answered call call_\d+ \(read\) with undefined/)
  })

  it('catches a runTool that ignores its abort signal when the turn is cancelled', async () => {
    expect(stoppedDuringTool).toBeDefined()
    const violation = await violationOf(replay(stoppedDuringTool, { actors: { runTool: slowTool({ honoursAbort: false }) } }))
    expect(violation.rule).toBe('cancel releases every actor')
    expect(violation.message).toContain(stoppedDuringTool.name)
    expect(violation.detail).toMatch(/runTool still holds .*1 Timeout/)
  })

  it('passes the same slow runTool when it lets go on abort', async () => {
    const result = await replay(stoppedDuringTool, { actors: { runTool: slowTool({ honoursAbort: true }) } })
    expect(result.output.status).toBe('cancelled')
    expect(result.diverged).toBeUndefined()
  })

  it('catches a compile job parse step that ignores its abort signal on every cancel during parsing', async () => {
    const stopsDuringParse = compileJobPaths({ provided: ['parse'] }).filter(
      (path) => !isActorOutcome(path.events.at(-1)!) && JSON.parse(path.states.at(-2)!).value?.running === 'parsing',
    )
    expect(stopsDuringParse.length).toBeGreaterThan(0)
    const ignoresAbort = fromPromise<ParseOutput, ParseInput>(
      () =>
        new Promise((resolve) => {
          timers.push(setTimeout(() => resolve({ ok: true, files: [] }), 60_000))
        }),
    )
    for (const path of stopsDuringParse) {
      const violation = await violationOf(replay(path, { actors: { parse: ignoresAbort } }))
      expect(violation.rule).toBe('cancel releases every actor')
      expect(violation.path).toBe(path.name)
    }
  })

  it('passes a catalog fetch that keeps the contract on every path', async () => {
    const fetchCatalog = fromPromise(async () => ({ ok: true as const, at: 50_000_000 }))
    const paths = catalogRefreshPaths({ provided: ['fetchCatalog'] })
    expect(paths.length).toBeGreaterThan(5)
    for (const path of paths) await replay(path, { actors: { fetchCatalog } })
  })
})

describe('replay without provided actors', () => {
  it('refuses a path the machine does not follow', async () => {
    const [path] = turnPaths({ profiles: [oneStep] }).filter((one) => one.events.length > 3)
    // the path claims the machine compacts before its first model step
    const tampered = { ...path!, states: path!.states.map((state, index) => (index === 1 ? JSON.stringify({ ...JSON.parse(state), value: 'compacting' }) : state)) }
    expect(tampered.states).not.toEqual(path!.states)
    const violation = await violationOf(replay(tampered))
    expect(violation.rule).toBe('follows the path')
    expect(violation.message).toContain(path!.name)
  })
})
