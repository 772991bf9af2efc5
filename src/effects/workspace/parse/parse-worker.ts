// The worker-thread side of document-parser.ts (a piscina task module): one document per task.
// V8 bounds this thread's heap (`resourceLimits`), but not the memory behind ArrayBuffers,
// which is where decompressed data lives; the watchdog below bounds both together. Every parser
// here yields to the event loop while it works (pdf.js between operators, mammoth between zip
// and XML steps), so the watchdog gets its turn.
import { readFile, stat } from 'node:fs/promises'
import { parentPort, workerData } from 'node:worker_threads'
import { mimeFromName } from '../mime.ts'
import { parseDocument } from './parse-document.ts'
import { inputTooLarge, type ParseOutcome } from './parse-outcome.ts'
import { MEMORY_LIMIT_EXIT_CODE, type ParseTask, type ParseWorkerData, type RunningMessage } from './worker-protocol.ts'

const data = workerData as ParseWorkerData | undefined
if (data !== undefined && parentPort !== null) {
  setInterval(() => {
    const { heapUsed, external } = process.memoryUsage()
    if (heapUsed + external > data.memoryLimitBytes) process.exit(MEMORY_LIMIT_EXIT_CODE)
  }, data.watchdogIntervalMs).unref()
}

const readDocument = async (task: ParseTask): Promise<Uint8Array | ParseOutcome> => {
  if (task.bytes !== undefined) return task.bytes
  if (task.path === undefined) throw new Error('a parse task needs bytes or a path')
  const { size } = await stat(task.path)
  if (size > task.limits.maxBytes) return inputTooLarge(mimeFromName(task.name), size, task.limits.maxBytes)
  return new Uint8Array(await readFile(task.path))
}

export default async function parseTask(task: ParseTask): Promise<ParseOutcome> {
  parentPort?.postMessage({ type: 'knowagent.parse.running', id: task.id } satisfies RunningMessage)
  const bytes = await readDocument(task)
  if (!(bytes instanceof Uint8Array)) return bytes
  return parseDocument({ name: task.name, mime: task.mime, bytes, limits: task.limits })
}
