// Resolves a logical URI for a caller to a real node, re-reading visibility on every call.
import type { WorkspaceNode } from './store.ts'
import type { Db, Owner } from '../db/schema.ts'
import { getNode } from './store.ts'
import { isWithin, parseKbUri, type WorkspacePath } from './uri.ts'
import { OutsideScope } from './workspace-errors.ts'

export async function resolveNode(db: Db, { caller, uri }: { caller: Owner; uri: string }): Promise<{ path: WorkspacePath; node: WorkspaceNode }> {
  const path = parseKbUri({ uri, callerLogin: caller.login })
  const node = await getNode(db, caller, path.segments)
  return { path, node }
}

/** The path `uri` names, checked to lie within `scope` (nothing read): InvalidUri or OutsideScope otherwise. */
export function pathWithinScope({ caller, scope, uri }: { caller: Owner; scope: WorkspacePath; uri: string }): WorkspacePath {
  const path = parseKbUri({ uri, callerLogin: caller.login })
  if (!isWithin({ outer: scope, inner: path })) {
    throw new OutsideScope({ uri, reason: 'tools may only reach the selected node and what lies below it' })
  }
  return path
}

/** Resolves `uri` and checks that it is the selected scope or lies below it. */
export async function resolveWithinScope(
  db: Db,
  { caller, scope, uri }: { caller: Owner; scope: WorkspacePath; uri: string },
): Promise<{ path: WorkspacePath; node: WorkspaceNode }> {
  const path = pathWithinScope({ caller, scope, uri })
  const node = await getNode(db, caller, path.segments)
  return { path, node }
}
