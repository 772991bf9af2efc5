import { Router } from 'express'
import type { Request, Response } from 'express'
import * as Schema from 'effect/Schema'
import type { User } from '../effects/auth/users.ts'
import { resolveNode } from '../effects/workspace/resolve.ts'
import { findNode, type WorkspaceNode } from '../effects/workspace/store.ts'
import { listChildren } from '../effects/workspace/folder-listing.ts'
import { findRawVersion, readCurrent } from '../effects/workspace/file-contents.ts'
import { type IngestedBatch, type IngestFolder, ingestFiles } from '../effects/workspace/ingest.ts'
import { importZip } from '../effects/workspace/import-zip.ts'
import { findRawVersionNo, listVersions, readVersion, VERSIONS_PAGE } from '../effects/workspace/file-versions.ts'
import { citedWindow } from '../effects/workspace/cited-passage.ts'
import { formatKbUri, parseKbUri } from '../effects/workspace/uri.ts'
import { NodeConflict } from '../effects/workspace/workspace-errors.ts'
import { safeEqual } from '../effects/auth/tokens.ts'
import { WorkspacePage } from '../../views/pages/workspace.tsx'
import { ContentPane, type ContentPaneProps, type GeneratedMark, type Preview, type PreviewTable } from '../../views/partials/content-pane.tsx'
import { describeChanges, generatedPage, type LayerChange, MAX_LISTED_CHANGES } from '../effects/compile/layer-freshness.ts'
import { readDelimitedTable, separatorOf } from '../effects/workspace/parse/csv.ts'
import { TREE_PAGE_SIZE, TreeError, TreeItems } from '../../views/partials/tree.tsx'
import { renderMarkdown } from '../../views/render-markdown.ts'
import { renderFragment, renderPage } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { siteNav } from '../../views/layout.tsx'
import { buildTree, directoryOf, LISTING_PAGE, listDirectory, listDirectoryPage, modelOptions, moreOf, welcomeEntries } from './workspace-listing.ts'
import { contentProblemHandler, pageProblemHandler } from './node-problems.ts'
import { requireAuth } from './authenticate.ts'
import { fragmentErrorHandler, redirectHtmxToSignIn } from './fragment-errors.ts'
import { discardRestOfBody } from './discard-body.ts'
import { badRequest, forbidden, HttpError } from './http-errors.ts'
import { type MultipartUpload, readMultipartUpload } from './multipart-upload.ts'
import { whenClientGone } from './client-gone.ts'
import { rawResponseHeaders, streamRawVersion } from './raw-download.ts'
import { streamFolderZip } from './zip-download.ts'
import { exportableFolder } from '../effects/workspace/export-zip.ts'
import { decodeQuery, QueryInt } from './decode-request.ts'
import { NOTICE_CODES, noticeText, uploadNoticeQuery } from '../../views/partials/notices.ts'

/** Where an upload's files go, as found before its body was read (`nodeId` absent: to be created). */
interface UploadTarget extends IngestFolder {
  readonly uri: string
}

const PREVIEW_CHARS = 200_000

const UriParam = Schema.String.check(Schema.isMaxLength(4096))
const UriQuery = Schema.Struct({ uri: Schema.optional(UriParam) })
/** A version by its number (1 and up), for an old version's text or bytes. */
const VersionParam = Schema.optional(QueryInt({ minimum: 1, maximum: 2_147_483_647 }))
const RawQuery = Schema.Struct({ uri: Schema.optional(UriParam), version: VersionParam })
const Count = Schema.optional(QueryInt({ minimum: 0, maximum: 100_000 }))
const WorkspaceQuery = Schema.Struct({
  uri: Schema.optional(UriParam),
  /** A citation's or a search hit's code-point offset: the preview opens there, the passage highlighted. */
  offset: Schema.optional(QueryInt({ minimum: 0, maximum: 999_999_999 })),
  /** A directory listing's first entry shown (its pages are LISTING_PAGE entries). */
  from: Schema.optional(QueryInt({ minimum: 0, maximum: 1_000_000 })),
  notice: Schema.optional(Schema.Literals(NOTICE_CODES)),
  added: Count,
  updated: Count,
  unchanged: Count,
  unparsed: Count,
  /** An old version's text instead of the current one's (version history). */
  version: VersionParam,
  /** A restore's notice: the version restored and the version it is now. */
  restored_from: VersionParam,
  restored_as: VersionParam,
})
const TreeQuery = Schema.Struct({ uri: Schema.optional(UriParam), offset: Schema.optional(QueryInt({ minimum: 0, maximum: 1_000_000 })) })
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

/** `?create_parents=true`: an upload into a folder that does not exist creates it (and the folders above). */
function queryFlag(req: Request, name: string): boolean {
  const value = req.query[name]
  if (value === undefined || value === 'false' || value === '0') return false
  if (value === 'true' || value === '1') return true
  throw badRequest(`"${name}" must be true or false`, 'invalid_request')
}

async function previewOf(ctx: AppContext, user: User, node: WorkspaceNode, offset?: number, versionNo?: number): Promise<Preview> {
  const [content, history] = await Promise.all([
    versionNo === undefined ? readCurrent(ctx.db, user, node) : readVersion(ctx.db, { owner: user, node, versionNo }),
    listVersions(ctx.db, { owner: user, node, limit: VERSIONS_PAGE }),
  ])
  const body = content.body ?? ''
  const truncated = body.length > PREVIEW_CHARS
  const text = truncated ? body.slice(0, PREVIEW_CHARS) : body
  const isMarkdown = /\.(md|markdown)$/i.test(node.name)
  const cited = offset !== undefined && content.parseStatus === 'parsed' ? citedWindow({ text: body, offset }) : undefined
  return {
    cited,
    uri: node.uri,
    name: node.name,
    mime: content.mime,
    size: content.size,
    versionNo: content.versionNo,
    history,
    old: content.versionNo !== history.currentNo,
    truncated,
    parseError: content.parseStatus === 'failed' ? (content.parseError ?? 'unknown error') : undefined,
    table: tableOf(node.name, content.parseStatus === 'parsed' && cited === undefined ? body : undefined),
    generated: await generatedMarkOf(ctx, user, node),
    ...(isMarkdown ? { html: renderMarkdown(text, { baseUri: node.uri }) } : { text }),
  }
}

function changeLines(changes: ReadonlyArray<LayerChange>): string[] {
  const lines = changes.slice(0, MAX_LISTED_CHANGES).map((change) => describeChanges([change]))
  return changes.length > MAX_LISTED_CHANGES ? [...lines, `and ${changes.length - MAX_LISTED_CHANGES} more`] : lines
}

/** A generated page's note: what it was compiled from, and what changed since (layer-freshness.ts, the one rule). */
async function generatedMarkOf(ctx: AppContext, user: User, node: WorkspaceNode): Promise<GeneratedMark | undefined> {
  const page = await generatedPage(ctx.db, user, node.id)
  if (!page) return undefined
  return {
    kind: page.kind,
    source: page.source,
    folderUri: page.folderUri,
    writtenAt: page.freshness?.writtenAt.toISOString(),
    changes: changeLines(page.freshness?.changes ?? []),
  }
}

/** A CSV or TSV file's first rows as a table; undefined (the text is shown) when it is none or malformed. */
function tableOf(name: string, body: string | undefined): PreviewTable | undefined {
  const separator = separatorOf(name)
  if (separator === undefined || body === undefined) return undefined
  const table = readDelimitedTable({ text: body, separator })
  return table === undefined ? undefined : { header: table.header, rows: table.rows, totalRows: table.totalRows }
}

export function workspaceRoutes(ctx: AppContext): Router {
  const router = Router()
  router.use('/workspace', redirectHtmxToSignIn()) // every htmx request under /workspace, the chat's too
  router.use(['/workspace', '/api/v1/workspace'], requireAuth())

  async function contentProps(req: Request): Promise<{ props: ContentPaneProps; directory: WorkspaceNode; node: WorkspaceNode }> {
    const user = req.auth!.user
    const { node } = await resolveNode(ctx.db, { caller: user, uri: queryUri(req, rootUriOf(user)) })
    const directory = await directoryOf(ctx, user, node)
    const query = decodeQuery(WorkspaceQuery, req)
    const page = node.kind === 'directory' ? await listDirectoryPage(ctx, user, directory, { offset: query.from ?? 0 }) : { entries: [], offset: 0, total: 0 }
    const listing = page.entries
    const notice = query.notice
      ? noticeText({
          code: query.notice,
          counts: { added: query.added ?? 0, updated: query.updated ?? 0, unchanged: query.unchanged ?? 0, unparsed: query.unparsed ?? 0 },
          versions: { from: query.restored_from ?? 0, as: query.restored_as ?? 0 },
          name: node.name,
        })
      : undefined
    const preview = node.kind === 'file' ? await previewOf(ctx, user, node, query.offset, query.version) : undefined
    return { directory, node, props: { directoryUri: directory.uri, nodeUri: node.uri, listing, listingOffset: page.offset, listingTotal: page.total, preview, csrfToken: req.auth!.csrfToken, notice } }
  }

  router.get('/workspace', async (req, res) => {
    const user = req.auth!.user
    const { props, directory, node } = await contentProps(req)
    const models = modelOptions(ctx)
    const entries = await welcomeEntries(ctx.db, user, directory, props.preview ? await listDirectory(ctx, user, directory) : props.listing)
    res.type('html').send(
      await renderPage(
        WorkspacePage({
          login: user.login,
          nav: siteNav({ retrieval: ctx.retrieval !== undefined, admin: user.role === 'admin' }),
          csrfToken: req.auth!.csrfToken,
          rootUri: rootUriOf(user),
          tree: await buildTree(ctx, user, directory, node),
          content: props,
          chat: {
            directoryUri: directory.uri,
            entries,
            models,
            defaultModelId: ctx.models.defaultModelId(),
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
    const query = decodeQuery(TreeQuery, req)
    const { node } = await resolveNode(ctx.db, { caller: user, uri: query.uri ?? rootUriOf(user) })
    if (node.kind !== 'directory') throw new NodeConflict({ uri: node.uri, reason: 'only directories have children' })
    const page = await listDirectoryPage(ctx, user, node, { offset: query.offset ?? 0, limit: TREE_PAGE_SIZE })
    res.type('html').send(await renderFragment(TreeItems({ entries: page.entries, more: moreOf(node.uri, page), offset: page.offset })))
  })

  router.use('/workspace/content', contentProblemHandler(ctx))
  router.use('/workspace/tree', fragmentErrorHandler(ctx.logger, TreeError))

  /**
   * CSRF for a cookie session, decided before any body byte is read: a wrong X-CSRF-Token header
   * is refused at once; without the header, the form's first part must be a valid `_csrf`.
   */
  function uploadCsrf(req: Request): ((token: string) => boolean) | undefined {
    const auth = req.auth!
    if (auth.via !== 'session') return undefined
    const valid = (token: string): boolean => auth.csrfToken !== undefined && safeEqual(token, auth.csrfToken)
    const header = req.get('x-csrf-token')
    if (header === undefined) return valid
    if (!valid(header)) throw forbidden('missing or invalid CSRF token (send the X-CSRF-Token header)', 'csrf')
    return undefined
  }

  /**
   * Where an upload goes: an existing folder, or — with `create_parents` — one to create with the
   * files. A missing folder without the flag is a 404 that says how to create it.
   */
  async function uploadTarget(user: User, uri: string, createParents: boolean): Promise<UploadTarget> {
    const path = parseKbUri({ uri, callerLogin: user.login })
    const node = await findNode(ctx.db, user, path.segments)
    const folderUri = formatKbUri({ login: user.login, segments: path.segments, directory: true })
    if (node) {
      if (node.kind !== 'directory') throw new NodeConflict({ uri: node.uri, reason: 'uploads go into a directory' })
      return { uri: node.uri, segments: path.segments, nodeId: node.id, create: createParents }
    }
    if (!createParents) throw missingFolder(folderUri)
    return { uri: folderUri, segments: path.segments, nodeId: undefined, create: createParents }
  }

  /** Whether the form's `uri` names the folder the query named (`kb://me/x/` and `kb://users/<login>/x` are one). */
  const sameFolder = (user: User, formUri: string, target: UploadTarget): boolean => {
    try {
      return formatKbUri({ login: user.login, segments: parseKbUri({ uri: formUri, callerLogin: user.login }).segments, directory: true }) === formatKbUri({ login: user.login, segments: target.segments, directory: true })
    } catch {
      return false
    }
  }

  const missingFolder = (folderUri: string): HttpError =>
    new HttpError(404, 'not_found', `${folderUri} does not exist (it may have been deleted or moved); upload with create_parents=true to create it`)

  /**
   * Reads one multipart upload (auth and CSRF before its body, the query's folder before its body,
   * the spool removed on every path) and hands its files to `store`, which parses and stores them
   * all or none. The client going away aborts `signal`: reading, parsing and storing stop.
   */
  async function receiveUpload<T>(
    req: Request,
    res: Response,
    { maxFiles, store }: { maxFiles: number; store: (args: { user: User; target: UploadTarget; upload: MultipartUpload; signal: AbortSignal }) => Promise<T> },
  ): Promise<T> {
    const user = req.auth!.user
    const client = new AbortController() // the client going away cancels reading, parsing and storing
    whenClientGone(res, () => client.abort(new HttpError(499, 'client_closed', 'the client closed the request')))
    let upload: MultipartUpload | undefined
    try {
      const csrfFirstPart = uploadCsrf(req)
      const createParents = queryFlag(req, 'create_parents')
      // With the target in the query, a missing or foreign directory is refused before the body is read.
      const early = req.query.uri === undefined ? undefined : await uploadTarget(user, queryUri(req, ''), createParents)
      upload = await readMultipartUpload(req, {
        maxFileBytes: ctx.config.maxFileBytes,
        maxFiles,
        spoolRoot: ctx.config.uploadTempDir,
        csrfFirstPart,
        signal: client.signal,
      })
      if (early && upload.uri !== undefined && !sameFolder(user, upload.uri, early)) {
        throw badRequest(`the folder is given twice, as ${JSON.stringify(req.query.uri)} in the query and ${JSON.stringify(upload.uri.slice(0, 300))} in the form; give it once`, 'invalid_request')
      }
      const target = early ?? (await uploadTarget(user, upload.uri ?? '', createParents))
      if (upload.files.length === 0) throw badRequest('no files in the upload (use the multipart field "file")', 'no_files')
      return await store({ user, target, upload, signal: client.signal })
    } catch (error) {
      discardRestOfBody(req) // answer now; what the client still sends is dropped, then the connection closed
      throw error
    } finally {
      await upload?.dispose()
    }
  }

  const storageLimits = () => ({ userStorageMb: ctx.config.userStorageMb, uploadMbPerMinute: ctx.config.uploadMbPerMinute })
  const summaries = (stored: IngestedBatch): { folderUri: string; files: UploadSummary[] } => ({
    folderUri: stored.folderUri,
    files: stored.files.map(({ node, outcome, withoutText }): UploadSummary => ({ uri: node.uri, outcome, ...(withoutText === undefined ? {} : { parse_error: withoutText }) })),
  })

  /** Reads, parses (in the parser's workers) and stores one upload, all files or none. */
  const storeUpload = (req: Request, res: Response): Promise<{ folderUri: string; files: UploadSummary[] }> =>
    receiveUpload(req, res, {
      maxFiles: ctx.config.maxFilesPerUpload,
      store: async ({ user, target, upload, signal }) => {
        // Parsed in the parser's processes with no transaction held, the texts in the spool folder; then stored all or none.
        const stored = await ingestFiles(ctx.db, {
          owner: user,
          folder: target,
          files: upload.files.map(({ name, path }) => ({ name, path })),
          parser: ctx.parser,
          signal,
          spool: upload.directory,
          limits: storageLimits(),
        })
        const results = summaries(stored)
        ctx.logger.info('upload stored', { login: user.login, directory: results.folderUri, files: results.files.length })
        return results
      },
    })

  /** A zip (one `file` part) unpacked into the folder: every entry checked, then parsed and stored all or none (import-zip.ts). */
  const storeZipImport = (req: Request, res: Response): Promise<{ folderUri: string; files: UploadSummary[] }> =>
    receiveUpload(req, res, {
      maxFiles: 1,
      store: async ({ user, target, upload, signal }) => {
        const stored = await importZip(ctx.db, {
          owner: user,
          folder: target,
          zipPath: upload.files[0]!.path,
          parser: ctx.parser,
          spool: upload.directory,
          signal,
          limits: { maxEntryBytes: ctx.config.maxFileBytes, maxTotalBytes: ctx.config.maxZipImportBytes },
          storageLimits: storageLimits(),
        })
        const results = summaries(stored)
        ctx.logger.info('zip imported', { login: user.login, directory: results.folderUri, files: results.files.length })
        return results
      },
    })

  router.post('/api/v1/workspace/import-zip', async (req, res) => {
    const results = await storeZipImport(req, res)
    res.status(201).json({ folder: results.folderUri, files: results.files })
  })

  router.post('/workspace/import-zip', async (req, res) => {
    // The folder page's "Import a zip here": back to the folder with the upload's notice.
    const { folderUri, files } = await storeZipImport(req, res)
    res.redirect(303, `/workspace?uri=${encodeURIComponent(folderUri)}&${uploadNoticeQuery(files)}`)
  })

  router.post('/api/v1/workspace/upload', async (req, res) => {
    res.status(201).json({ files: (await storeUpload(req, res)).files })
  })

  router.post('/workspace/upload', async (req, res) => {
    // Back to the folder the files went to: the query's, the form's `uri` field's, or where it moved.
    const { folderUri, files } = await storeUpload(req, res)
    res.redirect(303, `/workspace?uri=${encodeURIComponent(folderUri)}&${uploadNoticeQuery(files)}`)
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

  /** The raw bytes of a file's current version (or of `version`, an old one), as uploaded. */
  router.get('/api/v1/workspace/raw', async (req, res) => {
    const user = req.auth!.user
    const query = decodeQuery(RawQuery, req)
    const { node } = await resolveNode(ctx.db, { caller: user, uri: query.uri ?? '' })
    if (node.kind !== 'file') throw new NodeConflict({ uri: node.uri, reason: 'only files have raw content' })
    // one version, its type and bytes together
    const version = query.version === undefined ? await findRawVersion(ctx.db, user, node) : await findRawVersionNo(ctx.db, { owner: user, node, versionNo: query.version })
    res.set(rawResponseHeaders({ mime: version.mime, fileName: node.name }))
    await streamRawVersion(ctx.db, res, version)
  })

  /** A folder (kb://me/ for the whole workspace) as a zip of its files' original bytes, streamed. */
  router.get('/api/v1/workspace/export', async (req, res) => {
    const user = req.auth!.user
    const { node } = await resolveNode(ctx.db, { caller: user, uri: queryUri(req, '') })
    await streamFolderZip(ctx.db, res, { owner: user, folder: exportableFolder(node), logger: ctx.logger })
  })

  router.use('/workspace', pageProblemHandler(ctx))
  return router
}
