// The content pane beside the tree: a file's preview (sanitised markdown, a CSV or TSV file's first
// rows as a table, plain text, or the text at a cited offset with the passage highlighted) or a
// directory's listing, each with the node's
// actions (new folder, upload, download, rename, move, delete). Its `data-directory-uri` tells the
// chat which directory is current; files dropped on it are uploaded there.
import { raw } from 'hono/html'
import { NodeLink, pageHref, type TreeEntry } from './tree.tsx'
import { exportHref, formatSize, rawHref } from './file-links.ts'
import { GeneratedNote, type GeneratedMark } from './layer-note.tsx'
import { RestoreButton, VersionHistoryList, VersionLink, type VersionHistory } from './version-history.tsx'

export { formatSize, rawHref } from './file-links.ts'
export type { GeneratedMark } from './layer-note.tsx'
export type { VersionHistory, VersionRow } from './version-history.tsx'

export interface Preview {
  readonly uri: string
  readonly name: string
  readonly mime: string
  readonly size: number
  /** The version on show: the current one unless `old`. */
  readonly versionNo: number
  /** An old version is on show (the page's `version=`), not the current one. */
  readonly old?: boolean | undefined
  /** The file's versions, newest first (the first page of them). */
  readonly history?: VersionHistory | undefined
  readonly html?: string | undefined // sanitised markdown
  readonly text?: string | undefined
  readonly truncated: boolean
  readonly parseError?: string | undefined
  /** Opened at an offset (a citation, a search hit): the text around it, the passage highlighted. */
  readonly cited?: CitedText | undefined
  /** A CSV or TSV file that reads as a table: its header and first rows (the text is shown otherwise). */
  readonly table?: PreviewTable | undefined
  /** A page a compile job wrote: what it is and whether it is out of date. */
  readonly generated?: GeneratedMark | undefined
}

export interface PreviewTable {
  readonly header: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
  /** Data rows in the file; undefined when it was too long to count. */
  readonly totalRows: number | undefined
}

export interface CitedText {
  /** Code-point offsets: where the shown text starts, the passage, and the whole text's length. */
  readonly windowStart: number
  readonly offset: number
  readonly total: number
  readonly before: string
  readonly passage: string
  readonly after: string
}

export interface ContentPaneProps {
  readonly directoryUri: string
  readonly nodeUri: string
  readonly listing: ReadonlyArray<TreeEntry>
  /** Where the listing's page starts, and how many entries the directory has (default: the page is all of them). */
  readonly listingOffset?: number | undefined
  readonly listingTotal?: number | undefined
  readonly preview?: Preview | undefined
  readonly csrfToken: string | undefined
  readonly notice?: string | undefined
}

/** Entries per page of a directory listing (the server lists this many, workspace-listing.ts). */
export const LISTING_PAGE_SIZE = 500

function Breadcrumbs({ uri }: { uri: string }) {
  const match = /^(kb:\/\/users\/[^/]+\/)(.*)$/.exec(uri)
  if (!match) return <span class="crumb">{uri}</span>
  const root = match[1]!
  const parts = match[2]!.split('/').filter((part) => part !== '')
  const isDirectory = uri.endsWith('/')
  return (
    <nav class="breadcrumbs" aria-label="Location">
      <NodeLink uri={root} class="crumb">
        {root}
      </NodeLink>
      {parts.map((part, index) => {
        const last = index === parts.length - 1
        const partUri = root + parts.slice(0, index + 1).join('/') + (last && !isDirectory ? '' : '/')
        return (
          <>
            <span class="crumb-sep" aria-hidden="true">
              ›
            </span>
            {last ? (
              <span class="crumb current" aria-current="page">
                {part}
              </span>
            ) : (
              <NodeLink uri={partUri} class="crumb">
                {part}
              </NodeLink>
            )}
          </>
        )
      })}
    </nav>
  )
}

function NodeActions({ uri, name, kind, isRoot }: { uri: string; name: string; kind: 'directory' | 'file'; isRoot: boolean }) {
  const node = { 'data-uri': uri, 'data-name': name, 'data-kind': kind }
  return (
    <div class="node-actions" role="toolbar" aria-label={kind === 'directory' ? 'Folder actions' : 'File actions'}>
      {kind === 'directory' ? (
        <>
          <button type="button" class="small" data-files-action="new-folder" {...node}>
            New folder
          </button>
          <button type="button" class="small" data-upload-to={uri}>
            Upload files
          </button>
          <a class="button-link small" href={exportHref(uri)} download>
            Download as zip
          </a>
        </>
      ) : (
        <a class="button-link small" href={rawHref(uri)} download={name}>
          Download
        </a>
      )}
      {isRoot ? null : (
        <>
          <button type="button" class="small" data-files-action="rename" {...node}>
            Rename
          </button>
          <button type="button" class="small" data-files-action="move" {...node}>
            Move
          </button>
          <button type="button" class="small danger-ghost" data-files-action="delete" {...node}>
            Delete
          </button>
        </>
      )}
    </div>
  )
}

function CitedPassage({ preview, cited }: { preview: Preview; cited: CitedText }) {
  return (
    <>
      <p class="meta cited-note">
        The text at character {cited.offset} of {cited.total}, as KnowAgent reads it; the passage is highlighted.{' '}
        {preview.html !== undefined ? <NodeLink uri={preview.uri}>Formatted view</NodeLink> : /\.(csv|tsv|tab)$/i.test(preview.name) ? <NodeLink uri={preview.uri}>Table view</NodeLink> : null}
      </p>
      {cited.windowStart > 0 ? <p class="meta">… {cited.windowStart} characters before are not shown.</p> : null}
      <pre class="text doc">
        {cited.before}
        <mark id="passage" class="passage" tabindex={-1} data-offset={String(cited.offset)}>
          {cited.passage}
        </mark>
        {cited.after}
      </pre>
    </>
  )
}

const count = (n: number) => n.toLocaleString('en-US')

/** A CSV or TSV file's first rows; every cell is text (escaped by the template). */
function DataTable({ table }: { table: PreviewTable }) {
  const shown = table.rows.length
  const note =
    table.totalRows === undefined
      ? `Showing the first ${count(shown)} rows; the file has more.`
      : `Showing ${count(shown)} of ${count(table.totalRows)} ${table.totalRows === 1 ? 'row' : 'rows'}.`
  return (
    <>
      <p class="meta table-note" role="status">
        {note}
        {shown < (table.totalRows ?? Infinity) ? ' Download the file for all of them.' : ''}
      </p>
      <div class="table-scroll doc" tabindex={0} role="region" aria-label="Table preview">
        <table class="data-table">
          <thead>
            <tr>
              {table.header.map((cell) => (
                <th scope="col">{cell}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {table.rows.map((row) => (
              <tr>
                {row.map((cell) => (
                  <td>{cell}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  )
}

function FilePreview({ preview, csrfToken }: { preview: Preview; csrfToken: string | undefined }) {
  const rawOfShown = rawHref(preview.uri, preview.old ? preview.versionNo : undefined)
  return (
    <article class="preview" aria-label="File preview" data-version={String(preview.versionNo)}>
      <header class="pane-head">
        <Breadcrumbs uri={preview.uri} />
        <h1 class="title">{preview.name}</h1>
        <p class="meta">
          {preview.mime} · {formatSize(preview.size)} · version {preview.versionNo}
        </p>
        <NodeActions uri={preview.uri} name={preview.name} kind="file" isRoot={false} />
        {preview.old && preview.history ? (
          <div class="old-version" role="status">
            <p>
              <strong>
                Version {preview.versionNo} of {preview.history.total}, not the current one
              </strong>{' '}
              (the current one is version {preview.history.currentNo}).
            </p>
            <p class="old-version-actions">
              <VersionLink uri={preview.uri} class="button-link small">
                Show the current version
              </VersionLink>
              <a class="button-link small" href={rawOfShown} download={preview.name}>
                Download version {preview.versionNo}
              </a>
              <RestoreButton uri={preview.uri} version={preview.versionNo} csrfToken={csrfToken} />
            </p>
          </div>
        ) : null}
        {preview.generated && !preview.old ? <GeneratedNote mark={preview.generated} /> : null}
        {preview.history ? <VersionHistoryList preview={preview} history={preview.history} csrfToken={csrfToken} /> : null}
      </header>
      {preview.parseError ? (
        <p class="error" role="alert">
          This file's text could not be extracted: {preview.parseError.replace(/[;,]?\s*raw bytes kept\.?$/, '')}. Its raw bytes are kept: <a href={rawOfShown}>download the original</a>.
        </p>
      ) : preview.cited ? (
        <CitedPassage preview={preview} cited={preview.cited} />
      ) : preview.html !== undefined ? (
        <div class="markdown doc">{raw(preview.html)}</div>
      ) : preview.table !== undefined ? (
        <DataTable table={preview.table} />
      ) : (
        <pre class="text doc">{preview.text ?? ''}</pre>
      )}
      {preview.truncated && !preview.cited && preview.table === undefined ? <p class="meta">Preview truncated.</p> : null}
    </article>
  )
}

/** A link to another page of a directory's listing (in place, with the page URL pushed). */
function ListingPageLink({ uri, from, rel, children }: { uri: string; from: number; rel: 'prev' | 'next'; children: string }) {
  const query = `uri=${encodeURIComponent(uri)}${from > 0 ? `&from=${from}` : ''}`
  return (
    <a class={`listing-page ${rel}`} rel={rel} href={`/workspace?${query}`} hx-get={`/workspace/content?${query}`} hx-target="#content" hx-swap="outerHTML" hx-push-url={`/workspace?${query}`}>
      {children}
    </a>
  )
}

function DirectoryListing({
  directoryUri,
  listing,
  offset,
  total,
  csrfToken,
}: {
  directoryUri: string
  listing: ReadonlyArray<TreeEntry>
  offset: number
  total: number
  csrfToken: string | undefined
}) {
  const name = directoryUri.replace(/\/$/, '').split('/').pop() ?? directoryUri
  const isRoot = /^kb:\/\/users\/[^/]+\/$/.test(directoryUri)
  const paged = offset > 0 || listing.length < total
  const pager = paged ? (
    <nav class="listing-pager" aria-label="Listing pages">
      {offset > 0 ? <ListingPageLink uri={directoryUri} from={Math.max(0, offset - LISTING_PAGE_SIZE)} rel="prev">{`‹ Previous ${LISTING_PAGE_SIZE}`}</ListingPageLink> : null}
      {offset + listing.length < total ? (
        <ListingPageLink uri={directoryUri} from={offset + listing.length} rel="next">{`Next ${Math.min(LISTING_PAGE_SIZE, total - offset - listing.length)} ›`}</ListingPageLink>
      ) : null}
    </nav>
  ) : null
  return (
    <article class="listing" aria-label="Directory listing">
      <header class="pane-head">
        <Breadcrumbs uri={directoryUri} />
        <h1 class="title">{name}/</h1>
        <p class="meta">
          {paged
            ? `${offset + 1}–${offset + listing.length} of ${total} entries`
            : `${listing.length} ${listing.length === 1 ? 'entry' : 'entries'}`}
        </p>
        <NodeActions uri={directoryUri} name={name} kind="directory" isRoot={isRoot} />
      </header>
      {listing.length === 0 ? (
        <p class="empty-state">This directory is empty. Upload files below, then ask KnowAgent about them.</p>
      ) : (
        <table class="entries">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Size</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {listing.map((entry) => (
              <tr>
                <td>
                  <NodeLink uri={entry.uri} class={`entry-link ${entry.kind}`} title={entry.name}>
                    {entry.name}
                    {entry.kind === 'directory' ? '/' : ''}
                  </NodeLink>
                </td>
                <td class="num">{entry.kind === 'file' ? formatSize(entry.size) : '—'}</td>
                <td class="num">{entry.updated.slice(0, 16).replace('T', ' ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {pager}
      <form class="upload" method="post" action={`/workspace/upload?uri=${encodeURIComponent(directoryUri)}`} enctype="multipart/form-data" data-upload-form={directoryUri}>
        <input type="hidden" name="_csrf" value={csrfToken ?? ''} />
        <label>
          Upload files to this directory (or drop them here)
          <input type="file" name="file" multiple required />
        </label>
        <button type="submit">Upload</button>
      </form>
      <details class="zip-import">
        <summary>Import a zip here</summary>
        <form method="post" action={`/workspace/import-zip?uri=${encodeURIComponent(directoryUri)}`} enctype="multipart/form-data">
          <input type="hidden" name="_csrf" value={csrfToken ?? ''} />
          <label>
            <span>
              A zip of files and folders (as <em>Download as zip</em> makes) is unpacked into this folder, all or nothing
            </span>
            <input type="file" name="file" accept=".zip,application/zip" required />
          </label>
          <button type="submit">Import</button>
        </form>
      </details>
    </article>
  )
}

export function ContentPane(props: ContentPaneProps) {
  return (
    <section id="content" class="content" data-directory-uri={props.directoryUri} data-node-uri={props.nodeUri} data-drop-uri={props.directoryUri} aria-label="Preview">
      {props.notice ? (
        <p class="notice" role="status">
          {props.notice}
        </p>
      ) : null}
      {props.preview ? (
        <FilePreview preview={props.preview} csrfToken={props.csrfToken} />
      ) : (
        <DirectoryListing
          directoryUri={props.directoryUri}
          listing={props.listing}
          offset={props.listingOffset ?? 0}
          total={props.listingTotal ?? (props.listingOffset ?? 0) + props.listing.length}
          csrfToken={props.csrfToken}
        />
      )}
    </section>
  )
}

/** Where a failed request for a node can lead back to: the nearest folder that exists. */
export interface NodeProblem {
  readonly status: number
  readonly code: string
  readonly message: string
  /** The URI that was asked for, as given. */
  readonly requested?: string | undefined
  readonly nearestFolder: string
}

const PROBLEM_TITLES: Record<string, string> = {
  not_found: 'Not found',
  outside_scope: 'Not yours to see',
  invalid_uri: 'Not a workspace address',
  conflict: 'Cannot show this',
  internal_error: 'Something went wrong on the server',
}

export function problemTitle(code: string): string {
  return PROBLEM_TITLES[code] ?? 'Cannot show this'
}

/**
 * A node that cannot be shown: what was asked for, what happened, and a way back. In the page the
 * way back loads the folder in place; on a page of its own it is a plain link.
 */
/** At most `max` characters of `text`, an ellipsis saying more was cut (a 5,000-character URI pushed the page's message out of sight). */
const shortened = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text)

export function NodeProblemPanel({ problem, standalone = false }: { problem: NodeProblem; standalone?: boolean }) {
  const back = `Back to ${problem.nearestFolder}`
  return (
    <div class="problem" role="alert">
      <h1 class="title">{problemTitle(problem.code)}</h1>
      {problem.requested ? (
        <p class="dialog-uri">
          <code>{shortened(problem.requested, 300)}</code>
        </p>
      ) : null}
      <p class="problem-message">{shortened(problem.message, 600)}</p>
      {problem.code === 'internal_error' ? <p class="meta">The details are in the server log. Try again, or go back to a folder.</p> : null}
      <p>
        {standalone ? (
          <a class="button-link" href={pageHref(problem.nearestFolder)}>
            {back}
          </a>
        ) : (
          <NodeLink uri={problem.nearestFolder} class="button-link">
            {back}
          </NodeLink>
        )}
      </p>
    </div>
  )
}

/** What GET /workspace/content answers when the node cannot be shown (escaped, swapped in place). */
export function ContentError({ problem }: { problem: NodeProblem }) {
  return (
    <section id="content" class="content" aria-label="Preview" data-problem={problem.code}>
      <NodeProblemPanel problem={problem} />
    </section>
  )
}

