// A file's versions in its preview (issue 37): the list (when, size, how each came), a link that
// shows one in place, its download, and the form that restores it as the newest version.
import { formatSize, rawHref, versionsHref } from './file-links.ts'

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

/** The version on show in the preview, as the history needs it. */
export interface ShownVersion {
  readonly uri: string
  readonly name: string
  readonly versionNo: number
  readonly old?: boolean | undefined
}

const ORIGINS = { upload: 'upload', import: 'import', compile: 'compile (generated page)', restore: 'restore' } as const

/** A link that shows one version of a file in the pane (in place, its URL pushed). */
export function VersionLink({ uri, version, children, class: className }: { uri: string; version?: number | undefined; children: unknown; class?: string }) {
  const query = `uri=${encodeURIComponent(uri)}${version === undefined ? '' : `&version=${version}`}`
  return (
    <a class={className} href={`/workspace?${query}`} hx-get={`/workspace/content?${query}`} hx-target="#content" hx-swap="outerHTML" hx-push-url={`/workspace?${query}`}>
      {children}
    </a>
  )
}

/** Restores a version as the newest one (a plain form: the answer is the file's page with a notice). */
export function RestoreButton({ uri, version, csrfToken, quiet = false }: { uri: string; version: number; csrfToken: string | undefined; quiet?: boolean }) {
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
export function VersionHistoryList({ preview, history, csrfToken }: { preview: ShownVersion; history: VersionHistory; csrfToken: string | undefined }) {
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
