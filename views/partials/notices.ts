// Notices a redirect can ask a page to show (`/workspace?notice=uploaded&added=2`). Only these
// codes exist and the text is ours: a link cannot make the app display words of its choosing.
export const NOTICE_CODES = [
  'uploaded',
  'token_revoked',
  'token_already_revoked',
  'version_restored',
  'version_current',
  'trash_restored',
  'trash_restored_renamed',
  'trash_deleted',
  'trash_emptied',
] as const
export type NoticeCode = (typeof NOTICE_CODES)[number]

export interface UploadCounts {
  readonly added: number
  readonly updated: number
  readonly unchanged: number
  /** Files stored whose text could not be extracted. */
  readonly unparsed: number
}

const files = (n: number) => `${n} ${n === 1 ? 'file' : 'files'}`

export function noticeText({
  code,
  counts = { added: 0, updated: 0, unchanged: 0, unparsed: 0 },
  versions = { from: 0, as: 0 },
  name = '',
  items = 0,
}: {
  code: NoticeCode
  counts?: UploadCounts
  /** A restore's: the version restored and the version it is now (the same when it was the current one). */
  versions?: { readonly from: number; readonly as: number }
  /** A restore from the Trash: the restored node's name now (the page's own node, never the link's words). */
  name?: string
  /** Items deleted for good (Empty trash). */
  items?: number
}): string {
  switch (code) {
    case 'trash_restored':
      return 'Restored from the Trash, with its versions.'
    case 'trash_restored_renamed':
      return `Restored from the Trash as “${name}”: something else has its old name here now.`
    case 'trash_deleted':
      return 'Deleted for good.'
    case 'trash_emptied':
      return `The Trash is empty: ${items} ${items === 1 ? 'item' : 'items'} deleted for good.`
    case 'version_restored':
      return `Version ${versions.from} restored: it is now version ${versions.as}, the current one.`
    case 'version_current':
      return versions.from === versions.as
        ? `Version ${versions.from} is already the current version; nothing changed.`
        : `Version ${versions.from} has the same content as the current version ${versions.as}; nothing changed.`
    case 'token_revoked':
      return 'Token revoked: it stops working with the next request it is sent with.'
    case 'token_already_revoked':
      return 'That token was already revoked.'
    case 'uploaded': {
      const stored = `Upload stored: ${counts.added} added, ${counts.updated} updated, ${counts.unchanged} unchanged.`
      return counts.unparsed > 0
        ? `${stored} No text could be extracted from ${files(counts.unparsed)}; the raw bytes are kept and the preview says why.`
        : stored
    }
  }
  return code satisfies never
}

/** The query string of a redirect that shows the notice of an upload. */
export function uploadNoticeQuery(results: ReadonlyArray<{ outcome: 'added' | 'updated' | 'unchanged'; parse_error?: string | undefined }>): string {
  const count = (outcome: string) => results.filter((r) => r.outcome === outcome).length
  const params = new URLSearchParams({
    notice: 'uploaded',
    added: String(count('added')),
    updated: String(count('updated')),
    unchanged: String(count('unchanged')),
    unparsed: String(results.filter((r) => r.parse_error !== undefined).length),
  })
  return params.toString()
}
