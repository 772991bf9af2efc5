// The registry of tool definitions: the schemas the model sees, the names the command endpoint
// and the UI offer, and one `run` that decodes arguments, runs the tool and turns every expected
// failure into a tool error the model can read. Built once in the composition root.
import * as Cause from 'effect/Cause'
import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import * as Schema from 'effect/Schema'
import type { ToolSchema } from '../../machines/index.ts'
import { type AnyToolDefinition, type ToolContext, ToolError, type ToolFailure, toToolSchema } from './tool-definition.ts'

/** What one tool call produced, for the model (`content`), people (`summary`) and programs (`result`). */
export interface ToolOutcome {
  readonly ok: boolean
  /** JSON text for the model (the `role: "tool"` message content). */
  readonly content: string
  /** One line for people (tool cards, logs). */
  readonly summary: string
  /** The structured result, or `{ error: { code, message } }`. */
  readonly result: unknown
  /** Set when `ok` is false: the public code and its HTTP status for explicit commands. */
  readonly error?: { readonly code: string; readonly message: string; readonly status: number } | undefined
}

export interface ToolRegistry {
  readonly definitions: ReadonlyArray<AnyToolDefinition>
  /** OpenAI function-tool schemas, derived once from the argument Schemas. */
  readonly schemas: ReadonlyArray<ToolSchema>
  /** Tools people and programs may run as explicit commands. */
  readonly commandNames: ReadonlyArray<string>
  readonly get: (name: string) => AnyToolDefinition | undefined
  /** Never fails: unknown tools, invalid arguments and tool failures are `ok: false` outcomes. */
  readonly run: (input: { readonly name: string; readonly args: unknown; readonly context: ToolContext }) => Effect.Effect<ToolOutcome>
}

function failureOutcome(error: ToolFailure): ToolOutcome {
  const body = { error: { code: error.code, message: error.message } }
  return {
    ok: false,
    content: JSON.stringify(body),
    summary: `${error.code}: ${error.message}`,
    result: body,
    error: { code: error.code, message: error.message, status: error.status },
  }
}

function flattenSchemaMessage(message: string): string {
  return message.replace(/\n\s*/g, ' ')
}

export function makeToolRegistry(
  definitions: ReadonlyArray<AnyToolDefinition>,
  { onDefect }: { readonly onDefect?: ((name: string, cause: Cause.Cause<unknown>) => void) | undefined } = {},
): ToolRegistry {
  const byName = new Map<string, AnyToolDefinition>()
  for (const definition of definitions) {
    if (byName.has(definition.name)) throw new Error(`duplicate tool name "${definition.name}"`)
    byName.set(definition.name, definition)
  }
  const names = [...byName.keys()]
  const schemas = definitions.map(toToolSchema)
  const run: ToolRegistry['run'] = ({ name, args, context }) => {
    const definition = byName.get(name)
    if (definition === undefined) {
      return Effect.succeed(
        failureOutcome(new ToolError({ code: 'unknown_tool', status: 400, message: `unknown tool "${name}"; available: ${names.join(', ')}` })),
      )
    }
    return Schema.decodeUnknownEffect(definition.args)(args, { errors: 'all', onExcessProperty: 'error' }).pipe(
      Effect.mapError((error) => ToolError.invalidArguments(`invalid arguments: ${flattenSchemaMessage(error.message)}`)),
      Effect.flatMap((decoded) => definition.run(decoded, context)),
      Effect.map((result): ToolOutcome => ({ ok: true, content: JSON.stringify(result), summary: definition.summarise(result), result })),
      Effect.catch((error: ToolFailure) => Effect.succeed(failureOutcome(error))),
      Effect.catchDefect((defect) => {
        onDefect?.(name, Cause.die(defect))
        return Effect.succeed(failureOutcome(new ToolError({ code: 'internal_error', status: 500, message: 'the tool failed unexpectedly' })))
      }),
    )
  }
  return {
    definitions,
    schemas,
    commandNames: definitions.filter((definition) => definition.command === true).map((definition) => definition.name),
    get: (name) => byName.get(name),
    run,
  }
}

/** The registry as a service of the composition root. */
export class ToolRegistryService extends Context.Service<ToolRegistryService, ToolRegistry>()('knowagent/tools/ToolRegistry') {
  static readonly layer = (definitions: ReadonlyArray<AnyToolDefinition>): Layer.Layer<ToolRegistryService> =>
    Layer.succeed(ToolRegistryService, makeToolRegistry(definitions))
}
