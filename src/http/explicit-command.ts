// Explicit workspace commands run by a person or a program, with no model involved:
// `POST /api/v1/knowledge-agent/command` and the chat's `/ls`, `/read`, … cards. Any tool the
// registry marks as a command runs exactly as it would for the model.
import * as Effect from 'effect/Effect'
import type { User } from '../effects/auth/users.ts'
import type { ToolOutcome } from '../effects/tools/tool-registry.ts'
import { parseKbUri } from '../effects/workspace/uri.ts'
import type { AppContext } from './app-context.ts'
import { badRequest } from './http-errors.ts'

export interface ExplicitCommand {
  readonly command: string
  /** The selected node: the target must be it or lie below it. */
  readonly scopeUri: string
  /** Defaults to the scope. */
  readonly targetUri?: string | undefined
  readonly offset?: number | undefined
  readonly limit?: number | undefined
  readonly query?: string | undefined
}

/** Refuses a name that is not an explicit command, listing those that are. */
export function checkCommandName(ctx: AppContext, name: string): void {
  if (!ctx.tools.commandNames.includes(name)) {
    throw badRequest(`unknown command "${name}"; available: ${ctx.tools.commandNames.join(', ')}`, 'invalid_request')
  }
}

/** The tool's arguments: only the parameters its schema declares, from what the caller gave. */
export function argumentsOf(ctx: AppContext, command: ExplicitCommand): Record<string, unknown> {
  const parameters = ctx.tools.schemas.find((schema) => schema.function.name === command.command)?.function.parameters
  const declared = new Set(Object.keys((parameters?.properties as Record<string, unknown> | undefined) ?? {}))
  const given: Record<string, unknown> = { uri: command.targetUri ?? command.scopeUri, offset: command.offset, limit: command.limit, query: command.query }
  if (declared.has('query') && !command.query?.trim()) throw badRequest(`${command.command} needs a non-empty "query"`, 'invalid_request')
  return Object.fromEntries(Object.entries(given).filter(([key, value]) => declared.has(key) && value !== undefined))
}

/** Runs the command as its tool would run for the model. Tool errors are `ok: false` outcomes. */
export async function runExplicitCommand(ctx: AppContext, { user, command }: { user: User; command: ExplicitCommand }): Promise<ToolOutcome> {
  checkCommandName(ctx, command.command)
  const scope = parseKbUri({ uri: command.scopeUri, callerLogin: user.login })
  const args = argumentsOf(ctx, command)
  const context = { db: ctx.db, caller: user, scope, progress: () => {} }
  return Effect.runPromise(ctx.tools.run({ name: command.command, args, context }), { signal: ctx.shutdownSignal })
}
