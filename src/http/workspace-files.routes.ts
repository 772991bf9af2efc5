// File management and the workspace-wide search (issue 14), for programs and for the page:
//   POST   /api/v1/workspace/directory   {uri (a folder), name}        → 201 the new folder
//   POST   /api/v1/workspace/move        {uri, to?, name?}             → 200 where it is now (a rename: name only)
//   DELETE /api/v1/workspace/node?uri=                                 → 200 what went to the Trash, and until when
//   GET    /api/v1/workspace/search?q=&offset=&limit=                  → 200 ranked hits
//   GET    /workspace/files/{new-folder,rename,move,delete}?uri=       the dialog's form (HTML)
//   POST   /workspace/files/{new-folder,rename,move,delete}            the change, answered in the dialog
//   GET    /workspace/search?q=&offset=                                the search box's results (HTML)
//   GET    /workspace/tree/whole?uri=                                  the whole tree down to a node (HTML)
// Scoped like everything else (the caller's own tree; another user's URI is `outside_scope`);
// cookie sessions send the CSRF token on every change; names follow the one name rule.
import { Router, type Request, type Response } from 'express'
import { formBody } from './body-limit.ts'
import * as Schema from 'effect/Schema'
import type { User } from '../effects/auth/users.ts'
import { deleteConsequences } from '../effects/compile/source-changes.ts'
import { createDirectory, listMoveDestinations, moveNode, subtreeCounts } from '../effects/workspace/manage.ts'
import { moveToTrash } from '../effects/workspace/trash.ts'
import { resolveNode } from '../effects/workspace/resolve.ts'
import { searchWorkspace, SEARCH_MAX_LIMIT, SEARCH_MAX_OFFSET } from '../effects/workspace/search-index.ts'
import { getNode, type WorkspaceNode } from '../effects/workspace/store.ts'
import { pathToSegments } from '../effects/workspace/uri.ts'
import {
  DeleteForm,
  describeCounts,
  FilesDone,
  formatPurgeDate,
  FilesError,
  MoveForm,
  NewFolderForm,
  RenameForm,
  type FilesChange,
  type NodeSummary,
} from '../../views/partials/file-dialogs.tsx'
import { SearchResults } from '../../views/partials/search-box.tsx'
import { WorkspaceTree } from '../../views/partials/tree.tsx'
import { renderFragment } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { requireAuth, requireCsrf } from './authenticate.ts'
import { decodeBody } from './decode-request.ts'
import { describeError } from './error-handler.ts'
import { fragmentErrorHandler, redirectHtmxToSignIn } from './fragment-errors.ts'
import { badRequest } from './http-errors.ts'
import { buildTree, directoryOf } from './workspace-listing.ts'
import { jsonBody } from './json-body.ts'

const MOVE_DESTINATIONS = 500
const Uri = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4096))
const Name = Schema.String.check(Schema.isMaxLength(1024))

const NewFolderBody = Schema.Struct({ uri: Uri, name: Name })
const MoveBody = Schema.Struct({ uri: Uri, to: Schema.optional(Uri), name: Schema.optional(Name) })
const NodeBody = Schema.Struct({ uri: Uri })

const summaryOf = (node: WorkspaceNode): NodeSummary => ({ uri: node.uri, name: node.name, kind: node.kind })

function queryString(req: Request, name: string, { required }: { required: boolean }): string | undefined {
  const value = req.query[name]
  if (value === undefined && !required) return undefined
  if (typeof value !== 'string') throw badRequest(`"${name}" must be a single string`, 'invalid_request')
  if (value.length > 4096) throw badRequest(`"${name}" is longer than 4096 characters`, 'invalid_request')
  return value
}

function queryInt(req: Request, name: string, { min = 0, max }: { min?: number; max: number }): number | undefined {
  const value = req.query[name]
  if (value === undefined) return undefined
  if (typeof value !== 'string' || !/^\d{1,6}$/.test(value) || Number(value) < min || Number(value) > max) {
    throw badRequest(`"${name}" must be a whole number from ${min} to ${max}`, 'invalid_request')
  }
  return Number(value)
}

export function workspaceFilesRoutes(ctx: AppContext): Router {
  const router = Router()
  router.use(['/workspace/files', '/workspace/search', '/workspace/tree/whole'], redirectHtmxToSignIn())
  router.use(['/workspace/files', '/workspace/search', '/workspace/tree/whole', '/api/v1/workspace'], requireAuth())
  router.use('/workspace/files', formBody({ limit: '16kb' }), requireCsrf())
  router.use(['/api/v1/workspace/directory', '/api/v1/workspace/move', '/api/v1/workspace/node'], ...jsonBody({ limit: '16kb', strict: false }), requireCsrf())

  const resolve = async (user: User, uri: string) => (await resolveNode(ctx.db, { caller: user, uri })).node
  const parentOf = (user: User, node: WorkspaceNode) => getNode(ctx.db, user, pathToSegments(node.path).slice(0, -1))

  async function newFolder(user: User, body: typeof NewFolderBody.Type) {
    const parent = await resolve(user, body.uri)
    return createDirectory(ctx.db, { owner: user, parent, name: body.name })
  }

  async function move(user: User, body: typeof MoveBody.Type) {
    if (body.to === undefined && body.name === undefined) throw badRequest('give "to" (a folder to move into), "name" (a new name), or both', 'invalid_request')
    const node = await resolve(user, body.uri)
    const destination = body.to === undefined ? await parentOf(user, node) : await resolve(user, body.to)
    return moveNode(ctx.db, { owner: user, node, destination, name: body.name })
  }

  async function remove(user: User, node: WorkspaceNode) {
    return moveToTrash(ctx.db, { owner: user, node, retentionDays: ctx.config.trashRetentionDays })
  }

  // ── JSON API ────────────────────────────────────────────────────────────────────────────

  router.post('/api/v1/workspace/directory', async (req, res) => {
    const folder = await newFolder(req.auth!.user, decodeBody(NewFolderBody, req.body))
    res.status(201).json({ uri: folder.uri, kind: folder.kind })
  })

  router.post('/api/v1/workspace/move', async (req, res) => {
    const moved = await move(req.auth!.user, decodeBody(MoveBody, req.body))
    res.json({ uri: moved.node.uri, from: moved.from, kind: moved.node.kind, moved: moved.moved })
  })

  router.delete('/api/v1/workspace/node', async (req, res) => {
    const user = req.auth!.user
    const deleted = await remove(user, await resolve(user, queryString(req, 'uri', { required: true })!))
    res.json({
      uri: deleted.uri,
      deleted: { files: deleted.files, directories: deleted.directories, summaries: deleted.summaries },
      trash: { id: deleted.trash.id, purge_at: deleted.trash.purgeAt.toISOString() },
      message: `Moved to the Trash until ${formatPurgeDate(deleted.trash.purgeAt)}, when it is deleted for good; restore it from there before then.`,
    })
  })

  router.get('/api/v1/workspace/search', async (req, res) => {
    const query = queryString(req, 'q', { required: true })!
    if (query.length > 200) throw badRequest('"q" is at most 200 characters', 'invalid_request')
    const page = await searchWorkspace(ctx.db, {
      owner: req.auth!.user,
      query,
      offset: queryInt(req, 'offset', { max: SEARCH_MAX_OFFSET }),
      limit: queryInt(req, 'limit', { min: 1, max: SEARCH_MAX_LIMIT }),
    })
    res.json({
      query: page.query,
      hits: page.hits.map(({ score: _score, ...hit }) => hit),
      offset: page.offset,
      next_offset: page.next_offset,
    })
  })

  // ── the page: dialogs, search results, the tree ────────────────────────────────────────

  const html = async (res: Response, element: Parameters<typeof renderFragment>[0], status = 200) =>
    res.status(status).type('html').send(await renderFragment(element))

  router.get('/workspace/files/new-folder', async (req, res) => {
    const node = await resolve(req.auth!.user, queryString(req, 'uri', { required: true })!)
    const folder = await directoryOf(ctx, req.auth!.user, node)
    await html(res, NewFolderForm({ parentUri: folder.uri }))
  })

  router.get('/workspace/files/rename', async (req, res) => {
    const node = await resolve(req.auth!.user, queryString(req, 'uri', { required: true })!)
    await html(res, RenameForm({ node: summaryOf(node) }))
  })

  async function moveForm(user: User, node: WorkspaceNode, error?: string) {
    const { folders, truncated } = await listMoveDestinations(ctx.db, { owner: user, exclude: node, limit: MOVE_DESTINATIONS })
    return MoveForm({ node: summaryOf(node), parentUri: (await parentOf(user, node)).uri, folders, truncated, error })
  }

  router.get('/workspace/files/move', async (req, res) => {
    const user = req.auth!.user
    await html(res, await moveForm(user, await resolve(user, queryString(req, 'uri', { required: true })!)))
  })

  async function deleteForm(user: User, node: WorkspaceNode, error?: string) {
    const [counts, consequences] = await Promise.all([subtreeCounts(ctx.db, user, node), deleteConsequences(ctx.db, user, node)])
    return DeleteForm({ node: summaryOf(node), counts, consequences, retentionDays: ctx.config.trashRetentionDays, error })
  }

  router.get('/workspace/files/delete', async (req, res) => {
    const user = req.auth!.user
    const node = await resolve(user, queryString(req, 'uri', { required: true })!)
    await html(res, await deleteForm(user, node))
  })

  const done = (res: Response, change: FilesChange) => html(res, FilesDone({ change }))

  /** A change that failed re-renders its form with the reason (the dialog stays open); a vanished node gets FilesError. */
  async function refused(req: Request, res: Response, error: unknown, form: () => Promise<Parameters<typeof renderFragment>[0]>): Promise<void> {
    const described = describeError(error)
    if (described.status >= 500) throw error
    let element: Parameters<typeof renderFragment>[0]
    try {
      element = await form()
    } catch {
      element = FilesError({ message: described.message })
    }
    await html(res, element, described.status)
  }

  router.post('/workspace/files/new-folder', async (req, res) => {
    const user = req.auth!.user
    const body = decodeBody(NewFolderBody, req.body)
    try {
      const folder = await newFolder(user, body)
      const parent = await parentOf(user, folder)
      await done(res, { action: 'new-folder', from: parent.uri, uri: folder.uri, message: `Folder ${folder.name} created in ${parent.uri}.` })
    } catch (error) {
      await refused(req, res, error, async () => NewFolderForm({ parentUri: body.uri, name: body.name, error: describeError(error).message }))
    }
  })

  router.post('/workspace/files/rename', async (req, res) => {
    const user = req.auth!.user
    const body = decodeBody(Schema.Struct({ uri: Uri, name: Name }), req.body)
    try {
      const moved = await move(user, body)
      await done(res, { action: 'rename', from: moved.from, uri: moved.node.uri, message: moved.moved === 0 ? 'The name is unchanged.' : `Renamed to ${moved.node.name}.` })
    } catch (error) {
      await refused(req, res, error, async () => RenameForm({ node: summaryOf(await resolve(user, body.uri)), name: body.name, error: describeError(error).message }))
    }
  })

  router.post('/workspace/files/move', async (req, res) => {
    const user = req.auth!.user
    const body = decodeBody(Schema.Struct({ uri: Uri, to: Uri }), req.body)
    try {
      const moved = await move(user, body)
      const where = (await parentOf(user, moved.node)).uri
      await done(res, { action: 'move', from: moved.from, uri: moved.node.uri, message: moved.moved === 0 ? `${moved.node.name} is already in ${where}.` : `Moved ${moved.node.name} to ${where}.` })
    } catch (error) {
      await refused(req, res, error, async () => moveForm(user, await resolve(user, body.uri), describeError(error).message))
    }
  })

  router.post('/workspace/files/delete', async (req, res) => {
    const user = req.auth!.user
    const body = decodeBody(NodeBody, req.body)
    try {
      const node = await resolve(user, body.uri)
      const parent = await parentOf(user, node)
      const deleted = await remove(user, node)
      const what = node.kind === 'directory' ? `the folder ${node.name} (${describeCounts(deleted)})` : `the file ${node.name}`
      const summaries = deleted.summaries === 0 ? '' : node.kind === 'file' ? ' and its summary' : `, and ${deleted.summaries === 1 ? '1 summary' : `${deleted.summaries} summaries`} of its files kept elsewhere,`
      await done(res, { action: 'delete', from: deleted.uri, uri: parent.uri, message: `Moved ${what}${summaries} to the Trash, until ${formatPurgeDate(deleted.trash.purgeAt)}.` })
    } catch (error) {
      await refused(req, res, error, async () => {
        return deleteForm(user, await resolve(user, body.uri), describeError(error).message)
      })
    }
  })

  router.get('/workspace/search', async (req, res) => {
    const query = queryString(req, 'q', { required: false }) ?? ''
    if (query.length > 200) throw badRequest('"q" is at most 200 characters', 'invalid_request') // the box's maxlength; never cut silently
    const page = await searchWorkspace(ctx.db, { owner: req.auth!.user, query, offset: queryInt(req, 'offset', { max: SEARCH_MAX_OFFSET }) })
    await html(res, SearchResults({ page }))
  })

  router.get('/workspace/tree/whole', async (req, res) => {
    const user = req.auth!.user
    const node = await resolve(user, queryString(req, 'uri', { required: false }) ?? 'kb://me/')
    const directory = await directoryOf(ctx, user, node)
    const root = await getNode(ctx.db, user, [])
    await html(res, WorkspaceTree({ rootUri: root.uri, ...(await buildTree(ctx, user, directory)) }))
  })

  router.use('/workspace/files', fragmentErrorHandler(ctx.logger, ({ message }) => FilesError({ message })))
  router.use(['/workspace/search', '/workspace/tree/whole'], fragmentErrorHandler(ctx.logger, ({ message }) => FilesError({ message })))
  return router
}
