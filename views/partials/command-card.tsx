// Result cards of explicit commands (/ls, /read, /search, /status): the tool's real result, with
// buttons to follow up (read a listed file, list a subdirectory, next page). No model involved.
import type { Child } from 'hono/jsx'
import type { JobInfo, LsResult, ReadResult, SearchResult, StatusResult, WorkspaceToolName } from '../../src/effects/tools/tool-types.ts'
import { formatSize } from './content-pane.tsx'
import { describeLayer } from '../../src/effects/workspace/layer-pages.ts'
import { plural } from '../../src/effects/plural.ts'

export interface CommandOutcome {
  readonly command: string
  readonly ok: boolean
  readonly summary: string
  readonly result: unknown
}

/** A button that runs another command in the chat (handled by commands.js). */
function RunButton({ command, arg, query, offset, children, label }: { command: WorkspaceToolName; arg?: string; query?: string; offset?: number; label?: string; children?: Child }) {
  return (
    <button
      type="button"
      class="run-command"
      data-run-command={command}
      data-arg={arg}
      data-query={query}
      data-offset={offset === undefined ? undefined : String(offset)}
      aria-label={label}
    >
      {children}
    </button>
  )
}

function LsBody({ result }: { result: LsResult }) {
  if (result.entries.length === 0) return <p class="muted">This directory is empty.</p>
  return (
    <>
      <ul class="ls-entries">
        {result.entries.map((entry) => (
          <li class={entry.kind}>
            <span class={`icon ${entry.kind === 'directory' ? 'folder' : 'file'}`} aria-hidden="true"></span>
            <span class="name">
              {entry.name}
              {entry.kind === 'directory' ? '/' : ''}
            </span>
            <span class="size">{entry.kind === 'file' ? formatSize(entry.size) : ''}</span>
            {entry.kind === 'directory' ? (
              <RunButton command="ls" arg={entry.uri} label={`List ${entry.name}`}>
                List
              </RunButton>
            ) : (
              <RunButton command="read" arg={entry.uri} label={`Read ${entry.name}`}>
                Read
              </RunButton>
            )}
          </li>
        ))}
      </ul>
      {result.next_offset !== null ? (
        <RunButton command="ls" arg={result.uri} offset={result.next_offset}>
          Show more ({result.next_offset} of {result.total} shown)
        </RunButton>
      ) : null}
    </>
  )
}

function ReadBody({ result }: { result: ReadResult }) {
  if (result.empty) return <p class="muted">{result.note ?? 'No text.'}</p>
  return (
    <>
      <p class="card-meta">
        characters {result.offset}–{result.next_offset ?? result.total} of {result.total}
      </p>
      <pre class="read-text">{result.text}</pre>
      {result.next_offset !== null ? (
        <RunButton command="read" arg={result.uri} offset={result.next_offset}>
          Next page
        </RunButton>
      ) : null}
    </>
  )
}

function SearchBody({ result }: { result: SearchResult }) {
  // the first later file the search index finds every word in, past where Continue goes on
  const ahead = result.matches_ahead?.find((match) => result.next_offset === null || match.offset > result.next_offset)
  // the files this call scanned: a count from the first file, else their places
  const scanned =
    result.offset === 0 || result.files_scanned === 0
      ? plural(result.files_scanned, 'file')
      : result.files_scanned === 1
        ? `file ${result.offset + 1}`
        : `files ${result.offset + 1}–${result.offset + result.files_scanned}`
  return (
    <>
      <p class="card-meta">
        {result.hits.length} hit{result.hits.length === 1 ? '' : 's'} for “{result.query}” in {scanned}
        {result.complete ? ' · whole scope scanned' : ' · scan not complete'}
      </p>
      {result.hits.length === 0 ? null : (
        <ol class="search-hits">
          {result.hits.map((hit) => (
            <li>
              <div class="hit-head">
                <code class="hit-uri">
                  {hit.uri} @{hit.offset}
                </code>
                <RunButton command="read" arg={hit.uri} offset={Math.max(0, hit.offset - 200)} label={`Read ${hit.uri} near ${hit.offset}`}>
                  Read
                </RunButton>
              </div>
              {hit.layer ? <p class="card-meta hit-layer">{describeLayer(hit.layer)}</p> : null}
              <p class="snippet">{hit.snippet}</p>
            </li>
          ))}
        </ol>
      )}
      {result.next_offset !== null ? (
        <RunButton command="search" arg={result.uri} query={result.query} offset={result.next_offset}>
          Continue search
        </RunButton>
      ) : null}
      {ahead !== undefined ? (
        <RunButton command="search" arg={result.uri} query={result.query} offset={ahead.offset} label={`Search from ${ahead.uri}, where the index finds every word`}>
          Search from {ahead.uri.slice(ahead.uri.lastIndexOf('/') + 1)} (file {ahead.offset + 1})
        </RunButton>
      ) : null}
    </>
  )
}

function JobLine({ label, job }: { label: string; job: JobInfo | null }) {
  return (
    <div class="job-line">
      <dt>{label}</dt>
      <dd>
        {job ? (
          <>
            <span class={`job-status ${job.status}`}>{job.status}</span> <span class="muted">{job.uri}</span>
            {job.error ? <span class="tool-error"> {job.error}</span> : null}
            <span class="muted"> · {(job.finished_at ?? job.created_at).slice(0, 16).replace('T', ' ')}</span>
          </>
        ) : (
          <span class="muted">none yet</span>
        )}
      </dd>
    </div>
  )
}

function JobBadge({ job }: { job: JobInfo | null }) {
  if (!job) return <span class="muted">none yet</span>
  return (
    <>
      <span class={`job-status ${job.status}`}>{job.status}</span>
      {job.error ? <span class="tool-error"> {job.error}</span> : null}
    </>
  )
}

function StatusBody({ result }: { result: StatusResult }) {
  if (result.kind === 'directory') {
    if (result.total === 0) return <p class="muted">No files below this folder.</p>
    return (
      <>
        <p class="card-meta">
          files {result.offset + 1}–{result.offset + result.files.length} of {result.total}, each with its own latest jobs
        </p>
        {result.compile ? (
          <p class="card-meta">
            this folder's overview and abstract: <JobBadge job={result.compile} />
          </p>
        ) : null}
        <table class="status-files">
          <thead>
            <tr>
              <th scope="col">File</th>
              <th scope="col">Text body (parse)</th>
              <th scope="col">Wiki (compile)</th>
            </tr>
          </thead>
          <tbody>
            {result.files.map((file) => (
              <tr>
                <td>
                  <code>{file.uri.replace(result.uri, '')}</code>
                </td>
                <td>
                  <JobBadge job={file.body} />
                </td>
                <td>
                  <JobBadge job={file.compile} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {result.next_offset !== null ? (
          <RunButton command="status" arg={result.uri} offset={result.next_offset}>
            More files
          </RunButton>
        ) : null}
      </>
    )
  }
  return (
    <dl class="status-jobs">
      <JobLine label="Text body (parse)" job={result.body} />
      <JobLine label="Wiki (compile)" job={result.compile} />
    </dl>
  )
}

/** Failures a listing helps with: the name was wrong, or it is a folder. */
const LS_HELPS = new Set(['not_found', 'is_directory', 'conflict', 'invalid_uri'])

/** A failed command: its error once, and what to try next. */
function FailedBody({ outcome }: { outcome: CommandOutcome }) {
  const error = (outcome.result as { error?: { code?: string; message?: string } }).error
  const code = error?.code ?? 'error'
  return (
    <>
      <p class="tool-error" role="alert">
        <code>{code}</code> {error?.message ?? outcome.summary}
      </p>
      {LS_HELPS.has(code) ? (
        <p class="card-hint">
          Try <RunButton command="ls" label="List this folder (/ls)">/ls</RunButton> to see the names in this folder.
        </p>
      ) : null}
    </>
  )
}

function CardBody({ outcome }: { outcome: CommandOutcome }) {
  if (!outcome.ok) return <FailedBody outcome={outcome} />
  switch (outcome.command) {
    case 'ls':
      return <LsBody result={outcome.result as LsResult} />
    case 'read':
      return <ReadBody result={outcome.result as ReadResult} />
    case 'search':
      return <SearchBody result={outcome.result as SearchResult} />
    case 'status':
      return <StatusBody result={outcome.result as StatusResult} />
    default:
      return <pre class="tool-json">{JSON.stringify(outcome.result, null, 2)}</pre>
  }
}

export function CommandCard({ outcome }: { outcome: CommandOutcome }) {
  const uri = (outcome.result as { uri?: string }).uri
  return (
    <section class={`command-card ${outcome.ok ? 'ok' : 'failed'}`} aria-label={`${outcome.command} result`}>
      <header class="card-head">
        <span class="badge">/{outcome.command}</span>
        {uri ? <code class="card-uri">{uri}</code> : null}
      </header>
      {outcome.ok ? <p class="card-summary">{outcome.summary}</p> : null}
      <CardBody outcome={outcome} />
    </section>
  )
}

/** A command result as a chat message (`c-<key>`, a display key made by the browser). */
export function CommandMessage({ messageKey, outcome }: { messageKey: string; outcome: CommandOutcome }) {
  return (
    <article class="msg command" id={`c-${messageKey}`}>
      <div class="avatar command-avatar" aria-hidden="true">
        /
      </div>
      <div class="msg-main">
        <CommandCard outcome={outcome} />
      </div>
    </article>
  )
}

/** A refused command (bad path, missing query): shown where the card would be. */
export function CommandRefused({ messageKey, message }: { messageKey: string | undefined; message: string }) {
  return (
    <article class="msg command" id={messageKey ? `c-${messageKey}` : undefined}>
      <div class="avatar command-avatar" aria-hidden="true">
        /
      </div>
      <div class="msg-main">
        <section class="command-card failed">
          <p class="tool-error" role="alert">
            {message}
          </p>
        </section>
      </div>
    </article>
  )
}
