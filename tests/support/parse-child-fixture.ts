// A stand-in for parse-process.ts, for tests of the parser's process pool itself (the `entry`
// seam of makeDocumentParser): what the child sees, and children that die in ways a real parser can.
import type { ParseOutcome } from '../../src/effects/workspace/parse/parse-outcome.ts'

process.on('disconnect', () => process.exit(0))
process.on('message', (task: { id: number; name: string }) => {
  process.send!({ type: 'knowagent.parse.running', id: task.id })
  const reply = (text: string): void => {
    const outcome: ParseOutcome = { ok: true, mime: 'text/plain', parser: 'fixture', text }
    process.send!({ type: 'knowagent.parse.result', id: task.id, outcome })
  }
  if (task.name === 'env') return reply(JSON.stringify({ env: process.env, execArgv: process.execArgv }))
  // One native step that allocates far past the heap limit: V8 aborts the whole process.
  if (task.name === 'fatal-oom') return reply(String(JSON.parse(`[${'[1,2,3,4,5,6,7,8],'.repeat(2_000_000)}[]]`).length))
  if (task.name === 'exit-3') process.exit(3)
  reply(task.name)
})
