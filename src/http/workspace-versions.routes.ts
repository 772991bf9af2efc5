// A file's version history (issue 37), for programs and for the page:
//   GET  /api/v1/workspace/versions?uri=&offset=&limit=   → 200 its versions, newest first (paged)
//   POST /api/v1/workspace/restore-version {uri, version}  → 201 restored as the newest version; 200 when it is the current one
//   POST /workspace/versions/restore (form: uri, version)  → 303 back to the file, with a notice
// An old version's bytes are GET /api/v1/workspace/raw?uri=&version= (workspace.routes.ts) and its
// text the page's /workspace?uri=&version=. Scoped like everything else; cookie sessions send the
// CSRF token with a restore.
import { Router } from 'express'
import { formBody } from './body-limit.ts'
import * as Schema from 'effect/Schema'
import type { User } from '../effects/auth/users.ts'
import { listVersions, restoreVersion, VERSIONS_MAX_LIMIT, VERSIONS_PAGE, type RestoreOutcome, type VersionSummary } from '../effects/workspace/file-versions.ts'
import { resolveNode } from '../effects/workspace/resolve.ts'
import type { AppContext } from './app-context.ts'
import { requireAuth, requireCsrf } from './authenticate.ts'
import { decodeBody, decodeQuery, QueryInt, SafeInt } from './decode-request.ts'
import { jsonBody } from './json-body.ts'

const Uri = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4096))
const MAX_VERSION = 2_147_483_647
const VersionsQuery = Schema.Struct({
  uri: Uri,
  offset: Schema.optional(QueryInt({ minimum: 0, maximum: MAX_VERSION })),
  limit: Schema.optional(QueryInt({ minimum: 1, maximum: VERSIONS_MAX_LIMIT })),
})
const RestoreBody = Schema.Struct({ uri: Uri, version: SafeInt({ minimum: 1, maximum: MAX_VERSION }) })
const RestoreForm = Schema.Struct({ uri: Uri, version: QueryInt({ minimum: 1, maximum: MAX_VERSION }) })

const versionJson = (version: VersionSummary) => ({
  version: version.versionNo,
  created: version.createdAt.toISOString(),
  size: version.size,
  mime: version.mime,
  origin: version.origin,
  current: version.current,
})

export const restoreMessage = (outcome: RestoreOutcome): string =>
  outcome._tag === 'restored'
    ? `Version ${outcome.from} restored: it is now version ${outcome.versionNo}, the current one.`
    : outcome.from === outcome.versionNo
      ? `Version ${outcome.from} is already the current version; nothing changed.`
      : `Version ${outcome.from} has the same content as the current version ${outcome.versionNo}; nothing changed.`

export function workspaceVersionsRoutes(ctx: AppContext): Router {
  const router = Router()
  router.use(['/api/v1/workspace/versions', '/api/v1/workspace/restore-version', '/workspace/versions'], requireAuth())
  router.use('/api/v1/workspace/restore-version', ...jsonBody({ limit: '16kb', strict: false }), requireCsrf())
  router.use('/workspace/versions', formBody({ limit: '16kb' }), requireCsrf())

  const resolve = async (user: User, uri: string) => (await resolveNode(ctx.db, { caller: user, uri })).node
  const limits = () => ({ userStorageMb: ctx.config.userStorageMb, uploadMbPerMinute: ctx.config.uploadMbPerMinute })

  router.get('/api/v1/workspace/versions', async (req, res) => {
    const user = req.auth!.user
    const query = decodeQuery(VersionsQuery, req)
    const node = await resolve(user, query.uri)
    const page = await listVersions(ctx.db, { owner: user, node, offset: query.offset ?? 0, limit: query.limit ?? VERSIONS_PAGE })
    const next = page.offset + page.versions.length
    res.json({ uri: node.uri, current: page.currentNo, total: page.total, versions: page.versions.map(versionJson), next_offset: next < page.total && page.versions.length > 0 ? next : null })
  })

  router.post('/api/v1/workspace/restore-version', async (req, res) => {
    const user = req.auth!.user
    const body = decodeBody(RestoreBody, req.body)
    const outcome = await restoreVersion(ctx.db, { owner: user, node: await resolve(user, body.uri), versionNo: body.version, limits: limits() })
    res.status(outcome._tag === 'restored' ? 201 : 200).json({
      uri: outcome.node.uri,
      restored: outcome._tag === 'restored',
      from: outcome.from,
      version: outcome.versionNo,
      message: restoreMessage(outcome),
    })
  })

  router.post('/workspace/versions/restore', async (req, res) => {
    const user = req.auth!.user
    const form = decodeBody(RestoreForm, req.body)
    const outcome = await restoreVersion(ctx.db, { owner: user, node: await resolve(user, form.uri), versionNo: form.version, limits: limits() })
    const notice = new URLSearchParams({
      uri: outcome.node.uri,
      notice: outcome._tag === 'restored' ? 'version_restored' : 'version_current',
      restored_from: String(outcome.from),
      restored_as: String(outcome.versionNo),
    })
    res.redirect(303, `/workspace?${notice.toString()}`)
  })

  return router
}
