// Listings the workspace page, the tree and the chat share: a directory's entries, a file's
// directory, the models offered (safe metadata only).
import type { User } from '../effects/auth/users.ts'
import type { Db } from '../effects/db/schema.ts'
import { getNode, type WorkspaceNode } from '../effects/workspace/store.ts'
import { childPosition, emptySubfolders, listChildren } from '../effects/workspace/folder-listing.ts'
import type { WelcomeEntry } from '../../views/partials/welcome.tsx'
import type { ModelOption } from '../../views/partials/chat-panel.tsx'
import { type TreeEntry, type TreeMore, TREE_PAGE_SIZE as TREE_PAGE } from '../../views/partials/tree.tsx'
import { LISTING_PAGE_SIZE } from '../../views/partials/content-pane.tsx'
import type { AppContext } from './app-context.ts'

export const LISTING_PAGE = LISTING_PAGE_SIZE

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
  return (await listDirectoryPage(ctx, user, directory, { limit })).entries
}

/** Subfolders of the welcome looked into for files: the example questions name at most one. */
const WELCOME_FOLDERS = 3

/** A directory's entries for the chat's welcome: a subfolder is `empty` when it holds no file, or is not among the first three looked into. */
export async function welcomeEntries(db: Db, user: User, directory: WorkspaceNode, entries: ReadonlyArray<Pick<TreeEntry, 'name' | 'kind'>>): Promise<WelcomeEntry[]> {
  const folders = entries.filter((entry) => entry.kind === 'directory').slice(0, WELCOME_FOLDERS).map((entry) => entry.name)
  const empty = await emptySubfolders(db, { owner: user, parent: directory, names: folders })
  return entries.map(({ name, kind }) => ({ name, kind, empty: kind === 'directory' ? empty.has(name) || !folders.includes(name) : false }))
}

/** One page of a directory's entries, with where it starts and how many there are in all. */
export interface DirectoryPage {
  readonly entries: TreeEntry[]
  readonly offset: number
  readonly total: number
}

export async function listDirectoryPage(ctx: AppContext, user: User, directory: WorkspaceNode, { offset = 0, limit = LISTING_PAGE }: { offset?: number; limit?: number } = {}): Promise<DirectoryPage> {
  const page = await listChildren(ctx.db, { owner: user, parent: directory, offset, limit })
  return { entries: page.entries.map((node) => toEntry(node)), offset, total: page.total }
}

/** Where a list of children goes on past the entries shown: the next page's offset (tree.tsx's "Show more"). */
export function moreOf(uri: string, page: DirectoryPage): TreeMore | undefined {
  const next = page.offset + page.entries.length
  return next < page.total ? { uri, offset: next, total: page.total } : undefined
}

/** At most this many children of one folder are listed to show the current node (10 pages of the tree). */
const MAX_TREE_REACH = 10 * TREE_PAGE

/**
 * The tree from the root down to `directory`, each level listing its children (first page, and
 * whether there are more). A level whose child on the way (or `current`, a file in `directory`)
 * lies past the first page lists as many pages as it takes to show it, up to MAX_TREE_REACH.
 */
export async function buildTree(ctx: AppContext, user: User, directory: WorkspaceNode, current?: WorkspaceNode): Promise<{ entries: TreeEntry[]; more: TreeMore | undefined }> {
  const segments = segmentsOf(directory)
  let level: { entries: TreeEntry[]; more: TreeMore | undefined } | undefined
  for (let depth = segments.length; depth >= 0; depth--) {
    const node = await getNode(ctx.db, user, segments.slice(0, depth))
    const onTheWay =
      depth < segments.length ? { kind: 'directory' as const, name: segments[depth]! } : current && current.kind === 'file' && current.parentId === directory.id ? current : undefined
    let page = await listChildren(ctx.db, { owner: user, parent: node, offset: 0, limit: TREE_PAGE })
    if (onTheWay && page.total > TREE_PAGE && !page.entries.some((child) => child.kind === onTheWay.kind && child.name === onTheWay.name)) {
      const position = await childPosition(ctx.db, { owner: user, parent: node, child: onTheWay })
      if (position < MAX_TREE_REACH) page = await listChildren(ctx.db, { owner: user, parent: node, offset: 0, limit: Math.ceil((position + 1) / TREE_PAGE) * TREE_PAGE })
    }
    const childName = segments[depth]
    const below = level
    const entries = page.entries.map((child) =>
      child.name === childName && child.kind === 'directory' && below ? { ...toEntry(child, below.entries), more: below.more } : toEntry(child),
    )
    level = { entries, more: moreOf(node.uri, { entries, offset: 0, total: page.total }) }
  }
  return level ?? { entries: [], more: undefined }
}
