// Where a file's bytes, versions and a folder's zip are fetched, and how a size reads: shared by
// the content pane and its parts (version history).

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

/** kb://users/demo/a/b/ as links: users/demo › a › b. */

export const rawHref = (uri: string, version?: number) => `/api/v1/workspace/raw?uri=${encodeURIComponent(uri)}${version === undefined ? '' : `&version=${version}`}`
export const versionsHref = (uri: string) => `/api/v1/workspace/versions?uri=${encodeURIComponent(uri)}`
export const exportHref = (uri: string) => `/api/v1/workspace/export?uri=${encodeURIComponent(uri)}`

/** What can be done with the node on show; buttons are handled by files.js (dialogs, uploads). */
