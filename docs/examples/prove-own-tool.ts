// Prove your own tool against every path of the turn machine: the kit scripts the model and the
// other actors, your runTool runs for real, and replay checks the machine's contract on each path.
import { fromPromise } from 'xstate'
import { type RunToolInput, type RunToolOutput, turnMachine } from 'knowagent/machines'
import { coverageOf, formatCoverage, replay, turnPaths } from 'knowagent/testing'

// Your tool: reads pages from an in-memory map instead of a workspace.
const pages = new Map([['kb://users/alice/notes/call_00001.md', '# Notes\nTurns end in done, failed or cancelled.']])

export const readFromMap = fromPromise<RunToolOutput, RunToolInput>(async ({ input, signal }) => {
  signal.throwIfAborted()
  const uri = String(input.call.arguments.uri ?? '')
  const page = pages.get(uri)
  if (page === undefined) return { ok: false, content: JSON.stringify({ error: { code: 'not_found', message: `${uri} does not exist` } }), summary: 'not found' }
  return { ok: true, content: page, summary: `read ${uri}` }
})

export async function proveTool(runTool = readFromMap) {
  const paths = turnPaths({ provided: ['runTool'] })
  const results = []
  // replay throws a ContractViolation naming the path and the broken rule
  for (const path of paths) results.push(await replay(path, { actors: { runTool } }))
  const coverage = coverageOf(turnMachine, results)
  return { paths: paths.length, diverged: results.filter((result) => result.diverged).length, coverage, report: formatCoverage(coverage) }
}
