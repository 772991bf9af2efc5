// A tool is one object (vercel/ai `tool()`): name, static description, argument Schema (its JSON
// Schema is derived, never written twice), run, and a one-line summary for people. The turn, the
// command endpoint, the UI and any other face read the same definitions through the registry.
import * as Data from 'effect/Data'
import type * as Effect from 'effect/Effect'
import * as Schema from 'effect/Schema'
import type { ToolSchema } from '../../machines/index.ts'
import type { Db, Owner } from '../db/schema.ts'
import type { WorkspacePath } from '../workspace/uri.ts'
import type { WorkspaceError } from '../workspace/workspace-errors.ts'

/** What a tool may touch: the caller's workspace, within the selected node. */
export interface ToolContext {
  readonly db: Db
  readonly caller: Owner
  /** The selected node: every target must be it or lie below it. */
  readonly scope: WorkspacePath
  /** Progress text for the tool card while a long tool runs (a `tool` event with phase `progress`). */
  readonly progress: (text: string) => void
}

/**
 * An expected tool failure. It goes back to the model as `{"error": {code, message}}`; `code` is
 * public (docs/api.md) and `status` is its HTTP face when the tool runs as an explicit command.
 */
export class ToolError extends Data.TaggedError('ToolError')<{
  readonly code: string
  readonly message: string
  readonly status: number
}> {
  static invalidArguments(message: string): ToolError {
    return new ToolError({ code: 'invalid_arguments', status: 400, message })
  }
}

/** Every failure a tool's `run` may report as data. */
export type ToolFailure = ToolError | WorkspaceError

// `any` in the Schema slot: definitions of different argument types live in one registry.
// biome-ignore lint: the registry is heterogeneous by design
type AnyArgsSchema = Schema.Codec<any, any, never, never>

export interface ToolDefinition<Args = unknown, Result = unknown> {
  readonly name: string
  /** Static: never carries dynamic content (no ids, no catalog). */
  readonly description: string
  /** Decoded strictly (unknown properties refused); the model sees the JSON Schema derived from it. */
  readonly args: Schema.Codec<Args, unknown, never, never>
  readonly run: (args: Args, context: ToolContext) => Effect.Effect<Result, ToolFailure>
  readonly summarise: (result: Result) => string
  /** Also runnable by people and programs as an explicit command (`/name`, `POST command`). */
  readonly command?: boolean | undefined
}

// biome-ignore lint: see AnyArgsSchema
export type AnyToolDefinition = ToolDefinition<any, any>

/** Declares a tool; the argument type comes from its Schema. */
export function defineTool<S extends AnyArgsSchema, Result>(definition: {
  readonly name: string
  readonly description: string
  readonly args: S
  readonly run: (args: S['Type'], context: ToolContext) => Effect.Effect<Result, ToolFailure>
  readonly summarise: (result: Result) => string
  readonly command?: boolean | undefined
}): ToolDefinition<S['Type'], Result> {
  return definition as ToolDefinition<S['Type'], Result>
}

/** The OpenAI function-tool schema of a definition, derived from its argument Schema. */
export function toToolSchema(definition: AnyToolDefinition): ToolSchema {
  const { schema } = Schema.toJsonSchemaDocument(definition.args, { onExcessProperty: 'error' })
  return {
    type: 'function',
    function: { name: definition.name, description: definition.description, parameters: withoutSafeIntegerBounds(schema) },
  }
}

/**
 * Schema's `Int` carries ±(2^53−1) bounds into JSON Schema; they say nothing to a model and cost
 * context on every request, so they are dropped (the decoder still enforces them).
 */
function withoutSafeIntegerBounds(node: unknown): Record<string, unknown> {
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk)
    if (value === null || typeof value !== 'object') return value
    const out: Record<string, unknown> = {}
    for (const [key, child] of Object.entries(value)) {
      if ((key === 'maximum' && child === Number.MAX_SAFE_INTEGER) || (key === 'minimum' && child === Number.MIN_SAFE_INTEGER)) continue
      out[key] = walk(child)
    }
    return out
  }
  return walk(node) as Record<string, unknown>
}
