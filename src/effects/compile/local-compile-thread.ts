// The built-in local model's compile steps on a worker thread: summarising a 400,000-character
// step is seconds of CPU, and on the server's thread it stalled every page, chat stream and
// heartbeat for that long (/healthz answered after 3.9–9.2 s while two local jobs ran; found by an
// exploratory test). One thread, started on first use and ended after it idles, so it costs no
// memory while nobody compiles offline; one step at a time, in order. Aborting a running step ends
// the thread (the next step starts a new one); a queued step is dropped.
import { Worker } from 'node:worker_threads'
import { PROJECT_ROOT_URL } from '../../project-root.ts'
import type { CompileRequest } from './compile-prompts.ts'
import type { LocalCompileReply } from './local-compile-worker.ts'

export interface LocalCompiler {
  /** Rejects with the step's error, with an `AbortError` when `signal` aborts, or when the compiler is closed. */
  readonly compile: (request: CompileRequest, signal?: AbortSignal) => Promise<string>
  /** Ends the thread; steps still queued or running reject. */
  readonly close: () => Promise<void>
  /** Whether a thread is alive now (tests: started on use, ended when idle). */
  readonly threadAlive: () => boolean
}

interface Step {
  readonly id: number
  readonly request: CompileRequest
  readonly resolve: (text: string) => void
  readonly reject: (error: Error) => void
  readonly signal: AbortSignal | undefined
  readonly onAbort: () => void
}

// From the checkout's root: inside the server bundle this module's own URL is the bundle's.
const ENTRY = new URL('src/effects/compile/local-compile-worker.ts', PROJECT_ROOT_URL)

const abortError = (signal: AbortSignal | undefined): Error =>
  signal?.reason instanceof Error ? signal.reason : Object.assign(new Error('the compile step was stopped'), { name: 'AbortError' })

export function makeLocalCompileThread({
  idleTimeoutMs = 30_000,
  maxOldGenerationSizeMb = 256,
  entry = ENTRY,
}: {
  /** The thread ends after this long without a step. */
  readonly idleTimeoutMs?: number
  /** The thread's heap limit: a step over it fails, the server goes on. */
  readonly maxOldGenerationSizeMb?: number
  /** The thread's module (a seam for tests). */
  readonly entry?: URL
} = {}): LocalCompiler {
  let worker: Worker | undefined
  let running: Step | undefined
  let idleTimer: ReturnType<typeof setTimeout> | undefined
  let closed = false
  let nextId = 0
  const queue: Step[] = []

  const settle = (step: Step): void => {
    step.signal?.removeEventListener('abort', step.onAbort)
    if (running === step) running = undefined
  }

  const endThread = (): Promise<void> => {
    const ending = worker
    worker = undefined
    if (idleTimer) clearTimeout(idleTimer)
    idleTimer = undefined
    return ending ? ending.terminate().then(() => undefined) : Promise.resolve()
  }

  const startThread = (): Worker => {
    const thread = new Worker(entry, { resourceLimits: { maxOldGenerationSizeMb }, env: {}, stdout: false, stderr: false })
    thread.unref() // an idle compiler never holds the process open
    thread.on('message', (reply: LocalCompileReply) => {
      const step = running
      if (!step || step.id !== reply.id) return
      settle(step)
      if ('text' in reply) step.resolve(reply.text)
      else step.reject(new Error(reply.error))
      next()
    })
    const gone = (error: Error): void => {
      if (worker !== thread) return
      worker = undefined
      const step = running
      if (step) {
        settle(step)
        step.reject(error)
      }
      next()
    }
    thread.on('error', (error) => gone(new Error(`the local compile thread failed: ${error.message}`)))
    thread.on('exit', (code) => gone(new Error(`the local compile thread ended (exit code ${code})`)))
    return thread
  }

  const next = (): void => {
    if (running || closed) return
    const step = queue.shift()
    if (!step) {
      if (worker && !idleTimer) idleTimer = setTimeout(() => void endThread(), idleTimeoutMs).unref()
      return
    }
    if (idleTimer) clearTimeout(idleTimer)
    idleTimer = undefined
    worker ??= startThread()
    running = step
    worker.postMessage({ id: step.id, request: step.request })
  }

  return {
    compile: (request, signal) =>
      new Promise<string>((resolve, reject) => {
        if (closed) return reject(new Error('the local compiler is closed'))
        if (signal?.aborted) return reject(abortError(signal))
        const step: Step = {
          id: nextId++,
          request,
          resolve,
          reject,
          signal,
          onAbort: () => {
            settle(step)
            const queued = queue.indexOf(step)
            if (queued !== -1) queue.splice(queued, 1)
            else void endThread().then(next) // it was running: the thread is mid-step, so it goes
            reject(abortError(signal))
          },
        }
        signal?.addEventListener('abort', step.onAbort, { once: true })
        queue.push(step)
        next()
      }),
    close: async () => {
      closed = true
      const pending = [...(running ? [running] : []), ...queue.splice(0)]
      for (const step of pending) {
        settle(step)
        step.reject(new Error('the local compiler is closed'))
      }
      await endThread()
    },
    threadAlive: () => worker !== undefined,
  }
}
