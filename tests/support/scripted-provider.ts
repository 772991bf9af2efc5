// The scripted provider lives in the kit (src/testing/, `knowagent/testing`); this module adds the
// project's transcript corpus (tests/fixtures/transcripts/) on top of it.
import { readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ModelConfig } from '../../src/effects/llm/model-config.ts'
import { type ProviderScript, splitBytes } from '../../src/testing/scripted-provider.ts'

export * from '../../src/testing/scripted-provider.ts'

// ---------------------------------------------------------------------------------------------
// The transcript corpus (tests/fixtures/transcripts/*.json): provider quirks with their
// expected outcome. See tests/fixtures/transcripts/README.md for the format.

export type TranscriptChunk = string | { readonly hex: string; readonly delayMs?: number } | { readonly text: string; readonly delayMs?: number }

export interface Transcript {
  readonly name: string
  readonly description: string
  readonly chunks: ReadonlyArray<TranscriptChunk>
  /** How the server ends the body after the chunks. Default close. */
  readonly end?: 'close' | 'hang' | 'reset'
  /** Model config overrides (e.g. idleTimeoutMs). */
  readonly model?: Readonly<Record<string, unknown>>
  readonly expected:
    | { readonly result: Readonly<Record<string, unknown>>; readonly events: ReadonlyArray<unknown> }
    | { readonly error: Readonly<Record<string, unknown>>; readonly events: ReadonlyArray<unknown> }
}

export const TRANSCRIPTS_DIR = fileURLToPath(new URL('../fixtures/transcripts/', import.meta.url))

export function loadTranscripts(dir: string = TRANSCRIPTS_DIR): Transcript[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => ({ name: basename(file, '.json'), ...(JSON.parse(readFileSync(join(dir, file), 'utf8')) as Omit<Transcript, 'name'>) }))
}

export function transcriptChunkBytes(chunk: TranscriptChunk): Uint8Array {
  if (typeof chunk === 'string') return new TextEncoder().encode(chunk)
  if ('hex' in chunk) return Uint8Array.from(Buffer.from(chunk.hex, 'hex'))
  return new TextEncoder().encode(chunk.text)
}

/** All bytes of a transcript's body, concatenated. */
export function transcriptBytes(transcript: Transcript): Uint8Array {
  return Uint8Array.from(Buffer.concat(transcript.chunks.map((chunk) => transcriptChunkBytes(chunk))))
}

/** The transcript as a stream script, chunk boundaries as recorded (or re-cut at `splitAt`). */
export function transcriptScript(
  transcript: Transcript,
  options: { readonly splitAt?: ReadonlyArray<number>; readonly delayMs?: number } = {},
): ProviderScript {
  const chunks =
    options.splitAt === undefined
      ? transcript.chunks.map((chunk) => ({
          bytes: transcriptChunkBytes(chunk),
          delayMs: typeof chunk === 'string' ? options.delayMs : (chunk.delayMs ?? options.delayMs),
        }))
      : splitBytes(transcriptBytes(transcript), options.splitAt).map((bytes) => ({ bytes, delayMs: options.delayMs }))
  return { kind: 'stream', chunks, end: transcript.end }
}

/**
 * The model entry of a test's config file that `provider` serves: `remote` (native tool calls,
 * a 32k window, no retries) unless `overrides` say otherwise.
 */
export function scriptedModel(provider: { readonly baseUrl: string }, overrides: Partial<ModelConfig> = {}): ModelConfig {
  return { id: 'remote', name: 'Remote', profile: 'scripted', baseUrl: provider.baseUrl, model: 'm', contextWindow: 32768, maxOutputTokens: 1024, supportsNativeToolCalling: true, maxRetries: 0, ...overrides } as ModelConfig
}
