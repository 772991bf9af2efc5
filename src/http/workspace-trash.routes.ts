// The Trash (issue 37), for programs and for the page — one use case (src/effects/workspace/trash.ts),
// two faces:
//   GET    /api/v1/workspace/trash?offset=&limit=   → 200 the caller's Trash, most recently deleted first
//   POST   /api/v1/workspace/trash/:id/restore      → 200 where it is now (put back where it was, or renamed)
//   DELETE /api/v1/workspace/trash/:id              → 200 what was deleted for good
//   DELETE /api/v1/workspace/trash                  → 200 how much was deleted for good (Empty trash)
//   GET    /workspace/trash                          the Trash page
//   POST   /workspace/trash/{restore,delete,empty}   its forms (id): 303 to the restored node, or back with a notice
// An id is a trash item of the caller's: any other (someone else's, restored, deleted) is 404.
// Cookie sessions send the CSRF token with every change.
import { Router, type Request, type Response } from 'express'
import { formBody } from './body-limit.ts'
import * as Schema from 'effect/Schema'
import type { User } from '../effects/auth/users.ts'
import { deleteFromTrash, emptyTrash, listTrash, restoreFromTrash, type RestoreResult, TRASH_MAX_LIMIT, TRASH_PAGE, type TrashEntry } from '../effects/workspace/trash.ts'
import { siteNav, TRASH_PATH } from '../../views/layout.tsx'
import { NOTICE_CODES, noticeText } from '../../views/partials/notices.ts'
import { TrashPage } from '../../views/pages/trash.tsx'
import { renderPage } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { requireAuth, requireCsrf } from './authenticate.ts'
import { decodeBody, decodeQuery, QueryInt } from './decode-request.ts'
import { describeError } from './error-handler.ts'
import { jsonBody } from './json-body.ts'

const TrashId = Schema.String.check(Schema.isUUID(undefined, { message: 'a trash item id is a UUID (from GET /api/v1/workspace/trash)' }))
const IdParams = Schema.Struct({ id: TrashId })
const IdForm = Schema.Struct({ id: TrashId })
const ListQuery = Schema.Struct({
  offset: Schema.optional(QueryInt({ minimum: 0, maximum: 1_000_000 })),
  limit: Schema.optional(QueryInt({ minimum: 1, maximum: TRASH_MAX_LIMIT })),
})
const PageQuery = Schema.Struct({
  notice: Schema.optional(Schema.Literals(NOTICE_CODES)),
  items: Schema.optional(QueryInt({ minimum: 0, maximum: 1_000_000 })),
})

const entryJson = (item: TrashEntry) => ({
  id: item.id,
  name: item.name,
  kind: item.kind,
  uri: item.uri,
  folder: item.folderUri,
  files: item.files,
  directories: item.directories,
  summaries: item.summaries,
  bytes: item.bytes,
  deleted_at: item.deletedAt.toISOString(),
  purge_at: item.purgeAt.toISOString(),
})

/** What a restore did, in words (the API's `message`; the page says it with its notice). */
export const restoredMessage = (restored: RestoreResult): string =>
  restored.renamed ? `Restored as ${restored.uri}: ${restored.from} is taken by something else now.` : `Restored to ${restored.uri}.`

export function workspaceTrashRoutes(ctx: AppContext): Router {
  const router = Router()
  router.use(['/api/v1/workspace/trash', TRASH_PATH], requireAuth())
  router.use('/api/v1/workspace/trash', ...jsonBody({ limit: '16kb', strict: false }), requireCsrf())
  router.use(TRASH_PATH, formBody({ limit: '16kb' }), requireCsrf())

  const idOf = (req: Request) => decodeBody(IdParams, req.params).id

  // ── JSON API ────────────────────────────────────────────────────────────────────────────

  router.get('/api/v1/workspace/trash', async (req, res) => {
    const query = decodeQuery(ListQuery, req)
    const page = await listTrash(ctx.db, { owner: req.auth!.user, offset: query.offset ?? 0, limit: query.limit ?? TRASH_PAGE })
    const next = page.offset + page.items.length
    res.json({
      items: page.items.map(entryJson),
      total: page.total,
      bytes: page.bytes,
      retention_days: ctx.config.trashRetentionDays,
      next_offset: next < page.total && page.items.length > 0 ? next : null,
    })
  })

  router.post('/api/v1/workspace/trash/:id/restore', async (req, res) => {
    const restored = await restoreFromTrash(ctx.db, { owner: req.auth!.user, id: idOf(req) })
    ctx.logger.info('restored from the trash', { login: req.auth!.user.login, uri: restored.uri, renamed: restored.renamed })
    res.json({ uri: restored.uri, from: restored.from, name: restored.name, kind: restored.kind, renamed: restored.renamed, summaries: restored.summaries, message: restoredMessage(restored) })
  })

  router.delete('/api/v1/workspace/trash/:id', async (req, res) => {
    const deleted = await deleteFromTrash(ctx.db, { owner: req.auth!.user, id: idOf(req) })
    res.json({ id: deleted.id, uri: deleted.uri, deleted: { files: deleted.files, directories: deleted.directories, summaries: deleted.summaries, bytes: deleted.bytes } })
  })

  router.delete('/api/v1/workspace/trash', async (req, res) => {
    const emptied = await emptyTrash(ctx.db, { owner: req.auth!.user })
    res.json({ deleted: { items: emptied.items, bytes: emptied.bytes } })
  })

  // ── the page ─────────────────────────────────────────────────────────────────────────────

  async function page(req: Request, res: Response, { notice, error, status = 200 }: { notice?: string; error?: string; status?: number }) {
    const user: User = req.auth!.user
    const trash = await listTrash(ctx.db, { owner: user })
    res
      .status(status)
      .type('html')
      .send(
        await renderPage(
          TrashPage({
            login: user.login,
            csrfToken: req.auth!.csrfToken,
            nav: siteNav({ retrieval: ctx.retrieval !== undefined, admin: user.role === 'admin' }),
            items: trash.items,
            total: trash.total,
            bytes: trash.bytes,
            retentionDays: ctx.config.trashRetentionDays,
            notice,
            error,
          }),
        ),
      )
  }

  /** A form that could not be carried out (the item gone, a file in the way of its folder): the page, with why. */
  async function refused(req: Request, res: Response, error: unknown): Promise<void> {
    const described = describeError(error)
    if (described.status >= 500) throw error
    await page(req, res, { error: described.message, status: described.status })
  }

  router.get(TRASH_PATH, async (req, res) => {
    const query = decodeQuery(PageQuery, req)
    const notice = query.notice?.startsWith('trash_') ? noticeText({ code: query.notice, items: query.items ?? 0 }) : undefined
    await page(req, res, { notice })
  })

  router.post(`${TRASH_PATH}/restore`, async (req, res) => {
    const form = decodeBody(IdForm, req.body)
    try {
      const restored = await restoreFromTrash(ctx.db, { owner: req.auth!.user, id: form.id })
      const notice = new URLSearchParams({ uri: restored.uri, notice: restored.renamed ? 'trash_restored_renamed' : 'trash_restored' })
      res.redirect(303, `/workspace?${notice.toString()}`)
    } catch (error) {
      await refused(req, res, error)
    }
  })

  router.post(`${TRASH_PATH}/delete`, async (req, res) => {
    const form = decodeBody(IdForm, req.body)
    try {
      await deleteFromTrash(ctx.db, { owner: req.auth!.user, id: form.id })
      res.redirect(303, `${TRASH_PATH}?notice=trash_deleted`)
    } catch (error) {
      await refused(req, res, error)
    }
  })

  router.post(`${TRASH_PATH}/empty`, async (req, res) => {
    decodeBody(Schema.Struct({}), req.body)
    const emptied = await emptyTrash(ctx.db, { owner: req.auth!.user })
    res.redirect(303, `${TRASH_PATH}?notice=trash_emptied&items=${emptied.items}`)
  })

  return router
}

