// The task center (SPEC §7, §8): the caller's compile jobs, filtered by directory and status,
// with their running stage and progress, failure reason, cancel and retry — updated live.
import type { CompileJobView } from '../../src/effects/compile/compile-jobs-store.ts'
import { Layout, type NavLink } from '../layout.tsx'
import { JobTable } from '../partials/compile-jobs.tsx'

export const JOB_STATUS_FILTERS = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const

export interface TasksPageProps {
  readonly login: string
  readonly csrfToken: string | undefined
  readonly jobs: ReadonlyArray<CompileJobView>
  readonly total: number
  readonly directory: string | undefined
  readonly status: string | undefined
  readonly streamUrl: string
  /** The top bar's extra links (the retrieval settings when that feature runs), as every page has them. */
  readonly nav?: ReadonlyArray<NavLink> | undefined
}

export function TasksPage({ login, csrfToken, jobs, total, directory, status, streamUrl, nav }: TasksPageProps) {
  return (
    <Layout title="Task center" csrfToken={csrfToken} login={login} nav={nav} interactive moduleScript="/static/js/tasks.js">
      <div class="tasks-page">
        <header class="tasks-head">
          <h1>Task center</h1>
          <a href={directory ? `/workspace?uri=${encodeURIComponent(directory)}` : '/workspace'}>Back to the workspace</a>
        </header>
        <form class="tasks-filter" method="get" action="/tasks" role="search" aria-label="Filter jobs">
          <label>
            Directory
            <input type="text" name="directory" value={directory ?? ''} placeholder="kb://me/notes/" />
          </label>
          <label>
            Status
            <select name="status">
              <option value="" selected={!status}>
                any
              </option>
              {JOB_STATUS_FILTERS.map((value) => (
                <option value={value} selected={status === value}>
                  {value}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Filter</button>
        </form>
        {jobs.length < total ? <p class="muted">The {jobs.length} most recent of {total} jobs are shown; narrow the filter to see others.</p> : null}
        <JobTable jobs={jobs} streamUrl={streamUrl} caption="Compile jobs" empty="No compile jobs match." />
      </div>
    </Layout>
  )
}
