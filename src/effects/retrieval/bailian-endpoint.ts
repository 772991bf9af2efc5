// Where the Bailian knowledge API lives. `endpointHost` is a template: `{workspaceId}` is replaced
// by the resolved workspace id; without a scheme it means https. A full URL (with a path prefix)
// points it at a proxy, a private deployment or the test fake.

export const DEFAULT_ENDPOINT_HOST = '{workspaceId}.cn-beijing.maas.aliyuncs.com'

export const BAILIAN_PATHS = {
  list: '/api/v1/indices/rag/app/list',
  search: '/api/v1/indices/knowledge/search',
  chat: '/api/v2/apps/knowledge/chat',
} as const

/** The workspace id becomes a DNS label (or a path segment): anything else is refused. */
export const WORKSPACE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/

export function isValidWorkspaceId(value: string): boolean {
  return WORKSPACE_ID_PATTERN.test(value)
}

/** The absolute URL of one operation; the workspace id must already be valid. */
export function bailianUrl({
  endpointHost,
  workspaceId,
  path,
}: {
  readonly endpointHost: string
  readonly workspaceId: string
  readonly path: string
}): string {
  if (!isValidWorkspaceId(workspaceId)) throw new Error('invalid workspace id')
  const base = endpointHost.replaceAll('{workspaceId}', workspaceId).replace(/\/+$/, '')
  return `${/^https?:\/\//i.test(base) ? base : `https://${base}`}${path}`
}
