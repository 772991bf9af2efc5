// The workspace as MCP resources (docs/mcp.md): every file and folder of the token's owner under
// its canonical kb:// URI. `resources/list` pages through the whole tree in path order (keyset
// paging: an opaque cursor holds the last path shown); `resources/read` gives a folder's first
// page of entries (the ls tool's answer), a file's first page of text and, for a file that is not
// text, its original bytes (base64) — one version, read by its id, never a mix of two.
import * as Effect from 'effect/Effect'
import { ErrorCode, McpError, type ListResourcesResult, type ReadResourceResult, type ResourceTemplate } from '@modelcontextprotocol/sdk/types.js'
import type { User } from '../effects/auth/users.ts'
import { LS_MAX_LIMIT } from '../effects/tools/ls.tool.ts'
import { readCurrent, readRawSlice } from '../effects/workspace/file-contents.ts'
import { resolveNode } from '../effects/workspace/resolve.ts'
import { type WorkspaceNode } from '../effects/workspace/store.ts'
import { listNodesAfter } from '../effects/workspace/folder-listing.ts'
import { formatKbUri, parseKbUri } from '../effects/workspace/uri.ts'
import { PAGE_MAX_LIMIT, pageText } from '../effects/workspace/text-paging.ts'
import { isWorkspaceError } from '../effects/workspace/workspace-errors.ts'
import type { AppContext } from './app-context.ts'

export const RESOURCES_PER_PAGE = 100
/** A file's original bytes go out as base64 up to this size (the SDK's own bound on one message); larger ones: GET raw. */
export const RESOURCE_BLOB_MAX_BYTES = 4 * 1024 * 1024
/** What a folder is listed as (the freedesktop name); reading one gives its entries as JSON. */
export const DIRECTORY_MIME = 'inode/directory'
/** MCP's "resource not found" (the specification's error code for resources/read). */
export const RESOURCE_NOT_FOUND = -32002

export const RESOURCE_TEMPLATES: ResourceTemplate[] = [
  {
    uriTemplate: 'kb://users/{login}/{+path}',
    name: 'workspace-node',
    title: 'A file or folder of your workspace',
    description:
      'Any file or folder of your own workspace: login is yours, path its place (folders end with "/"). kb://me/{+path} names the same node.',
  },
]

const MAX_CURSOR_CHARS = 6_000

function encodeCursor(path: string): string {
  return Buffer.from(JSON.stringify({ after: path }), 'utf8').toString('base64url')
}

function decodeCursor(cursor: string): string {
  const invalid = () => new McpError(ErrorCode.InvalidParams, 'invalid cursor: pass back the nextCursor of the previous page as it was', { code: 'invalid_cursor' })
  if (cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]*$/.test(cursor)) throw invalid()
  let decoded: unknown
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    throw invalid()
  }
  const after = (decoded as { after?: unknown } | null)?.after
  if (typeof after !== 'string' || after.includes('\u0000')) throw invalid()
  return after
}

const describe = (node: WorkspaceNode) => ({
  uri: node.uri,
  name: node.name,
  title: node.path,
  mimeType: node.kind === 'directory' ? DIRECTORY_MIME : (node.mime ?? 'application/octet-stream'),
  ...(node.kind === 'file' ? { size: node.size } : {}),
})

export async function listResources(ctx: AppContext, { user, cursor }: { user: User; cursor: string | undefined }): Promise<ListResourcesResult> {
  const afterPath = cursor === undefined ? '' : decodeCursor(cursor)
  const nodes = await listNodesAfter(ctx.db, { owner: user, afterPath, limit: RESOURCES_PER_PAGE + 1 })
  const page = nodes.slice(0, RESOURCES_PER_PAGE)
  const last = page.at(-1)
  return { resources: page.map(describe), ...(nodes.length > RESOURCES_PER_PAGE && last ? { nextCursor: encodeCursor(last.path) } : {}) }
}

/** A workspace failure as the JSON-RPC error of resources/read: not found is MCP's -32002, a bad or foreign URI invalid params. */
function resourceError(error: unknown): unknown {
  if (!isWorkspaceError(error)) return error
  const code = error.code === 'not_found' ? RESOURCE_NOT_FOUND : ErrorCode.InvalidParams
  return new McpError(code, error.message, { code: error.code })
}

/** The file `uri` names, for a subscription: a folder has no versions (invalid params). */
export async function resolveFile(ctx: AppContext, { user, uri }: { user: User; uri: string }): Promise<WorkspaceNode> {
  let node: WorkspaceNode
  try {
    ;({ node } = await resolveNode(ctx.db, { caller: user, uri }))
  } catch (error) {
    throw resourceError(error)
  }
  if (node.kind !== 'file') throw new McpError(ErrorCode.InvalidParams, `${node.uri} is a folder: only a file has new versions to follow`, { code: 'is_directory' })
  return node
}

/** A file's canonical URI, as a subscription recorded it (the file may be gone since). */
export function canonicalFileUri({ user, uri }: { user: User; uri: string }): string {
  try {
    return formatKbUri({ ...parseKbUri({ uri, callerLogin: user.login }), directory: false })
  } catch (error) {
    throw resourceError(error)
  }
}

const isTextMime = (mime: string): boolean => mime.startsWith('text/')

export async function readResource(ctx: AppContext, { user, uri, signal }: { user: User; uri: string; signal: AbortSignal }): Promise<ReadResourceResult> {
  let node: WorkspaceNode
  try {
    ;({ node } = await resolveNode(ctx.db, { caller: user, uri }))
  } catch (error) {
    throw resourceError(error)
  }
  if (node.kind === 'directory') {
    const context = { db: ctx.db, caller: user, scope: { login: user.login, segments: [] }, progress: () => {} }
    const outcome = await Effect.runPromise(ctx.tools.run({ name: 'ls', args: { uri: node.uri, limit: LS_MAX_LIMIT }, context }), { signal })
    if (!outcome.ok) throw new McpError(ErrorCode.InvalidParams, outcome.error?.message ?? outcome.summary, { code: outcome.error?.code })
    return { contents: [{ uri: node.uri, mimeType: 'application/json', text: outcome.content }] }
  }
  let content: Awaited<ReturnType<typeof readCurrent>>
  try {
    content = await readCurrent(ctx.db, user, node)
  } catch (error) {
    throw resourceError(error)
  }
  const contents: ReadResourceResult['contents'] = []
  if (content.parseStatus === 'parsed' && content.body !== null) {
    const page = pageText({ text: content.body, offset: 0, limit: PAGE_MAX_LIMIT })
    const note = page.next_offset === null ? undefined : `the first ${PAGE_MAX_LIMIT} of ${page.total} code points; the read tool continues from next_offset`
    contents.push({
      uri: node.uri,
      mimeType: isTextMime(content.mime) ? content.mime : 'text/plain',
      text: page.text,
      _meta: { offset: page.offset, next_offset: page.next_offset, total: page.total, ...(note ? { note } : {}) },
    })
  }
  if (!isTextMime(content.mime) || contents.length === 0) {
    if (content.size <= RESOURCE_BLOB_MAX_BYTES) {
      const bytes = content.size === 0 ? new Uint8Array() : await readRawSlice(ctx.db, { versionId: content.versionId, offset: 0, length: content.size })
      if (bytes === undefined) throw new McpError(RESOURCE_NOT_FOUND, `${node.uri} does not exist (it may have been deleted or moved)`, { code: 'not_found' })
      contents.push({ uri: node.uri, mimeType: content.mime, blob: Buffer.from(bytes).toString('base64') })
    } else if (contents.length === 0) {
      throw new McpError(ErrorCode.InvalidParams, `${node.uri} is ${content.size} bytes and has no text; resources carry original bytes up to ${RESOURCE_BLOB_MAX_BYTES} (download it with GET /api/v1/workspace/raw?uri=)`, {
        code: 'payload_too_large',
      })
    }
  }
  return { contents }
}
