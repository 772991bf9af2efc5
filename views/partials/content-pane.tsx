// The content pane beside the tree: a file's preview (sanitised markdown, a CSV or TSV file's first
// rows as a table, plain text, or the text at a cited offset with the passage highlighted) or a
// directory's listing, each with the node's
// actions (new folder, upload, download, rename, move, delete). Its `data-directory-uri` tells the
// chat which directory is current; files dropped on it are uploaded there.
import { raw } from 'hono/html'
import { NodeLink, pageHref, type TreeEntry } from './tree.tsx'

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

export interface VersionRow {
  readonly versionNo: number
  readonly createdAt: Date
  readonly size: number
  readonly origin: 'upload' | 'import' | 'compile' | 'restore' | null
  readonly current: boolean
}

export interface VersionHistory {
  readonly versions: ReadonlyArray<VersionRow>
  readonly total: number
  readonly currentNo: number
}

/** What a generated page is and whether what it was compiled from changed since (layer-freshness.ts). */
export interface GeneratedMark {
  readonly kind: 'summary' | 'overview' | 'abstract'
  /** A summary's source where it is now; null when it is gone; undefined when unknown or not a summary. */
  readonly source?: { readonly uri: string; readonly name: string } | null | undefined
  /** The folder it describes (overview, abstract) or whose compile writes it again (summary). */
  readonly folderUri?: string | undefined
  /** When its current version was written (ISO). */
  readonly writtenAt?: string | undefined
  /** What changed since, each as describeChanges says it (the last may say how many more); empty when it is up to date. */
  readonly changes: ReadonlyArray<string>
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

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

/** kb://users/demo/a/b/ as links: users/demo › a › b. */
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

export const rawHref = (uri: string, version?: number) => `/api/v1/workspace/raw?uri=${encodeURIComponent(uri)}${version === undefined ? '' : `&version=${version}`}`
export const versionsHref = (uri: string) => `/api/v1/workspace/versions?uri=${encodeURIComponent(uri)}`
export const exportHref = (uri: string) => `/api/v1/workspace/export?uri=${encodeURIComponent(uri)}`

/** What can be done with the node on show; buttons are handled by files.js (dialogs, uploads). */
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

const folderName = (uri: string) => `${decodeURIComponent(uri.replace(/\/$/, '').split('/').pop() ?? uri)}/`

/** "Summary of a.md", "Overview of team/", and — when out of date — what changed and a way to compile again. */
function GeneratedNote({ mark }: { mark: GeneratedMark }) {
  const stale = mark.changes.length > 0
  const what =
    mark.kind === 'summary' ? (
      <>
        Summary of{' '}
        {mark.source ? (
          <NodeLink uri={mark.source.uri} class="layer-source">
            {mark.source.name}
          </NodeLink>
        ) : mark.source === null ? (
          'a file that no longer exists'
        ) : (
          'a file'
        )}
      </>
    ) : (
      <>
        {mark.kind === 'overview' ? 'Overview (L1)' : 'Abstract (L0)'} of{' '}
        {mark.folderUri ? (
          <NodeLink uri={mark.folderUri} class="layer-source">
            {folderName(mark.folderUri)}
          </NodeLink>
        ) : (
          'its folder'
        )}
      </>
    )
  return (
    <div class={`layer-mark${stale ? ' stale' : ''}`} data-generated={mark.kind} data-stale={String(stale)}>
      <p>
        {what}, written by a compile job{mark.writtenAt ? ` on ${mark.writtenAt.slice(0, 16).replace('T', ' ')}` : ''}.{stale ? null : ' Up to date with its sources.'}
      </p>
      {stale ? (
        <>
          <p class="stale-mark" role="status">
            <strong>Out of date:</strong> its sources changed since it was written.
          </p>
          <ul class="layer-changes" aria-label="What changed since">
            {mark.changes.map((change) => (
              <li>{change}</li>
            ))}
          </ul>
          {mark.folderUri ? (
            <button type="button" class="small" data-open-compile data-compile-uri={mark.folderUri}>
              Compile {folderName(mark.folderUri)} again
            </button>
          ) : null}
        </>
      ) : null}
    </div>
  )
}

const ORIGINS = { upload: 'upload', import: 'import', compile: 'compile (generated page)', restore: 'restore' } as const

/** A link that shows one version of a file in the pane (in place, its URL pushed). */
function VersionLink({ uri, version, children, class: className }: { uri: string; version?: number | undefined; children: unknown; class?: string }) {
  const query = `uri=${encodeURIComponent(uri)}${version === undefined ? '' : `&version=${version}`}`
  return (
    <a class={className} href={`/workspace?${query}`} hx-get={`/workspace/content?${query}`} hx-target="#content" hx-swap="outerHTML" hx-push-url={`/workspace?${query}`}>
      {children}
    </a>
  )
}

/** Restores a version as the newest one (a plain form: the answer is the file's page with a notice). */
function RestoreButton({ uri, version, csrfToken, quiet = false }: { uri: string; version: number; csrfToken: string | undefined; quiet?: boolean }) {
  return (
    <form class={`restore-version${quiet ? ' quiet' : ''}`} method="post" action="/workspace/versions/restore">
      <input type="hidden" name="_csrf" value={csrfToken ?? ''} />
      <input type="hidden" name="uri" value={uri} />
      <input type="hidden" name="version" value={String(version)} />
      <button type="submit" class="small" aria-label={`Restore version ${version} as the newest version`}>
        Restore
      </button>
    </form>
  )
}

/** The file's versions, newest first: when, size, how each came, and what can be done with it. */
function VersionHistoryList({ preview, history, csrfToken }: { preview: Preview; history: VersionHistory; csrfToken: string | undefined }) {
  return (
    <details class="version-history" open={preview.old ? true : undefined}>
      <summary>
        History: {history.total} {history.total === 1 ? 'version' : 'versions'}
      </summary>
      <div class="table-scroll">
        <table class="versions" aria-label="Versions">
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">When</th>
              <th scope="col">Size</th>
              <th scope="col">How</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {history.versions.map((version) => (
              <tr data-version={String(version.versionNo)} aria-current={version.versionNo === preview.versionNo ? 'true' : undefined}>
                <td class="num">
                  {version.versionNo === preview.versionNo ? (
                    <strong>{version.versionNo}</strong>
                  ) : (
                    <VersionLink uri={preview.uri} version={version.current ? undefined : version.versionNo} class="show-version">
                      {version.versionNo}
                    </VersionLink>
                  )}
                  {version.current ? ' (current)' : ''}
                </td>
                <td class="num">{version.createdAt.toISOString().slice(0, 16).replace('T', ' ')}</td>
                <td class="num">{formatSize(version.size)}</td>
                <td>{version.origin === null ? '—' : ORIGINS[version.origin]}</td>
                <td>
                  <div class="version-actions">
                  <a class="button-link small" href={rawHref(preview.uri, version.versionNo)} download={preview.name} aria-label={`Download version ${version.versionNo}`}>
                    Download
                  </a>
                  {version.current ? null : <RestoreButton uri={preview.uri} version={version.versionNo} csrfToken={csrfToken} quiet />}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {history.versions.length < history.total ? (
        <p class="meta">
          The newest {history.versions.length} are listed; all {history.total} are at <a href={versionsHref(preview.uri)}>the versions API</a>.
        </p>
      ) : null}
    </details>
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

