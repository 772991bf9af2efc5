// The worker-thread side of local-compile-thread.ts: the built-in local model's extractive
// summaries (pure CPU over up to 400,000 characters a step) run here, off the event loop that
// carries every request and stream. One request at a time.
import { parentPort } from 'node:worker_threads'
import type { CompileRequest } from './compile-prompts.ts'
import { compileLocally } from './local-compile.ts'

export type LocalCompileReply = { readonly id: number; readonly text: string } | { readonly id: number; readonly error: string }

if (!parentPort) throw new Error('local-compile-worker.ts runs as a worker thread of local-compile-thread.ts')
const port = parentPort
port.on('message', ({ id, request }: { id: number; request: CompileRequest }) => {
  try {
    port.postMessage({ id, text: compileLocally(request) } satisfies LocalCompileReply)
  } catch (error) {
    port.postMessage({ id, error: error instanceof Error ? error.message : String(error) } satisfies LocalCompileReply)
  }
})
