// The document parser the server uses: parsing runs in a small pool of child processes, so a
// hostile file can cost a parser process but never the server: not its event loop, and not the
// process itself (a worker thread would share it, and V8 ends the whole process when a single
// native step allocates past the heap limit). Each task has a memory budget (heap, by
// `--max-old-space-size`, and ArrayBuffers, by the child's watchdog), a time limit (the child is
// killed), a decompression budget and a text cap (enforced by the parsers). A child that dies is
// replaced on the next task; an idle one exits; `close` kills them all and waits for their exit.
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import { PROJECT_ROOT_URL } from '../../../project-root.ts'
import { essenceOf, mimeFromName, OCTET_STREAM } from '../mime.ts'
import {
  DEFAULT_PARSE_LIMITS,
  DEFAULT_PARSE_MEMORY_MB,
  DEFAULT_PARSE_TIMEOUT_MS,
  cancelled,
  defaultParserProcesses,
  failure,
  memoryLimit,
  timeLimit,
  type ParseLimits,
  type ParseOutcome,
} from './parse-outcome.ts'
import { MEMORY_LIMIT_EXIT_CODE, isParseProcessMessage, type ParseTask } from './worker-protocol.ts'

export interface DocumentParserOptions {
  /** Parser child processes at most (default: one fewer than the cores, 1 to 4). */
  readonly processes?: number | undefined
  readonly limits?: Partial<ParseLimits> | undefined
  /** Per document, from the moment a parser process starts on it (default 30 s). */
  readonly timeoutMs?: number | undefined
  /** Heap plus ArrayBuffers of one parser process (default 512 MB). */
  readonly memoryLimitMb?: number | undefined
  /** An idle parser process exits after this long (default 30 s); the next task starts a new one. */
  readonly idleTimeoutMs?: number | undefined
  /** Starts a task's time limit; returns its cancel function. A seam for tests. */
  readonly startTimer?: ((ms: number, onTimeout: () => void) => () => void) | undefined
  /** The child's entry module (default parse-process.ts). A seam for tests of the pool itself. */
  readonly entry?: URL | undefined
}

export interface ParseRequest {
  /** The file name; its extension picks the parser. */
  readonly name: string
  /** The document, or `path`: a file the parser process reads itself (nothing goes through the pipe). */
  readonly bytes?: Uint8Array | undefined
  readonly path?: string | undefined
  /** Declared media type, used only when the name has no known extension. */
  readonly mime?: string | undefined
  /** Aborting cancels the task: dropped from the queue, or its parser process killed. */
  readonly signal?: AbortSignal | undefined
}

export type ParserActivity =
  | { readonly type: 'queued' | 'running'; readonly id: number; readonly name: string }
  | { readonly type: 'settled'; readonly id: number; readonly name: string; readonly outcome: ParseOutcome }
  | { readonly type: 'process'; readonly pid: number; readonly state: 'started' | 'exited' }

export interface DocumentParser {
  /** Never rejects: every failure, limits included, is an `ok: false` outcome. */
  readonly parse: (request: ParseRequest) => Promise<ParseOutcome>
  /** Observes tasks and parser processes (logs, tests); returns the unsubscribe function. */
  readonly onActivity: (listener: (activity: ParserActivity) => void) => () => void
  /** Kills every parser process and waits for their exit; tasks still running or queued end `aborted`. */
  readonly close: () => Promise<void>
}

const MB = 1024 * 1024

const ENTRY = new URL('src/effects/workspace/parse/parse-process.ts', PROJECT_ROOT_URL)

const startRealTimer = (ms: number, onTimeout: () => void): (() => void) => {
  const timer = setTimeout(onTimeout, ms)
  return () => clearTimeout(timer)
}

/** How a task ended, as the pool saw it. */
type Ended =
  | { readonly type: 'outcome'; readonly outcome: ParseOutcome }
  | { readonly type: 'exit'; readonly code: number | null; readonly signal: NodeJS.Signals | null }
  | { readonly type: 'aborted' }

interface Job {
  readonly task: ParseTask
  readonly onRunning: () => void
  readonly end: (ended: Ended) => void
}

interface Slot {
  readonly child: ChildProcess
  readonly exited: Promise<void>
  job?: Job | undefined
  killedByPool?: boolean
  idleTimer?: ReturnType<typeof setTimeout> | undefined
}

/** A parser process that ran out of memory: its watchdog's exit code, or V8's abort on a full heap. */
const isMemoryExit = (ended: Extract<Ended, { type: 'exit' }>): boolean =>
  ended.code === MEMORY_LIMIT_EXIT_CODE || ended.signal === 'SIGABRT' || ended.code === 134

export function makeDocumentParser(options: DocumentParserOptions = {}): DocumentParser {
  const limits: ParseLimits = { ...DEFAULT_PARSE_LIMITS, ...options.limits }
  const timeoutMs = options.timeoutMs ?? DEFAULT_PARSE_TIMEOUT_MS
  const memoryLimitMb = options.memoryLimitMb ?? DEFAULT_PARSE_MEMORY_MB
  const maxProcesses = Math.max(1, options.processes ?? defaultParserProcesses())
  const idleTimeoutMs = options.idleTimeoutMs ?? 30_000
  const startTimer = options.startTimer ?? startRealTimer
  const entry = options.entry ?? ENTRY
  const listeners = new Set<(activity: ParserActivity) => void>()
  const emit = (activity: ParserActivity): void => {
    for (const listener of [...listeners]) listener(activity)
  }
  const slots = new Set<Slot>()
  const queue: Job[] = []
  let nextId = 0
  let closed = false

  const kill = (slot: Slot): void => {
    slot.killedByPool = true
    clearTimeout(slot.idleTimer)
    slot.child.kill('SIGKILL')
  }

  const startProcess = (): Slot => {
    const child = fork(fileURLToPath(entry), [String(memoryLimitMb * MB)], {
      // Only what a parser needs: no secrets from the server's environment, no loader flags.
      execArgv: [`--max-old-space-size=${memoryLimitMb}`],
      env: { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8', NODE_OPTIONS: '' },
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    })
    let markExited = (): void => undefined
    const slot: Slot = { child, exited: new Promise((resolve) => (markExited = resolve)) }
    let gone = false
    /** Once: on 'exit', or on an 'error' of a child that never started (Node may send no 'exit' then). */
    const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (gone) return
      gone = true
      slots.delete(slot)
      clearTimeout(slot.idleTimer)
      if (child.pid !== undefined) emit({ type: 'process', pid: child.pid, state: 'exited' })
      markExited()
      const job = slot.job
      slot.job = undefined
      job?.end({ type: 'exit', code, signal })
      pump()
    }
    child.once('exit', finish)
    child.on('error', () => {
      if (child.pid === undefined) finish(null, null) // it never started
      else kill(slot) // a message could not be sent: 'exit' follows
    })
    child.on('message', (message: unknown) => {
      if (!isParseProcessMessage(message) || slot.job?.task.id !== message.id) return
      if (message.type === 'knowagent.parse.running') return slot.job.onRunning()
      const job = slot.job
      slot.job = undefined
      idle(slot)
      job.end({ type: 'outcome', outcome: message.outcome })
      pump()
    })
    slots.add(slot)
    if (child.pid !== undefined) emit({ type: 'process', pid: child.pid, state: 'started' })
    return slot
  }

  /** An idle child does not keep the server's event loop alive, and exits after idleTimeoutMs. */
  const idle = (slot: Slot): void => {
    slot.child.unref()
    slot.child.channel?.unref()
    clearTimeout(slot.idleTimer)
    slot.idleTimer = setTimeout(() => kill(slot), idleTimeoutMs)
    slot.idleTimer.unref()
  }

  const assign = (slot: Slot, job: Job): void => {
    clearTimeout(slot.idleTimer)
    slot.job = job
    slot.child.ref()
    slot.child.channel?.ref()
    // A child that died a moment ago (its 'exit' not yet delivered) refuses the message, at once
    // or in the callback: it is killed, and its 'exit' ends the job as a parser failure.
    try {
      slot.child.send(job.task, (error) => {
        if (error !== null && slot.job === job) kill(slot)
      })
    } catch {
      kill(slot)
    }
  }

  const pump = (): void => {
    while (!closed && queue.length > 0) {
      const free = [...slots].find((slot) => slot.job === undefined && slot.killedByPool !== true)
      const slot = free ?? (slots.size < maxProcesses ? startProcess() : undefined)
      if (slot === undefined) return
      assign(slot, queue.shift()!)
    }
  }

  const run = (request: ParseRequest, id: number, mime: string): Promise<ParseOutcome> => {
    if (closed) return Promise.resolve(cancelled(mime, 'parsing was cancelled: the parser is shut down'))
    if (request.signal?.aborted === true) return Promise.resolve(cancelled(mime))
    return new Promise<ParseOutcome>((resolve) => {
      let timedOut = false
      let callerAborted = false
      let cancelTimer = (): void => undefined
      let done = false
      const job: Job = {
        task: { id, name: request.name, mime: request.mime, bytes: request.bytes, path: request.path, limits },
        onRunning: () => {
          cancelTimer = startTimer(timeoutMs, () => {
            timedOut = true
            stop()
          })
          emit({ type: 'running', id, name: request.name })
        },
        end: (ended) => {
          if (done) return
          done = true
          cancelTimer()
          request.signal?.removeEventListener('abort', forward)
          resolve(outcomeOf(ended))
        },
      }
      const outcomeOf = (ended: Ended): ParseOutcome => {
        if (ended.type === 'outcome' && !timedOut && !callerAborted) return ended.outcome
        if (timedOut) return timeLimit(mime, Math.round(timeoutMs / 100) / 10)
        if (closed) return cancelled(mime, 'parsing was cancelled: the parser is shut down')
        if (callerAborted || ended.type === 'aborted') return cancelled(mime)
        if (ended.type === 'exit' && isMemoryExit(ended)) return memoryLimit(mime, memoryLimitMb)
        const how =
          ended.type !== 'exit'
            ? 'failed'
            : ended.signal !== null
              ? `was killed by ${ended.signal}`
              : ended.code !== null
                ? `exited with code ${ended.code}`
                : 'could not be started'
        return failure(mime, 'parser_failed', `the parser failed unexpectedly: its process ${how}`)
      }
      /** Ends the job now: dropped from the queue, or its process killed. */
      const stop = (): void => {
        const queued = queue.indexOf(job)
        if (queued !== -1) queue.splice(queued, 1)
        const slot = [...slots].find((candidate) => candidate.job === job)
        if (slot !== undefined) {
          slot.job = undefined
          kill(slot)
        }
        job.end({ type: 'aborted' })
      }
      const forward = (): void => {
        callerAborted = true
        stop()
      }
      request.signal?.addEventListener('abort', forward, { once: true })
      emit({ type: 'queued', id, name: request.name })
      queue.push(job)
      pump()
    })
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
      for (const job of queue.splice(0)) job.end({ type: 'aborted' })
      const exits = [...slots].map((slot) => {
        const job = slot.job
        slot.job = undefined
        kill(slot)
        job?.end({ type: 'aborted' })
        return slot.exited
      })
      await Promise.all(exits)
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
