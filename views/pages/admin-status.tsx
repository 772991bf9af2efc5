// Administration → Status: the service at a glance for whoever runs it. The panel reloads itself
// every 5 s (htmx polling its fragment); codes, times and ids only, never what a user wrote.
import type { ServiceStatus } from '../../src/effects/observability/service-status.ts'
import type { NavLink } from '../layout.tsx'
import { AdminFrame } from './admin-frame.tsx'

export const ADMIN_STATUS_PATH = '/admin/status'
export const ADMIN_STATUS_PANEL_PATH = '/admin/status/panel'

export function StatusPanel({ status }: { status: ServiceStatus }) {
  const total = status.turnsLastHour.reduce((sum, row) => sum + row.turns, 0)
  return (
    <section id="status-panel" class="status-panel" hx-get={ADMIN_STATUS_PANEL_PATH} hx-trigger="every 5s" hx-swap="outerHTML" aria-live="polite">
      <dl class="status-figures">
        <div>
          <dt>Open streams (this instance)</dt>
          <dd data-figure="open-streams">{status.metricsOn ? status.openStreams : '—'}</dd>
        </div>
        <div>
          <dt>Turns in the last hour</dt>
          <dd data-figure="turns-last-hour">{total}</dd>
        </div>
        <div>
          <dt>Time to first delta, p50 / p95 (this instance, last hour)</dt>
          <dd data-figure="first-delta">{status.firstDeltaMs ? `${status.firstDeltaMs.p50} ms / ${status.firstDeltaMs.p95} ms (${status.firstDeltaMs.samples} ${status.firstDeltaMs.samples === 1 ? 'turn' : 'turns'})` : '—'}</dd>
        </div>
        <div>
          <dt>Compile jobs queued / running</dt>
          <dd data-figure="jobs">
            {status.jobs.queued} / {status.jobs.running}
          </dd>
        </div>
      </dl>
      {status.metricsOn ? null : (
        <p class="notice" role="note">
          Metrics are off (<code>metrics.enabled</code> in the config file): open streams and time to first delta are counted only when they are on.
        </p>
      )}
      <h2>Turns in the last hour, by outcome</h2>
      {status.turnsLastHour.length === 0 ? (
        <p class="empty">No turns in the last hour.</p>
      ) : (
        <table class="status-table" data-table="turns-by-outcome">
          <thead>
            <tr>
              <th scope="col">Outcome</th>
              <th scope="col">Turns</th>
            </tr>
          </thead>
          <tbody>
            {status.turnsLastHour.map((row) => (
              <tr>
                <td>{row.status}</td>
                <td>{row.turns}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Last errors</h2>
      {status.recentErrors.length === 0 ? (
        <p class="empty">No failed turns or jobs.</p>
      ) : (
        <table class="status-table" data-table="recent-errors">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">What</th>
              <th scope="col">Code</th>
              <th scope="col">Id</th>
            </tr>
          </thead>
          <tbody>
            {status.recentErrors.map((error) => (
              <tr>
                <td>
                  <time datetime={error.at.toISOString()}>{error.at.toISOString().replace('T', ' ').slice(0, 19)} UTC</time>
                </td>
                <td>{error.kind}</td>
                <td>
                  <code>{error.code}</code>
                </td>
                <td>
                  <code>{error.id}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}

export function AdminStatusPage({ login, csrfToken, nav, status }: { login: string; csrfToken: string | undefined; nav: ReadonlyArray<NavLink>; status: ServiceStatus }) {
  return (
    <AdminFrame title="Status" current="status" csrfToken={csrfToken} login={login} nav={nav}>
      <link rel="stylesheet" href="/static/admin-status.css" />
      <div class="settings-page">
        <h1>Status</h1>
        <p class="settings-lead">
          The service now: turns and errors from every instance on this database, open streams and time to first delta from this one. Updated every 5 seconds. For dashboards and alerts, scrape{' '}
          <code>/metrics</code> (docs/operations.md).
        </p>
        <StatusPanel status={status} />
      </div>
    </AdminFrame>
  )
}
