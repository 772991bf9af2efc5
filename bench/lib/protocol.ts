// What the benchmark's provider sends and what every client must receive: the fixed answer
// (N deltas of 8 ASCII bytes, delta k = k in base 10 padded to 7 digits + a space, so the k-th
// 8-byte slice of the received text *is* delta k), the stream-id marker carried in the prompt,
// and the tool the model calls in the tool-call variant.

export const DELTA_BYTES = 8
export const BENCH_MODEL = 'bench-model'
export const TOOL_NAME = 'ls'
export const TOOL_URI = 'kb://me/'
export const TOOL_ARGUMENTS = JSON.stringify({ uri: TOOL_URI })

export type Variant = 'text' | 'tools'
export const VARIANTS: ReadonlyArray<Variant> = ['text', 'tools']

export type SystemName = 'raw' | 'floor' | 'knowagent' | 'knowagent-observed' | 'ai-sdk'
/** Run by default; `knowagent-observed` (metrics and tracing on) on request: `--systems raw,knowagent,knowagent-observed`. */
export const SYSTEMS: ReadonlyArray<SystemName> = ['raw', 'floor', 'knowagent', 'ai-sdk']
export const ALL_SYSTEMS: ReadonlyArray<SystemName> = [...SYSTEMS, 'knowagent-observed']
/** knowagent, as it is or observed. */
export const isKnowagent = (system: SystemName): boolean => system === 'knowagent' || system === 'knowagent-observed'
/** Speaks knowagent's API (its request body and SSE events): knowagent, and the stateful floor. */
export const speaksKnowagent = (system: SystemName): boolean => isKnowagent(system) || system === 'floor'

export function deltaText(index: number): string {
  return String(index).padStart(DELTA_BYTES - 1, '0') + ' '
}

export function expectedAnswer(deltas: number): string {
  let text = ''
  for (let index = 0; index < deltas; index += 1) text += deltaText(index)
  return text
}

/** The prompt of stream `id`; the provider finds the id in whatever body the system sends. */
export function streamPrompt(id: number): string {
  return `bench-stream-${id}: answer with the fixed text`
}

const STREAM_ID = /bench-stream-(\d+)/

export function findStreamId(body: string): number | undefined {
  const match = STREAM_ID.exec(body)
  return match ? Number(match[1]) : undefined
}

/** The result the AI SDK peer's `ls` tool returns (knowagent runs its real `ls`). */
export const FAKE_LS_RESULT = {
  uri: 'kb://users/bench/',
  entries: [{ name: 'notes', kind: 'directory', uri: 'kb://users/bench/notes/' }],
  total: 1,
  next_offset: null,
} as const

/** The JSON request body that asks `system` for stream `id`. */
export function streamRequestBody(system: SystemName, id: number, variant: Variant): string {
  switch (system) {
    case 'knowagent':
    case 'knowagent-observed':
    case 'floor':
      return JSON.stringify({ uri: TOOL_URI, model_id: KNOWAGENT_MODEL_ID, message: streamPrompt(id) })
    case 'raw':
    case 'ai-sdk':
      return JSON.stringify({ id, variant })
  }
}

export const KNOWAGENT_MODEL_ID = 'bench'

/** Messages sent by child processes to the orchestrator (IPC). */
export interface SystemServer {
  /** Where the client POSTs a stream request. */
  readonly url: string
  /** Extra request headers every stream needs (an API token for knowagent). */
  readonly headers: Record<string, string>
  /** What was started, when it matters (knowagent: from the server bundle or the sources). */
  readonly note?: string | undefined
}

export type ChildMessage =
  | { readonly type: 'ready'; readonly server: SystemServer; readonly rssBytes: number; readonly startupMs: number }
  | {
      readonly type: 'stats'
      readonly id: number
      readonly rssBytes: number
      /** Peak RSS since the last `reset-peak`. */
      readonly peakRssBytes: number
      readonly peakSource: 'VmHWM' | 'sampled'
      /** process.cpuUsage() user + system, µs since the child started. */
      readonly cpuMicros: number
      /** Since the last `reset-peak`: GC pauses (PerformanceObserver 'gc') and event-loop delay. */
      readonly gcCount: number
      readonly gcTotalMs: number
      readonly gcMaxMs: number
      readonly loopDelayP99Ms: number
      readonly loopDelayMaxMs: number
      /** Database queries executed since start (knowagent only; 0 elsewhere). */
      readonly dbQueries: number
    }

/** Messages sent by the orchestrator to a child (IPC). */
export type ParentMessage =
  | { readonly type: 'reset-peak'; readonly id: number }
  | { readonly type: 'read-stats'; readonly id: number }
  /** Start the V8 CPU profiler (node:inspector) for the next phase. */
  | { readonly type: 'profile-start'; readonly id: number }
  /** Stop it and write the profile (Chrome DevTools format) to `path`. */
  | { readonly type: 'profile-stop'; readonly id: number; readonly path: string }
