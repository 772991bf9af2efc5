// The Trash (issue 37): what was deleted (name, kind, how many files a folder held), from where,
// when, and when it will be deleted for good; Restore puts it back where it was, Delete forever and
// Empty trash ask first. Plain forms (they work without scripts): each answers with a redirect —
// a restore to the restored node, the others back here — and its notice.
import type { TrashEntry } from '../../src/effects/workspace/trash.ts'
import { Layout, type NavLink, TRASH_PATH } from '../layout.tsx'
import { describeCounts, formatPurgeDate } from '../partials/file-dialogs.tsx'
import { formatSize } from '../partials/file-links.ts'
import { pageHref } from '../partials/tree.tsx'
import { PageMessages } from './settings.tsx'

export interface TrashPageProps {
  readonly login: string
  readonly csrfToken: string | undefined
  readonly nav?: ReadonlyArray<NavLink> | undefined
  readonly items: ReadonlyArray<TrashEntry>
  /** Items and bytes in the whole Trash (the page lists the most recent ones). */
  readonly total: number
  readonly bytes: number
  readonly retentionDays: number
  readonly notice?: string | undefined
  readonly error?: string | undefined
}

const minute = (at: Date) => at.toISOString().slice(0, 16).replace('T', ' ')

function Csrf({ token }: { token: string | undefined }) {
  return <input type="hidden" name="_csrf" value={token ?? ''} />
}

/** A destructive action behind a second click: the summary opens the question, its button does it. */
function Confirm({ label, action, question, submit, csrfToken, id, class: className }: { label: string; action: string; question: string; submit: string; csrfToken: string | undefined; id?: string; class?: string }) {
  return (
    <details class={`confirm ${className ?? ''}`.trim()}>
      <summary class="danger-text">{label}</summary>
      <form class="confirm-body" method="post" action={action}>
        <Csrf token={csrfToken} />
        {id === undefined ? null : <input type="hidden" name="id" value={id} />}
        <p>{question}</p>
        <button type="submit" class="danger small">
          {submit}
        </button>
      </form>
    </details>
  )
}

function TrashRow({ item, csrfToken }: { item: TrashEntry; csrfToken: string | undefined }) {
  const what = item.kind === 'directory' ? `${item.name}/` : item.name
  const held = item.kind === 'directory' ? describeCounts(item) : formatSize(item.bytes)
  return (
    <tr data-trash-id={item.id}>
      <td class="trash-name">
        <span class={item.kind === 'directory' ? 'icon folder' : 'icon file'} aria-hidden="true"></span>
        <span>
          <strong>{what}</strong>
          <span class="meta">
            {' '}
            {item.kind === 'directory' ? 'folder' : 'file'}, {held}
            {item.summaries > 0 ? `, with ${item.summaries === 1 ? 'its summary' : `${item.summaries} summaries`}` : ''}
          </span>
        </span>
      </td>
      <td class="trash-from">
        {/* where it goes back to (that folder may be gone too: a restore makes it again) */}
        <a class="uri" href={pageHref(item.folderUri)}>
          {item.folderUri}
        </a>
      </td>
      <td class="num">{minute(item.deletedAt)}</td>
      <td class="num">{formatPurgeDate(item.purgeAt)}</td>
      <td>
        <div class="trash-actions">
          <form method="post" action={`${TRASH_PATH}/restore`}>
            <Csrf token={csrfToken} />
            <input type="hidden" name="id" value={item.id} />
            <button type="submit" class="small" aria-label={`Restore ${what} to ${item.folderUri}`}>
              Restore
            </button>
          </form>
          <Confirm
            label="Delete forever…"
            action={`${TRASH_PATH}/delete`}
            id={item.id}
            question={`Delete ${what} and every version of ${item.kind === 'directory' ? 'its files' : 'it'} for good? This cannot be undone.`}
            submit="Delete forever"
            csrfToken={csrfToken}
          />
        </div>
      </td>
    </tr>
  )
}

export function TrashPage({ login, csrfToken, nav, items, total, bytes, retentionDays, notice, error }: TrashPageProps) {
  return (
    <Layout title="Trash" csrfToken={csrfToken} login={login} nav={nav}>
      <div class="trash-page">
        <header class="tasks-head">
          <h1>Trash</h1>
          <a href={pageHref('kb://me/')}>Back to the workspace</a>
        </header>
        <p class="meta">
          Deleted files and folders stay here for {retentionDays} {retentionDays === 1 ? 'day' : 'days'}, with every version and the pages compiled from them, then they are deleted for
          good. Nothing here is listed, searched or read by KnowAgent. They still count towards your storage: emptying the Trash frees it.
        </p>
        <PageMessages notice={notice} error={error} />
        {total === 0 ? (
          <p class="trash-empty">The Trash is empty.</p>
        ) : (
          <>
            <div class="table-scroll">
              <table class="trash-items" aria-label="Deleted files and folders">
                <thead>
                  <tr>
                    <th scope="col">What</th>
                    <th scope="col">From</th>
                    <th scope="col">Deleted (UTC)</th>
                    <th scope="col">Deleted for good on</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((item) => (
                    <TrashRow item={item} csrfToken={csrfToken} />
                  ))}
                </tbody>
              </table>
            </div>
            {items.length < total ? <p class="meta">The {items.length} most recently deleted of {total} are listed; all of them are at the Trash API (docs/api.md).</p> : null}
            <Confirm
              class="empty-trash"
              label="Empty trash…"
              action={`${TRASH_PATH}/empty`}
              question={`Delete ${total === 1 ? 'the 1 item' : `all ${total} items`} in the Trash (${formatSize(bytes)}) for good? This cannot be undone.`}
              submit="Empty trash"
              csrfToken={csrfToken}
            />
          </>
        )}
      </div>
    </Layout>
  )
}
