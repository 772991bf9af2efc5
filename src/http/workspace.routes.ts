import { Router } from 'express'
import type { Request } from 'express'
import { Schema } from 'effect'
import type { User } from '../effects/auth/users.ts'
import { parseDocument, type ParseOutcome } from '../effects/workspace/parse.ts'
import { resolveNode } from '../effects/workspace/resolve.ts'
import { getNode, listChildren, putFileInTransaction, readCurrent, readRaw, type WorkspaceNode } from '../effects/workspace/store.ts'
import { formatKbUri, validateSegment } from '../effects/workspace/uri.ts'
import { InvalidUri, NodeConflict } from '../effects/workspace/workspace-errors.ts'
import { safeEqual } from '../effects/auth/tokens.ts'
import { WorkspacePage } from '../../views/pages/workspace.tsx'
import { ContentError, ContentPane, type ContentPaneProps, type Preview } from '../../views/partials/content-pane.tsx'
import { TreeError, TreeItems, type TreeEntry } from '../../views/partials/tree.tsx'
import { renderMarkdown } from '../../views/render-markdown.ts'
import { renderFragment, renderPage } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { directoryOf, LISTING_PAGE, listDirectory, modelOptions, toEntry } from './workspace-listing.ts'
import { requireAuth } from './authenticate.ts'
import { fragmentErrorHandler, redirectHtmxToSignIn } from './fragment-errors.ts'
import { badRequest, forbidden } from './http-errors.ts'
import { readMultipartFiles } from './multipart-upload.ts'
import { decodeQuery, QueryInt } from './decode-request.ts'
import { NOTICE_CODES, noticeText, uploadNoticeQuery } from '../../views/partials/notices.ts'

const PREVIEW_CHARS = 200_000
const MAX_FILES_PER_UPLOAD = 32
const TREE_PAGE = 200

const UriParam = Schema.String.check(Schema.isMaxLength(4096))
const UriQuery = Schema.Struct({ uri: Schema.optional(UriParam) })
const Count = Schema.optional(QueryInt({ minimum: 0, maximum: 100_000 }))
const WorkspaceQuery = Schema.Struct({
  uri: Schema.optional(UriParam),
  notice: Schema.optional(Schema.Literals(NOTICE_CODES)),
  added: Count,
  updated: Count,
  unchanged: Count,
  unparsed: Count,
})
const NodeQuery = Schema.Struct({
  uri: Schema.optional(UriParam),
  offset: Schema.optional(QueryInt({ minimum: 0 })),
  limit: Schema.optional(QueryInt({ minimum: 1, maximum: LISTING_PAGE })),
})

function queryUri(req: Request, fallback: string): string {
  return decodeQuery(UriQuery, req).uri ?? fallback
}

export interface UploadSummary {
  readonly uri: string
  readonly outcome: 'added' | 'updated' | 'unchanged'
  readonly parse_error?: string | undefined
}

const rootUriOf = (user: User) => formatKbUri({ login: user.login, segments: [], directory: true })
const segmentsOf = (node: WorkspaceNode) => (node.path === '' ? [] : node.path.split('/'))

async function previewOf(ctx: AppContext, user: User, node: WorkspaceNode): Promise<Preview> {
  const content = await readCurrent(ctx.db, user, node)
  const body = content.body ?? ''
  const truncated = body.length > PREVIEW_CHARS
  const text = truncated ? body.slice(0, PREVIEW_CHARS) : body
  const isMarkdown = /\.(md|markdown)$/i.test(node.name)
  return {
    uri: node.uri,
    name: node.name,
    mime: content.mime,
    size: content.size,
    versionNo: content.versionNo,
    truncated,
    parseError: content.parseStatus === 'failed' ? (content.parseError ?? 'unknown error') : undefined,
    ...(isMarkdown ? { html: renderMarkdown(text, { baseUri: node.uri }) } : { text }),
  }
}

export function workspaceRoutes(ctx: AppContext): Router {
  const router = Router()
  router.use('/workspace', redirectHtmxToSignIn()) // every htmx request under /workspace, the chat's too
  router.use(['/workspace', '/api/v1/workspace'], requireAuth())

  /** The tree from the root down to `directory`, each level listing its children (first page). */
  async function buildTree(user: User, directory: WorkspaceNode): Promise<TreeEntry[]> {
    const segments = segmentsOf(directory)
    let levelEntries: TreeEntry[] | undefined
    for (let depth = segments.length; depth >= 0; depth--) {
      const node = await getNode(ctx.db, user, segments.slice(0, depth))
      const page = await listChildren(ctx.db, { owner: user, parent: node, offset: 0, limit: TREE_PAGE })
      const childName = segments[depth]
      const below = levelEntries
      levelEntries = page.entries.map((child) => toEntry(child, child.name === childName && child.kind === 'directory' ? below : undefined))
    }
    return levelEntries ?? []
  }

  async function contentProps(req: Request): Promise<{ props: ContentPaneProps; directory: WorkspaceNode }> {
    const user = req.auth!.user
    const { node } = await resolveNode(ctx.db, { caller: user, uri: queryUri(req, rootUriOf(user)) })
    const directory = await directoryOf(ctx, user, node)
    const listing = node.kind === 'directory' ? await listDirectory(ctx, user, directory) : []
    const query = decodeQuery(WorkspaceQuery, req)
    const notice = query.notice
      ? noticeText({ code: query.notice, counts: { added: query.added ?? 0, updated: query.updated ?? 0, unchanged: query.unchanged ?? 0, unparsed: query.unparsed ?? 0 } })
      : undefined
    const preview = node.kind === 'file' ? await previewOf(ctx, user, node) : undefined
    return { directory, props: { directoryUri: directory.uri, nodeUri: node.uri, listing, preview, csrfToken: req.auth!.csrfToken, notice } }
  }

  router.get('/workspace', async (req, res) => {
    const user = req.auth!.user
    const { props, directory } = await contentProps(req)
    const models = modelOptions(ctx)
    const entries = props.preview ? await listDirectory(ctx, user, directory) : props.listing
    res.type('html').send(
      await renderPage(
        WorkspacePage({
          login: user.login,
          csrfToken: req.auth!.csrfToken,
          rootUri: rootUriOf(user),
          tree: await buildTree(user, directory),
          content: props,
          chat: {
            directoryUri: directory.uri,
            entries,
            models,
            defaultModelId: models[0]?.id ?? 'local',
            maxMessageChars: ctx.config.maxMessageChars,
          },
        }),
      ),
    )
  })

  /** The content pane alone (htmx navigation inside the page keeps the chat). */
  router.get('/workspace/content', async (req, res) => {
    const { props } = await contentProps(req)
    res.type('html').send(await renderFragment(ContentPane(props)))
  })

  /** One directory's children for the lazily expanded tree. */
  router.get('/workspace/tree', async (req, res) => {
    const user = req.auth!.user
    const { node } = await resolveNode(ctx.db, { caller: user, uri: queryUri(req, rootUriOf(user)) })
    if (node.kind !== 'directory') throw new NodeConflict({ uri: node.uri, reason: 'only directories have children' })
    res.type('html').send(await renderFragment(TreeItems({ entries: await listDirectory(ctx, user, node, TREE_PAGE) })))
  })

  router.use('/workspace/content', fragmentErrorHandler(ctx.logger, ContentError))
  router.use('/workspace/tree', fragmentErrorHandler(ctx.logger, TreeError))

  async function storeUpload(req: Request): Promise<UploadSummary[]> {
    const user = req.auth!.user
    const { files, fields } = await readMultipartFiles(req, { maxFileBytes: ctx.config.maxFileBytes, maxFiles: MAX_FILES_PER_UPLOAD })
    if (req.auth!.via === 'session') {
      const sent = req.get('x-csrf-token') ?? fields._csrf
      if (!sent || !req.auth!.csrfToken || !safeEqual(sent, req.auth!.csrfToken)) {
        throw forbidden('missing or invalid CSRF token (send the X-CSRF-Token header)', 'csrf')
      }
    }
    const { node: directory } = await resolveNode(ctx.db, { caller: user, uri: queryUri(req, fields.uri ?? '') })
    if (directory.kind !== 'directory') throw new NodeConflict({ uri: directory.uri, reason: 'uploads go into a directory' })
    if (files.length === 0) throw badRequest('no files in the upload (use the multipart field "file")', 'no_files')
    const names = new Set<string>()
    for (const file of files) {
      const reason = validateSegment(file.name)
      if (reason) throw new InvalidUri({ uri: `${directory.uri}${file.name}`, reason })
      if (names.has(file.name)) throw badRequest(`"${file.name}" appears twice in one upload`, 'duplicate_name')
      names.add(file.name)
    }
    const base = directory.path === '' ? [] : directory.path.split('/')
    // Parse first (slow, no transaction held), then store every file in one transaction: an
    // upload is stored whole or not at all.
    const parsed: ParseOutcome[] = []
    for (const file of files) parsed.push(await parseDocument({ name: file.name, bytes: file.bytes }))
    const results: UploadSummary[] = await ctx.db.transaction().execute(async (trx) => {
      const stored: UploadSummary[] = []
      for (const [index, file] of files.entries()) {
        const body = parsed[index]!
        const { outcome, node } = await putFileInTransaction(trx, { owner: user, segments: [...base, file.name], bytes: file.bytes, parsed: body })
        stored.push({ uri: node.uri, outcome, ...(body.ok ? {} : { parse_error: body.error }) })
      }
      return stored
    })
    ctx.logger.info('upload stored', { login: user.login, directory: directory.uri, files: results.length })
    return results
  }

  router.post('/api/v1/workspace/upload', async (req, res) => {
    res.status(201).json({ files: await storeUpload(req) })
  })

  router.post('/workspace/upload', async (req, res) => {
    const results = await storeUpload(req)
    res.redirect(303, `/workspace?uri=${encodeURIComponent(queryUri(req, ''))}&${uploadNoticeQuery(results)}`)
  })

  /** Metadata of a node: a directory's children (paged) or a file's current version. */
  router.get('/api/v1/workspace/node', async (req, res) => {
    const user = req.auth!.user
    const query = decodeQuery(NodeQuery, req)
    const { node } = await resolveNode(ctx.db, { caller: user, uri: query.uri ?? 'kb://me/' })
    if (node.kind === 'directory') {
      const offset = query.offset ?? 0
      const limit = query.limit ?? 100
      const page = await listChildren(ctx.db, { owner: user, parent: node, offset, limit })
      res.json({
        uri: node.uri,
        kind: node.kind,
        entries: page.entries.map((n) => ({ name: n.name, kind: n.kind, uri: n.uri, size: n.size, updated: n.updatedAt.toISOString() })),
        total: page.total,
        next_offset: offset + page.entries.length < page.total ? offset + page.entries.length : null,
      })
      return
    }
    const content = await readCurrent(ctx.db, user, node)
    res.json({
      uri: node.uri,
      kind: node.kind,
      mime: content.mime,
      size: content.size,
      version: content.versionNo,
      updated: node.updatedAt.toISOString(),
      parse: content.parseStatus === 'parsed' ? { status: 'parsed' } : { status: 'failed', error: content.parseError },
    })
  })

  /** The raw bytes of a file's current version, as uploaded. */
  router.get('/api/v1/workspace/raw', async (req, res) => {
    const user = req.auth!.user
    const { node } = await resolveNode(ctx.db, { caller: user, uri: queryUri(req, '') })
    if (node.kind !== 'file') throw new NodeConflict({ uri: node.uri, reason: 'only files have raw content' })
    const content = await readCurrent(ctx.db, user, node)
    const raw = await readRaw(ctx.db, user, node)
    res
      .type(content.mime)
      .set('Content-Disposition', `attachment; filename*=UTF-8''${encodeURIComponent(node.name)}`)
      .set('X-Content-Type-Options', 'nosniff')
      .send(Buffer.from(raw))
  })
  return router
}
