// What passes between document-parser.ts (the server's process) and parse-process.ts (a parser
// child process). Kept apart so the server never loads the parsers themselves.
import type { ParseLimits, ParseOutcome } from './parse-outcome.ts'

export interface ParseTask {
  readonly id: number
  readonly name: string
  readonly mime?: string | undefined
  /** The document, or the path of a file holding it (read by the child, so it is never copied through the pipe). */
  readonly bytes?: Uint8Array | undefined
  readonly path?: string | undefined
  readonly limits: ParseLimits
}

/** Exit code of a parser process stopped by its memory watchdog. */
export const MEMORY_LIMIT_EXIT_CODE = 86

/** What a parser process says: a task started (its time limit starts then, not while it waits), or its outcome. */
export type ParseProcessMessage =
  | { readonly type: 'knowagent.parse.running'; readonly id: number }
  | { readonly type: 'knowagent.parse.result'; readonly id: number; readonly outcome: ParseOutcome }

export const isParseProcessMessage = (message: unknown): message is ParseProcessMessage =>
  typeof message === 'object' &&
  message !== null &&
  'type' in message &&
  'id' in message &&
  typeof message.id === 'number' &&
  (message.type === 'knowagent.parse.running' || (message.type === 'knowagent.parse.result' && 'outcome' in message))

export const isParseTask = (message: unknown): message is ParseTask =>
  typeof message === 'object' && message !== null && 'id' in message && typeof message.id === 'number' && 'name' in message && 'limits' in message
