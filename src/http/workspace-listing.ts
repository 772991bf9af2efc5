// Listings the workspace page, the tree and the chat share: a directory's entries, a file's
// directory, the models offered (safe metadata only).
import type { User } from '../effects/auth/users.ts'
import { getNode, listChildren, type WorkspaceNode } from '../effects/workspace/store.ts'
import type { ModelOption } from '../../views/partials/chat-panel.tsx'
import type { TreeEntry } from '../../views/partials/tree.tsx'
import type { AppContext } from './app-context.ts'

export const LISTING_PAGE = 500
const TREE_PAGE = 200

export function toEntry(node: WorkspaceNode, children?: ReadonlyArray<TreeEntry>): TreeEntry {
  return { id: node.id, name: node.name, uri: node.uri, kind: node.kind, size: node.size, updated: node.updatedAt.toISOString(), children }
}

/** The models the chat offers: safe metadata only (never a key, endpoint or header). */
export function modelOptions(ctx: AppContext): ModelOption[] {
  return ctx.models.list().map(({ id, name, profile, contextWindow, supportsNativeToolCalling }) => ({ id, name, profile, contextWindow, supportsNativeToolCalling }))
}

const segmentsOf = (node: WorkspaceNode) => (node.path === '' ? [] : node.path.split('/'))

/** A file's parent, or the directory itself. */
export async function directoryOf(ctx: AppContext, user: User, node: WorkspaceNode): Promise<WorkspaceNode> {
  return node.kind === 'directory' ? node : getNode(ctx.db, user, segmentsOf(node).slice(0, -1))
}

export async function listDirectory(ctx: AppContext, user: User, directory: WorkspaceNode, limit = LISTING_PAGE): Promise<TreeEntry[]> {
  const page = await listChildren(ctx.db, { owner: user, parent: directory, offset: 0, limit })
  return page.entries.map((node) => toEntry(node))
}

/** The tree from the root down to `directory`, each level listing its children (first page). */
export async function buildTree(ctx: AppContext, user: User, directory: WorkspaceNode): Promise<TreeEntry[]> {
  const segments = segmentsOf(directory)
  let levelEntries: TreeEntry[] | undefined
  for (let depth = segments.length; depth >= 0; depth--) {
    const node = await getNode(ctx.db, user, segments.slice(0, depth))
    const page = await listChildren(ctx.db, { owner: user, parent: node, offset: 0, limit: TREE_PAGE })
    const childName = segments[depth]
    const below = levelEntries
    levelEntries = page.entries.map((child) => toEntry(child, child.name === childName && child.kind === 'directory' ? below : undefined))
  }
  return levelEntries ?? []
}
