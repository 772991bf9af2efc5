// Administration → Backups (src/http/admin-backups.routes.ts): the schedule (`backup.schedule`,
// `backup.dir`, `backup.keep` in the config file), the next run, and the last runs with their file,
// size and time — a failed last run at the top, in red, with its reason.
import type { NavLink } from '../layout.tsx'
import { AdminFrame } from './admin-frame.tsx'
import { formatTime } from './settings.tsx'

export const ADMIN_BACKUPS_PATH = '/admin/backups'

export interface BackupRunRow {
  readonly startedAt: Date
  readonly status: 'running' | 'succeeded' | 'failed'
  readonly file: string
  readonly bytes: number | null
  readonly durationMs: number | null
  readonly error: string | null
}

export interface AdminBackupsProps {
  readonly login: string
  readonly csrfToken: string | undefined
  readonly nav?: ReadonlyArray<NavLink> | undefined
  readonly schedule: string | undefined
  readonly dir: string
  readonly keep: number
  readonly nextRun: Date | undefined
  readonly runs: ReadonlyArray<BackupRunRow>
}

const size = (bytes: number | null) => (bytes === null ? '' : bytes < 1024 * 1024 ? `${Math.max(1, Math.round(bytes / 1024))} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`)
const seconds = (ms: number | null) => (ms === null ? '' : `${(ms / 1000).toFixed(1)} s`)
const STATUS: Record<BackupRunRow['status'], string> = { running: 'running', succeeded: 'written', failed: 'FAILED' }

export function AdminBackupsPage(props: AdminBackupsProps) {
  const lastFinished = props.runs.find((run) => run.status !== 'running')
  return (
    <AdminFrame title="Backups" current="backups" login={props.login} csrfToken={props.csrfToken} nav={props.nav}>
      <link rel="stylesheet" href="/static/retrieval-settings.css" />
      <link rel="stylesheet" href="/static/admin-backups.css" />
      <h1>Backups</h1>
      {lastFinished?.status === 'failed' ? (
        <p class="error" role="alert" data-testid="backup-failing">
          The last scheduled backup failed ({formatTime(lastFinished.startedAt)}): {lastFinished.error}
        </p>
      ) : null}
      <section class="settings-card" aria-labelledby="schedule-heading">
        <h2 id="schedule-heading">Schedule</h2>
        {props.schedule ? (
          <dl class="cache-facts">
            <dt>Schedule (UTC)</dt>
            <dd>
              <code data-testid="backup-schedule">{props.schedule}</code>
            </dd>
            <dt>Next run</dt>
            <dd data-testid="backup-next">{props.nextRun ? formatTime(props.nextRun) : '—'}</dd>
            <dt>Folder</dt>
            <dd>
              <code>{props.dir}</code>
            </dd>
            <dt>Kept</dt>
            <dd>the newest {props.keep}</dd>
          </dl>
        ) : (
          <p class="muted" data-testid="backup-unscheduled">
            No scheduled backups: set <code>backup.schedule</code> (a cron expression in UTC), and optionally <code>backup.dir</code> and <code>backup.keep</code>, in the
            config file.
          </p>
        )}
        <p class="muted">
          A backup by hand, while the server runs: <code>npx knowagent backup ./knowagent.backup</code>. A restore goes into an empty data dir:{' '}
          <code>KNOWAGENT_DATA_DIR=.knowagent-restored npx knowagent restore ./knowagent.backup</code>.
        </p>
      </section>
      <section class="settings-card" aria-labelledby="runs-heading">
        <h2 id="runs-heading">Last runs</h2>
        {props.runs.length === 0 ? (
          <p class="muted">None yet.</p>
        ) : (
          <div class="table-scroll">
            <table class="accounts backup-runs">
              <thead>
                <tr>
                  <th scope="col">Started</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">File</th>
                  <th scope="col">Size</th>
                  <th scope="col">Took</th>
                </tr>
              </thead>
              <tbody>
                {props.runs.map((run) => (
                  <tr class={run.status === 'failed' ? 'failed' : undefined}>
                    <td data-label="Started">{formatTime(run.startedAt)}</td>
                    <td data-label="Outcome">{run.status === 'failed' ? <strong class="error-text">{`${STATUS.failed}: ${run.error ?? ''}`}</strong> : STATUS[run.status]}</td>
                    <td data-label="File">
                      <code>{run.file}</code>
                    </td>
                    <td data-label="Size">{size(run.bytes)}</td>
                    <td data-label="Took">{seconds(run.durationMs)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </AdminFrame>
  )
}
