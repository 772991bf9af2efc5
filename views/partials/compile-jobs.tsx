// Compile jobs as table rows (the task center and the compile dialog): status, running stage with
// progress, failure reason, cancel and retry. Rows are replaced in place (`hx-swap-oob`) by the
// live stream, so one row component serves the first render, button answers and every update.
import type { CompileJobView, ProducedPage } from '../../src/effects/compile/compile-jobs-store.ts'
import { pageHref } from './tree.tsx'

export const jobRowId = (id: string) => `job-${id}`

const STAGE_LABEL: Readonly<Record<string, string>> = {
  queued: 'claimed',
  parsing: 'parsing (L2)',
  summarising: 'summarising',
  overview: 'overview (L1)',
  abstract: 'abstract (L0)',
  publishing: 'publishing',
}

export function statusLabel(job: CompileJobView): string {
  if (job.status === 'failed' && job.dead_lettered) return 'failed'
  if (job.status === 'queued' && job.failure) return 'queued for retry'
  return job.status
}

function fileName(uri: string): string {
  return decodeURIComponent(uri.split('/').at(-1) ?? uri)
}

function Progress({ job }: { job: CompileJobView }) {
  const progress = job.progress
  if (job.status !== 'running' || !progress) {
    return progress && job.status === 'succeeded' ? (
      <span class="muted">
        {progress.filesDone} file{progress.filesDone === 1 ? '' : 's'} · {progress.callsUsed} model call{progress.callsUsed === 1 ? '' : 's'}
      </span>
    ) : (
      <span class="muted">—</span>
    )
  }
  const percent = progress.filesTotal === 0 ? 0 : Math.round((progress.filesDone / progress.filesTotal) * 100)
  return (
    <span class="job-progress">
      <span class="job-stage" data-stage={progress.stage}>
        {STAGE_LABEL[progress.stage] ?? progress.stage}
      </span>
      <progress max={100} value={percent} aria-label={`files done: ${progress.filesDone} of ${progress.filesTotal}`}></progress>
      <span class="muted">
        {progress.filesDone}/{progress.filesTotal} files · {progress.callsUsed}/{progress.callBudget} calls
      </span>
    </span>
  )
}

function Failure({ job }: { job: CompileJobView }) {
  const failure = job.failure
  if (!failure) return null
  return (
    <div class="job-failure" role={job.status === 'failed' ? 'alert' : undefined}>
      <strong>
        {failure.stage} · {failure.code}
      </strong>{' '}
      <span>{failure.message}</span>{' '}
      <span class="muted">
        (attempt {failure.attempt}
        {job.max_attempts ? ` of ${job.max_attempts}` : ''}
        {job.status === 'queued' ? ', will be retried' : job.dead_lettered ? ', no attempt left' : ''})
      </span>
      {failure.bodyReadable ? <p class="muted job-note">The parsed text of the files is saved and readable; only the summaries failed.</p> : null}
    </div>
  )
}

const PAGE_LABEL: Readonly<Record<ProducedPage['kind'], string>> = { overview: 'overview (L1)', abstract: 'abstract (L0)', summary: 'summary' }

/** A page the job produced: a link to where it is now (saying so when it moved), or that it was deleted. */
function ProducedLink({ page }: { page: ProducedPage }) {
  const name = fileName(page.uri ?? page.published)
  const label = page.kind === 'summary' ? `${PAGE_LABEL.summary} ${name}` : PAGE_LABEL[page.kind]
  if (page.uri === null) {
    return (
      <li data-kind={page.kind} data-state="deleted" title={page.published}>
        <span class="muted">{label}: deleted</span>
      </li>
    )
  }
  const moved = page.uri !== page.published
  const folderOf = (uri: string) => uri.slice(0, uri.lastIndexOf('/') + 1)
  return (
    <li data-kind={page.kind} data-state={moved ? 'moved' : 'here'}>
      <a href={pageHref(page.uri)} title={page.uri}>
        {label}
      </a>
      {moved ? <span class="muted"> ({folderOf(page.uri) === folderOf(page.published) ? `renamed from ${fileName(page.published)}` : `moved from ${page.published}`})</span> : null}
    </li>
  )
}

/** The pages a succeeded job produced, where they are now. */
function ProducedPages({ job }: { job: CompileJobView }) {
  if (job.status !== 'succeeded') return null
  const produced = job.produced
  const legacy = produced === null ? (job.result?.artifacts ?? []) : [] // a job that succeeded before pages were followed
  if ((produced ?? []).length === 0 && legacy.length === 0) return null
  return (
    <div class="job-pages">
      <span class="muted">{produced === null ? 'Pages (where they were published):' : 'Pages:'}</span>{' '}
      <ul class="inline-list">
        {produced !== null
          ? produced.map((page) => <ProducedLink page={page} />)
          : legacy.map((uri) => (
              <li>
                <a href={pageHref(uri)} title={uri}>
                  {fileName(uri)}
                </a>
              </li>
            ))}
      </ul>
    </div>
  )
}

/** The files a job left out, each with the reason. */
function Skipped({ job }: { job: CompileJobView }) {
  const skipped = job.result?.skipped ?? []
  if (skipped.length === 0) return null
  return (
    <div class="job-skipped">
      <span class="muted">Skipped:</span>
      <ul>
        {skipped.map((file) => (
          <li data-uri={file.uri}>
            <span title={file.uri}>{fileName(file.uri)}</span> — {file.reason}
          </li>
        ))}
      </ul>
    </div>
  )
}

export function JobRow({ job, oob }: { job: CompileJobView; oob?: string | undefined }) {
  const active = job.status === 'queued' || job.status === 'running'
  const retryable = job.status === 'failed' || job.status === 'cancelled'
  const configuration = job.configuration
  return (
    <tr id={jobRowId(job.id)} class={`job status-${job.status}`} data-job-id={job.id} data-status={job.status} data-stage={job.status === 'running' ? (job.progress?.stage ?? '') : ''} hx-swap-oob={oob}>
      <td class="job-what">
        <a href={`/workspace?uri=${encodeURIComponent(job.directory_uri)}`}>{job.directory_uri}</a>
        <div class="muted job-files" title={job.files.map((file) => file.uri).join('\n')}>
          {job.files.length} file{job.files.length === 1 ? '' : 's'}: {job.files.slice(0, 3).map((file) => fileName(file.uri)).join(', ')}
          {job.files.length > 3 ? ` and ${job.files.length - 3} more` : ''}
        </div>
        {configuration ? (
          <div class="muted job-config">
            {configuration.channel === 'cli' ? `CLI ${configuration.profile_id} · ` : ''}
            {configuration.model_id} · {configuration.reasoning_level || 'no reasoning level'} · budget {configuration.call_budget} · {configuration.timeout_seconds} s
            {configuration.skill ? ` · skill ${configuration.skill.ref}` : ''}
          </div>
        ) : null}
        <ProducedPages job={job} />
      </td>
      <td class="job-status-cell">
        <span class={`job-badge ${job.status}`}>{statusLabel(job)}</span>
      </td>
      <td>
        <Progress job={job} />
        <Failure job={job} />
        <Skipped job={job} />
      </td>
      <td class="job-actions">
        {active ? (
          <button type="button" class="small" hx-post={`/tasks/${job.id}/cancel`} hx-target={`#${jobRowId(job.id)}`} hx-swap="outerHTML" aria-label={`Cancel job ${job.id.slice(0, 8)}`}>
            Cancel
          </button>
        ) : null}
        {retryable ? (
          <button type="button" class="small" hx-post={`/tasks/${job.id}/retry`} hx-target={`#${jobRowId(job.id)}`} hx-swap="outerHTML" aria-label={`Retry job ${job.id.slice(0, 8)}`}>
            Retry
          </button>
        ) : null}
      </td>
    </tr>
  )
}

/** A refusal of a row action (cancel, retry), shown in the row's place until the next update. */
export function JobRowNotice({ job, message }: { job: CompileJobView; message: string }) {
  return (
    <tr id={jobRowId(job.id)} class={`job status-${job.status}`} data-job-id={job.id} data-status={job.status}>
      <td colspan={4}>
        <p class="job-failure" role="alert">
          {message}
        </p>
      </td>
    </tr>
  )
}

export function JobRows({ jobs }: { jobs: ReadonlyArray<CompileJobView> }) {
  return (
    <>
      {jobs.map((job) => (
        <JobRow job={job} />
      ))}
    </>
  )
}

/**
 * The live stream's last message when the session that opened it is gone (signed out, expired):
 * the table closes its stream on it instead of reopening it (`hx-sse:close`).
 */
export const JOB_STREAM_REVOKED_EVENT = 'signed-out'

/**
 * The job table; its body connects to the live stream, whose first message re-renders the rows.
 * The caption's status is the script's to write (views/static/js/live-status.js): it says
 * "updated live" only while the stream is open, so as served (before any stream) it says nothing.
 */
export function JobTable({ jobs, streamUrl, caption, empty }: { jobs: ReadonlyArray<CompileJobView>; streamUrl: string; caption: string; empty: string }) {
  return (
    <table class="entries jobs">
      <caption class="muted">
        {caption} <span class="live-status" aria-live="polite"></span>
      </caption>
      <thead>
        <tr>
          <th scope="col">Directory and files</th>
          <th scope="col">Status</th>
          <th scope="col">Stage, progress, reason</th>
          <th scope="col">
            <span class="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody id="job-rows" hx-sse:connect={streamUrl} hx-sse:close={JOB_STREAM_REVOKED_EVENT} data-empty={empty}>
        <JobRows jobs={jobs} />
      </tbody>
    </table>
  )
}
