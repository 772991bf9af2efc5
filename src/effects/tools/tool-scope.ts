// Resolving a tool's target: the URI is re-read for the caller on every call and must be the
// selected node or lie below it (SPEC §4), so a node deleted or moved since is an error, never
// stale content.
import type * as Effect from 'effect/Effect'
import { pathWithinScope, resolveWithinScope } from '../workspace/resolve.ts'
import type { WorkspaceNode } from '../workspace/store.ts'
import { formatKbUri, type WorkspacePath } from '../workspace/uri.ts'
import { tryWorkspace } from '../workspace/workspace-effect.ts'
import type { WorkspaceError } from '../workspace/workspace-errors.ts'
import type { ToolContext } from './tool-definition.ts'

export function scopeUriOf(scope: WorkspacePath): string {
  return formatKbUri({ login: scope.login, segments: scope.segments, directory: false })
}

/** The path `uri` names (the selected node when omitted), checked to lie within the scope; nothing read yet. */
export function targetWithinScope(context: ToolContext, uri: string | undefined): Effect.Effect<{ path: WorkspacePath }, WorkspaceError> {
  return tryWorkspace(async () => ({ path: pathWithinScope({ caller: context.caller, scope: context.scope, uri: uri ?? scopeUriOf(context.scope) }) }))
}

/** The node `uri` names (the selected node when omitted), checked to lie within the scope. */
export function resolveToolTarget(context: ToolContext, uri: string | undefined): Effect.Effect<{ node: WorkspaceNode }, WorkspaceError> {
  return tryWorkspace(() => resolveWithinScope(context.db, { caller: context.caller, scope: context.scope, uri: uri ?? scopeUriOf(context.scope) }))
}
