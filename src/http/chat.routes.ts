// The browser chat (SPEC §7), answered with HTML for htmx:
//   POST /workspace/chat/stream        a turn as SSE: HTML fragments, then one named `done`/`error`
//   POST /workspace/chat/command       an explicit ls/read/search/status as a result card
//   GET  /workspace/chat/welcome       the welcome area for a directory (a new conversation)
//   GET  /workspace/chat/turns/:id/events?message_key=   a turn's stream picked up again after a
//                                      blip (Last-Event-ID), from any instance: the same fragments
// Cookie session + CSRF (the X-CSRF-Token header htmx sends from the page's body attribute).
// The conversation's history comes from the page with each request; nothing is kept here.
import { Router } from 'express'
import { formBody } from './body-limit.ts'
import * as Schema from 'effect/Schema'
import type { User } from '../effects/auth/users.ts'
import { resolveNode } from '../effects/workspace/resolve.ts'
import { CommandMessage, CommandCard, CommandRefused, type CommandOutcome } from '../../views/partials/command-card.tsx'
import { isMessageKey } from '../../views/partials/message-parts.ts'
import { Welcome } from '../../views/partials/welcome.tsx'
import { renderFragment } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { requireAuth, requireCsrf } from './authenticate.ts'
import { runExplicitCommand } from './explicit-command.ts'
import { fragmentErrorHandler, redirectHtmxToSignIn } from './fragment-errors.ts'
import { htmlTurnProjector, resumedHtmlProjector } from './html-turn-projector.tsx'
import { resumeTurnStream } from './turn-resume.ts'
import { badRequest } from './http-errors.ts'
import { decodeBody, decodeQuery, QueryInt } from './decode-request.ts'
import { checkStreamRequest, StreamRequest } from './stream-request.ts'
import { admitTurnStream, streamTurn } from './turn-stream.ts'
import { directoryOf, listDirectory, welcomeEntries } from './workspace-listing.ts'

export const CHAT_PREFIX = '/workspace/chat'
const FORM_LIMIT = '6mb' // the page sends the whole history (at most 1.5 MB of JSON, up to 3× that percent-encoded)

const FormString = Schema.String.check(Schema.isMaxLength(4096))
const MessageKey = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9-]{1,64}$/, { message: 'message_key is 1–64 letters, digits or "-"' }))

const ChatStreamForm = Schema.Struct({
  uri: FormString,
  model_id: FormString,
  message: Schema.String,
  history: Schema.optional(Schema.String),
  message_key: MessageKey,
})

const ChatCommandForm = Schema.Struct({
  command: Schema.Literals(['ls', 'read', 'search', 'status']),
  uri: FormString,
  path: Schema.optional(FormString),
  query: Schema.optional(Schema.String.check(Schema.isMaxLength(200))),
  offset: Schema.optional(QueryInt({ minimum: 0 })),
  message_key: Schema.optional(MessageKey),
  placement: Schema.optional(Schema.Literals(['chat', 'dialog'])),
})

function parseHistory(text: string | undefined): unknown {
  if (text === undefined || text.trim() === '') return []
  try {
    return JSON.parse(text)
  } catch {
    throw badRequest('"history" is not valid JSON', 'invalid_history')
  }
}

/**
 * A command's target: `kb://…` as given, else a path relative to the current directory.
 * Segments are escaped the way URIs print them (%, ?, #), so any real name resolves.
 */
export function resolveCommandTarget({ scopeUri, path }: { scopeUri: string; path: string | undefined }): string | undefined {
  const trimmed = path?.trim()
  if (!trimmed || trimmed === '.' || trimmed === './') return undefined
  if (/^kb:\/\//i.test(trimmed)) return trimmed
  const base = scopeUri.endsWith('/') ? scopeUri : `${scopeUri}/`
  const relative = trimmed.replace(/^\.\//, '')
  return base + relative.split('/').map((segment) => segment.replace(/[%?#]/g, (c) => encodeURIComponent(c))).join('/')
}

async function directoryEntries(ctx: AppContext, user: User, uri: string) {
  const { node } = await resolveNode(ctx.db, { caller: user, uri })
  const directory = await directoryOf(ctx, user, node)
  return { directory, entries: await welcomeEntries(ctx.db, user, directory, await listDirectory(ctx, user, directory)) }
}

const DirectoryQuery = Schema.Struct({ uri: FormString.check(Schema.isMinLength(1)) })
const ResumeQuery = Schema.Struct({ message_key: MessageKey })

export function chatRoutes(ctx: AppContext): Router {
  const router = Router()
  router.use(CHAT_PREFIX, redirectHtmxToSignIn(), requireAuth(), formBody({ limit: FORM_LIMIT }), requireCsrf())

  router.post(`${CHAT_PREFIX}/stream`, async (req, res) => {
    const form = decodeBody(ChatStreamForm, req.body)
    const request = decodeBody(StreamRequest, { uri: form.uri, model_id: form.model_id, message: form.message, history: parseHistory(form.history) })
    const history = checkStreamRequest(request, { maxMessageChars: ctx.config.maxMessageChars })
    const user = req.auth!.user
    const input = { uri: request.uri, modelId: request.model_id, message: request.message, history }
    const admitted = await admitTurnStream(ctx, { user, input, modelsHint: 'pick one from the model list' })
    await streamTurn(ctx, { res, user, admitted, input, project: (sse) => htmlTurnProjector({ sse, key: form.message_key, login: user.login }) })
  })

  router.get(`${CHAT_PREFIX}/turns/:id/events`, async (req, res) => {
    const { message_key: key } = decodeQuery(ResumeQuery, req)
    const user = req.auth!.user
    await resumeTurnStream(ctx, {
      req,
      res,
      user,
      turnId: String(req.params.id),
      replayFromStart: true,
      project: (sse, { after }) => resumedHtmlProjector({ sse, key, login: user.login, after }),
    })
  })

  router.post(`${CHAT_PREFIX}/command`, async (req, res) => {
    const form = decodeBody(ChatCommandForm, req.body)
    const user = req.auth!.user
    const command = {
      command: form.command,
      scopeUri: form.uri,
      targetUri: resolveCommandTarget({ scopeUri: form.uri, path: form.path }),
      query: form.query,
      offset: form.offset,
    }
    const outcome: CommandOutcome = { command: form.command, ...(await runExplicitCommand(ctx, { user, command })) }
    const html =
      form.placement === 'dialog' || form.message_key === undefined
        ? await renderFragment(CommandCard({ outcome }))
        : await renderFragment(CommandMessage({ messageKey: form.message_key, outcome }))
    res.type('html').send(html)
  })

  router.get(`${CHAT_PREFIX}/welcome`, async (req, res) => {
    const { directory, entries } = await directoryEntries(ctx, req.auth!.user, decodeQuery(DirectoryQuery, req).uri)
    res.type('html').send(await renderFragment(Welcome({ directoryUri: directory.uri, entries })))
  })

  router.use(
    CHAT_PREFIX,
    fragmentErrorHandler(ctx.logger, ({ message }, req) => {
      const key = (req.body as Record<string, unknown> | undefined)?.message_key
      return CommandRefused({ messageKey: isMessageKey(key) ? key : undefined, message })
    }),
  )
  return router
}
