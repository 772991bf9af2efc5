// The document parser the server uses: parsing runs in a pool of worker threads (piscina), so a
// hostile file can cost a worker but never the event loop that carries every other request.
// Each task has a memory budget (heap and ArrayBuffers, enforced in the worker), a time limit
// (the worker is terminated), a decompression budget and a text cap (enforced by the parsers).
// A worker that dies is replaced on the next task; `close` terminates them all.
import { Context, Effect, Layer } from 'effect'
import { Piscina } from 'piscina'
import { essenceOf, mimeFromName, OCTET_STREAM } from '../mime.ts'
import {
  DEFAULT_PARSE_LIMITS,
  DEFAULT_PARSE_MEMORY_MB,
  DEFAULT_PARSE_TIMEOUT_MS,
  cancelled,
  defaultParserThreads,
  failure,
  memoryLimit,
  messageOf,
  timeLimit,
  type ParseLimits,
  type ParseOutcome,
} from './parse-outcome.ts'
import { MEMORY_LIMIT_EXIT_CODE, isRunningMessage, type ParseTask, type ParseWorkerData } from './worker-protocol.ts'

export interface DocumentParserOptions {
  /** Worker threads (default: one fewer than the cores, 1 to 4). */
  readonly threads?: number | undefined
  readonly limits?: Partial<ParseLimits> | undefined
  /** Per document, from the moment a worker starts on it (default 30 s). */
  readonly timeoutMs?: number | undefined
  /** Heap plus ArrayBuffers of one worker (default 512 MB). */
  readonly memoryLimitMb?: number | undefined
  /** An idle worker exits after this long (default 30 s); the next task starts a new one. */
  readonly idleTimeoutMs?: number | undefined
  /** Starts a task's time limit; returns its cancel function. A seam for tests. */
  readonly startTimer?: ((ms: number, onTimeout: () => void) => () => void) | undefined
}

export interface ParseRequest {
  /** The file name; its extension picks the parser. */
  readonly name: string
  /** The document, or `path`: a file the worker reads itself (nothing is copied between threads). */
  readonly bytes?: Uint8Array | undefined
  readonly path?: string | undefined
  /** Declared media type, used only when the name has no known extension. */
  readonly mime?: string | undefined
  /** Aborting cancels the task: dropped from the queue, or its worker terminated. */
  readonly signal?: AbortSignal | undefined
}

export type ParserActivity =
  | { readonly type: 'queued' | 'running'; readonly id: number; readonly name: string }
  | { readonly type: 'settled'; readonly id: number; readonly name: string; readonly outcome: ParseOutcome }

export interface DocumentParser {
  /** Never rejects: every failure, limits included, is an `ok: false` outcome. */
  readonly parse: (request: ParseRequest) => Promise<ParseOutcome>
  /** Observes tasks (logs, tests); returns the unsubscribe function. */
  readonly onActivity: (listener: (activity: ParserActivity) => void) => () => void
  /** Terminates every worker; tasks still running or queued end `aborted`. */
  readonly close: () => Promise<void>
}

const MB = 1024 * 1024

const WORKER = new URL('./parse-worker.ts', import.meta.url)

const startRealTimer = (ms: number, onTimeout: () => void): (() => void) => {
  const timer = setTimeout(onTimeout, ms)
  return () => clearTimeout(timer)
}

const isMemoryFailure = (error: unknown): boolean =>
  (typeof error === 'object' && error !== null && 'code' in error && error.code === 'ERR_WORKER_OUT_OF_MEMORY') ||
  messageOf(error) === `worker exited with code: ${MEMORY_LIMIT_EXIT_CODE}`

export function makeDocumentParser(options: DocumentParserOptions = {}): DocumentParser {
  const limits: ParseLimits = { ...DEFAULT_PARSE_LIMITS, ...options.limits }
  const timeoutMs = options.timeoutMs ?? DEFAULT_PARSE_TIMEOUT_MS
  const memoryLimitMb = options.memoryLimitMb ?? DEFAULT_PARSE_MEMORY_MB
  const startTimer = options.startTimer ?? startRealTimer
  const pool = new Piscina({
    filename: WORKER.href,
    minThreads: 0,
    maxThreads: options.threads ?? defaultParserThreads(),
    idleTimeout: options.idleTimeoutMs ?? 30_000,
    concurrentTasksPerWorker: 1,
    resourceLimits: { maxOldGenerationSizeMb: memoryLimitMb },
    workerData: { memoryLimitBytes: memoryLimitMb * MB, watchdogIntervalMs: 25 } satisfies ParseWorkerData,
  })
  // A worker that fails with no task on it: the next task starts a fresh one; nothing to report.
  pool.on('error', () => undefined)
  const listeners = new Set<(activity: ParserActivity) => void>()
  const emit = (activity: ParserActivity): void => {
    for (const listener of [...listeners]) listener(activity)
  }
  const onRunning = new Map<number, () => void>()
  pool.on('message', (message: unknown) => {
    if (isRunningMessage(message)) onRunning.get(message.id)?.()
  })
  let nextId = 0
  let closed = false

  const run = async (request: ParseRequest, id: number, mime: string): Promise<ParseOutcome> => {
    if (closed) return cancelled(mime, 'parsing was cancelled: the parser is shut down')
    if (request.signal?.aborted === true) return cancelled(mime)
    const controller = new AbortController()
    let timedOut = false
    let cancelTimer = (): void => undefined
    onRunning.set(id, () => {
      cancelTimer = startTimer(timeoutMs, () => {
        timedOut = true
        controller.abort()
      })
      emit({ type: 'running', id, name: request.name })
    })
    let callerAborted = false
    const forward = (): void => {
      callerAborted = true
      controller.abort()
    }
    request.signal?.addEventListener('abort', forward, { once: true })
    const task: ParseTask = { id, name: request.name, mime: request.mime, bytes: request.bytes, path: request.path, limits }
    emit({ type: 'queued', id, name: request.name })
    try {
      return (await pool.run(task, { signal: controller.signal })) as ParseOutcome
    } catch (error) {
      if (timedOut) return timeLimit(mime, Math.round(timeoutMs / 100) / 10)
      if (closed) return cancelled(mime, 'parsing was cancelled: the parser is shut down')
      if (callerAborted) return cancelled(mime)
      if (isMemoryFailure(error)) return memoryLimit(mime, memoryLimitMb)
      return failure(mime, 'parser_failed', `the parser failed unexpectedly: ${messageOf(error)}`)
    } finally {
      cancelTimer()
      onRunning.delete(id)
      request.signal?.removeEventListener('abort', forward)
    }
  }

  return {
    parse: async (request) => {
      const id = ++nextId
      const byName = mimeFromName(request.name)
      const mime = byName !== OCTET_STREAM ? byName : essenceOf(request.mime ?? '') || OCTET_STREAM
      const outcome = await run(request, id, mime)
      emit({ type: 'settled', id, name: request.name, outcome })
      return outcome
    },
    onActivity: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    close: async () => {
      closed = true
      await pool.destroy()
    },
  }
}

/** The parser as an Effect service: the pool is created with the layer and closed on release. */
export class DocumentParserService extends Context.Service<DocumentParserService, DocumentParser>()('knowagent/workspace/DocumentParser') {
  static readonly layer = (options: DocumentParserOptions = {}): Layer.Layer<DocumentParserService> =>
    Layer.effect(
      DocumentParserService,
      Effect.acquireRelease(
        Effect.sync(() => makeDocumentParser(options)),
        (parser) => Effect.promise(() => parser.close()),
      ),
    )

  /** A parser that answers with `parse`, and fails loudly when a test did not expect a parse. */
  static readonly layerTest = (parse?: DocumentParser['parse']): Layer.Layer<DocumentParserService> =>
    Layer.succeed(DocumentParserService, {
      parse:
        parse ??
        ((request) => {
          throw new Error(`DocumentParserService.layerTest: unexpected parse of ${request.name}`)
        }),
      onActivity: () => () => undefined,
      close: async () => undefined,
    })
}
