// Explicit workspace commands (ls, read, search, status) run by a person or a program, with no
// model involved: `POST /api/v1/knowledge-agent/command` and the chat's `/ls`, `/read`, … cards.
import { Effect } from 'effect'
import type { User } from '../effects/auth/users.ts'
import { runWorkspaceTool, type ToolName, type ToolOutcome } from '../effects/tools/workspace-tools.ts'
import { parseKbUri } from '../effects/workspace/uri.ts'
import type { AppContext } from './app-context.ts'
import { badRequest } from './http-errors.ts'

export interface ExplicitCommand {
  readonly command: ToolName
  /** The selected node: the target must be it or lie below it. */
  readonly scopeUri: string
  /** Defaults to the scope. */
  readonly targetUri?: string | undefined
  readonly offset?: number | undefined
  readonly limit?: number | undefined
  readonly query?: string | undefined
}

/** HTTP status of a tool error code. */
export const TOOL_ERROR_STATUS: Readonly<Record<string, number>> = {
  invalid_uri: 400,
  invalid_arguments: 400,
  outside_scope: 403,
  not_found: 404,
  is_directory: 409,
  conflict: 409,
  unknown_tool: 400,
  internal: 500,
}

export interface ToolErrorBody {
  readonly error: { readonly code: string; readonly message: string }
}

export function argumentsOf(command: ExplicitCommand): Record<string, unknown> {
  const args: Record<string, unknown> = { uri: command.targetUri ?? command.scopeUri }
  if (command.command !== 'status' && command.offset !== undefined) args.offset = command.offset
  if ((command.command === 'ls' || command.command === 'read') && command.limit !== undefined) args.limit = command.limit
  if (command.command === 'search') {
    if (!command.query?.trim()) throw badRequest('search needs a non-empty "query"', 'invalid_request')
    args.query = command.query
  }
  return args
}

/** Runs the command as its tool would run for the model. Tool errors are `ok: false` outcomes. */
export async function runExplicitCommand(ctx: AppContext, { user, command }: { user: User; command: ExplicitCommand }): Promise<ToolOutcome> {
  const scope = parseKbUri({ uri: command.scopeUri, callerLogin: user.login })
  const args = argumentsOf(command)
  return Effect.runPromise(runWorkspaceTool({ scope: { db: ctx.db, caller: user, scope }, name: command.command, args }), {
    signal: ctx.shutdownSignal,
  })
}
