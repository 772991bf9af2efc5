// The workspace tree: directories load their children lazily (an htmx GET per directory, once);
// the path to the current node is rendered expanded. Links load the content pane in place; a long
// name shows in full on hover (title) and on hover or focus (CSS). Files dropped on a folder's row
// are uploaded into it, dropped elsewhere on the tree into the root.
import { TRASH_PATH } from '../layout.tsx'
import { SearchButton } from './search-box.tsx'
import { fileIconClass } from './file-icon.ts'

export interface TreeEntry {
  readonly id: string
  readonly name: string
  readonly uri: string
  readonly kind: 'directory' | 'file'
  readonly size: number
  readonly updated: string
  /** Pre-rendered children (the path to the current node); undefined = not loaded yet. */
  readonly children?: ReadonlyArray<TreeEntry> | undefined
  /** With `children`: where they go on past the first page. */
  readonly more?: TreeMore | undefined
}

/** A directory's children go on past those shown: the next page starts at `offset`, of `total`. */
export interface TreeMore {
  readonly uri: string
  readonly offset: number
  readonly total: number
}

export const TREE_PAGE_SIZE = 200

export const pageHref = (uri: string) => `/workspace?uri=${encodeURIComponent(uri)}`
export const contentHref = (uri: string) => `/workspace/content?uri=${encodeURIComponent(uri)}`
export const treeChildrenHref = (uri: string, offset = 0) => `/workspace/tree?uri=${encodeURIComponent(uri)}${offset > 0 ? `&offset=${offset}` : ''}`

/** A link that swaps the content pane and pushes the page URL (a plain link without JS). */
export function NodeLink({ uri, class: className, title, children }: { uri: string; class?: string; title?: string; children?: unknown }) {
  return (
    <a
      class={className}
      title={title}
      href={pageHref(uri)}
      data-node-uri={uri}
      hx-get={contentHref(uri)}
      hx-target="#content"
      hx-swap="outerHTML"
      hx-push-url={pageHref(uri)}
    >
      {children as never}
    </a>
  )
}

function DirectoryItem({ entry }: { entry: TreeEntry }) {
  const groupId = `tree-${entry.id}`
  const loaded = entry.children !== undefined
  const toggle = {
    type: 'button' as const,
    class: 'twisty',
    'aria-expanded': loaded ? 'true' : 'false',
    'aria-controls': groupId,
    'aria-label': `${loaded ? 'Collapse' : 'Expand'} ${entry.name}`,
    ...(loaded ? {} : { 'hx-get': treeChildrenHref(entry.uri), 'hx-target': `#${groupId}`, 'hx-trigger': 'click once' }),
  }
  return (
    <li class="node directory" data-uri={entry.uri}>
      <div class="row" data-drop-uri={entry.uri}>
        <button {...toggle}>
          <span aria-hidden="true">▸</span>
        </button>
        <NodeLink uri={entry.uri} class="node-link" title={entry.name}>
          <span class="icon folder" aria-hidden="true"></span>
          <span class="name">{entry.name}</span>
        </NodeLink>
      </div>
      <ul class="tree" id={groupId} hidden={!loaded}>
        {loaded ? <TreeItems entries={entry.children!} more={entry.more} /> : null}
      </ul>
    </li>
  )
}

function FileItem({ entry }: { entry: TreeEntry }) {
  return (
    <li class="node file" data-uri={entry.uri}>
      <div class="row">
        <span class="twisty-spacer" aria-hidden="true"></span>
        <NodeLink uri={entry.uri} class="node-link" title={entry.name}>
          <span class={fileIconClass(entry)} aria-hidden="true"></span>
          <span class="name">{entry.name}</span>
        </NodeLink>
      </div>
    </li>
  )
}

/**
 * The items of one directory: what GET /workspace/tree returns into the directory's group. Past
 * the first page a "Show more" item loads the next page in its own place (`offset`: a later page,
 * which is never "empty").
 */
export function TreeItems({ entries, more, offset = 0 }: { entries: ReadonlyArray<TreeEntry>; more?: TreeMore | undefined; offset?: number }) {
  if (entries.length === 0 && offset === 0) return <li class="node empty">empty</li>
  return (
    <>
      {entries.map((entry) => (entry.kind === 'directory' ? <DirectoryItem entry={entry} /> : <FileItem entry={entry} />))}
      {more ? (
        <li class="node more">
          <button type="button" class="tree-more" hx-get={treeChildrenHref(more.uri, more.offset)} hx-target="closest li" hx-swap="outerHTML">
            Show {Math.min(TREE_PAGE_SIZE, more.total - more.offset)} more ({more.offset} of {more.total} shown)
          </button>
        </li>
      ) : null}
    </>
  )
}

export function WorkspaceTree({ rootUri, entries, more }: { rootUri: string; entries: ReadonlyArray<TreeEntry>; more?: TreeMore | undefined }) {
  return (
    <nav class="sidebar" id="tree" aria-label="Workspace tree" data-drop-uri={rootUri}>
      <SearchButton />
      <NodeLink uri={rootUri} class="root-link">
        <span class="icon home" aria-hidden="true"></span>
        <span class="name">{rootUri}</span>
      </NodeLink>
      <ul class="tree tree-root" id="tree-root">
        <TreeItems entries={entries} more={more} />
      </ul>
      <a class="trash-link" href={TRASH_PATH}>
        <span class="icon trash" aria-hidden="true"></span>
        <span class="name">Trash</span>
      </a>
    </nav>
  )
}

export function TreeError({ message }: { message: string }) {
  return (
    <li class="node error" role="alert">
      {message}
    </li>
  )
}
