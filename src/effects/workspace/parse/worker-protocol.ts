// What passes between document-parser.ts (main thread) and parse-worker.ts (a worker thread).
// Kept apart so the main thread never loads the parsers themselves.
import type { ParseLimits } from './parse-outcome.ts'

export interface ParseTask {
  readonly id: number
  readonly name: string
  readonly mime?: string | undefined
  /** The document, or the path of a file holding it (read in the worker, so it is never copied between threads). */
  readonly bytes?: Uint8Array | undefined
  readonly path?: string | undefined
  readonly limits: ParseLimits
}

export interface ParseWorkerData {
  readonly memoryLimitBytes: number
  readonly watchdogIntervalMs: number
}

/** Exit code of a worker stopped by its memory watchdog. */
export const MEMORY_LIMIT_EXIT_CODE = 86

/** Posted when a task starts running (its time limit starts then, not while it waits in the queue). */
export interface RunningMessage {
  readonly type: 'knowagent.parse.running'
  readonly id: number
}

export const isRunningMessage = (message: unknown): message is RunningMessage =>
  typeof message === 'object' && message !== null && 'type' in message && message.type === 'knowagent.parse.running'
