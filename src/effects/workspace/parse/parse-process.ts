// The child-process side of document-parser.ts: one document at a time, sent over the IPC
// channel. A parser runs here, not in a thread of the server, because V8 ends a whole process
// when one native step (JSON.parse, a huge string join) allocates past the heap limit: in a
// worker thread that process would be the server. `--max-old-space-size` (set by the parent)
// bounds the heap; the watchdog below also bounds the memory behind ArrayBuffers, which is where
// decompressed data lives. Every parser yields to the event loop while it works (pdf.js between
// operators, mammoth between zip and XML steps), so the watchdog gets its turn.
import { readFile, stat } from 'node:fs/promises'
import { mimeFromName } from '../mime.ts'
import { parseDocument } from './parse-document.ts'
import { failure, inputTooLarge, messageOf, type ParseOutcome } from './parse-outcome.ts'
import { MEMORY_LIMIT_EXIT_CODE, isParseTask, type ParseProcessMessage, type ParseTask } from './worker-protocol.ts'

const readDocument = async (task: ParseTask): Promise<Uint8Array | ParseOutcome> => {
  if (task.bytes !== undefined) return task.bytes
  if (task.path === undefined) throw new Error('a parse task needs bytes or a path')
  const { size } = await stat(task.path)
  if (size > task.limits.maxBytes) return inputTooLarge(mimeFromName(task.name), size, task.limits.maxBytes)
  return new Uint8Array(await readFile(task.path))
}

const parseTask = async (task: ParseTask): Promise<ParseOutcome> => {
  try {
    const bytes = await readDocument(task)
    if (!(bytes instanceof Uint8Array)) return bytes
    return await parseDocument({ name: task.name, mime: task.mime, bytes, limits: task.limits })
  } catch (error) {
    return failure(task.mime ?? mimeFromName(task.name), 'parser_failed', `the parser failed unexpectedly: ${messageOf(error)}`)
  }
}

const send = process.send?.bind(process)
if (send === undefined) {
  process.stderr.write('parse-process.ts is started by the document parser (document-parser.ts), with an IPC channel\n')
  process.exit(2)
}
const memoryLimitBytes = Number(process.argv[2])
if (Number.isFinite(memoryLimitBytes) && memoryLimitBytes > 0) {
  setInterval(() => {
    const { heapUsed, external } = process.memoryUsage()
    if (heapUsed + external > memoryLimitBytes) process.exit(MEMORY_LIMIT_EXIT_CODE)
  }, 25).unref()
}
// The server went away (or let this process go): nothing is left to do.
process.on('disconnect', () => process.exit(0))
process.on('message', (message: unknown) => {
  if (!isParseTask(message)) return
  send({ type: 'knowagent.parse.running', id: message.id } satisfies ParseProcessMessage)
  void parseTask(message).then((outcome) => send({ type: 'knowagent.parse.result', id: message.id, outcome } satisfies ParseProcessMessage))
})
