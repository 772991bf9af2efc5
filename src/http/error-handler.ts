import type { ErrorRequestHandler, Request } from 'express'
import type { Logger } from '../effects/logging/logger.ts'
import { HttpError, REVOKED_TOKEN_MESSAGE, unauthorized } from './http-errors.ts'
import { NUL_MESSAGE } from './json-body.ts'

export function wantsJson(req: Request): boolean {
  return req.originalUrl.startsWith('/api/') || (req.get('accept') ?? '').includes('application/json')
}

/** body-parser's error types, as our codes (docs/api.md, Error codes). */
const BODY_PARSER_CODES: Readonly<Record<string, string>> = {
  'entity.too.large': 'payload_too_large',
  'entity.parse.failed': 'invalid_json',
  'charset.unsupported': 'unsupported_media_type', // a JSON body in a charset other than UTF-8
  'encoding.unsupported': 'unsupported_content_encoding', // a Content-Encoding other than gzip, deflate, br, zstd (or two)
}

/** Maps any error to a status and `{ error: { code, message, …details } }` (JSON) or a short page. */
export function describeError(error: unknown): { status: number; code: string; message: string; headers: Record<string, string>; details?: Readonly<Record<string, unknown>> | undefined } {
  if (error instanceof HttpError) return { status: error.status, code: error.code, message: error.message, headers: error.headers }
  if (isPublicError(error)) return { status: error.status, code: error.code, message: error.message, headers: { ...error.headers }, details: error.details }
  const tagged = error as { type?: string; statusCode?: number; message?: string }
  // body-parser errors (invalid JSON, too large)
  if (typeof tagged?.statusCode === 'number' && tagged.statusCode >= 400 && tagged.statusCode < 500) {
    const code = BODY_PARSER_CODES[tagged.type ?? ''] ?? 'invalid_request'
    return { status: tagged.statusCode, code, message: String(tagged.message), headers: {} }
  }
  // Text PostgreSQL cannot store: a NUL character (U+0000) in any field that reached a query.
  // Refused where it is checked (names, URIs, model ids); anywhere else this is the safety net.
  if (isUnstorableText(error)) return { status: 400, code: 'invalid_request', message: NUL_MESSAGE, headers: {} }
  // Every database connection stayed busy for the pool's whole wait: the server is overloaded, not broken.
  if (isPoolExhausted(error)) return { status: 503, code: 'busy', message: 'the server is busy; retry in a moment', headers: { 'Retry-After': '1' } }
  return { status: 500, code: 'internal_error', message: 'internal server error', headers: {} }
}


/** PostgreSQL's character_not_in_repertoire (22021): "invalid byte sequence for encoding UTF8: 0x00". */
function isUnstorableText(error: unknown): boolean {
  const candidate = error as { code?: unknown; severity?: unknown } | null
  return typeof candidate === 'object' && candidate !== null && candidate.code === '22021' && typeof candidate.severity === 'string'
}

/** pg-pool's own error when no connection came free within `connectionTimeoutMillis` (it sets no code). */
function isPoolExhausted(error: unknown): boolean {
  return error instanceof Error && error.message === 'timeout exceeded when trying to connect'
}

/**
 * A domain failure that knows its public face: a tagged error class with a stable `code` and an
 * HTTP `status` (workspace errors, UnknownModel, ToolError, …). One rule maps all of them.
 */
export interface PublicError {
  readonly _tag: string
  readonly code: string
  readonly status: number
  readonly message: string
  /** Headers of the answer (a 429's `Retry-After`). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Fields the JSON error body carries besides `code` and `message` (a conflict's `job_id`). */
  readonly details?: Readonly<Record<string, unknown>> | undefined
}

export function isPublicError(error: unknown): error is PublicError {
  const candidate = error as Partial<PublicError> | null
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate._tag === 'string' &&
    typeof candidate.code === 'string' &&
    typeof candidate.status === 'number' &&
    candidate.status >= 400 &&
    candidate.status < 600
  )
}

/**
 * The error to answer with once the request's token is checked (`check`, authenticate.ts): the
 * failure itself, a 401 when the token is no longer live, or — when the check itself fails (the
 * database is unreachable) — an internal error that says nothing of the original one.
 */
export async function errorAfterTokenCheck(failure: unknown, check: () => Promise<boolean>): Promise<unknown> {
  try {
    return (await check()) ? failure : unauthorized(REVOKED_TOKEN_MESSAGE)
  } catch (checkFailure) {
    return new Error(`could not check the API token: ${checkFailure instanceof Error ? checkFailure.message : String(checkFailure)}`, { cause: failure })
  }
}

export function createErrorHandler(
  logger: Logger,
  {
    checkToken = async () => true,
  }: {
    /** False when the request's bearer token, taken unchecked from the memo, is no longer live: the answer is then 401 (authenticate.ts). */
    checkToken?: (req: Request) => Promise<boolean>
  } = {},
): ErrorRequestHandler {
  return async (failure, req, res, _next) => {
    const error = await errorAfterTokenCheck(failure, () => checkToken(req))
    const described = describeError(error)
    if (described.status >= 500) {
      logger.error('request failed', { request_id: req.requestId, method: req.method, path: req.path, error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error) })
    }
    if (res.headersSent) {
      res.end()
      return
    }
    res.status(described.status).set(described.headers)
    if (wantsJson(req)) {
      res.json({ error: { code: described.code, message: described.message, ...described.details, request_id: req.requestId } })
    } else {
      res.type('text/plain').send(`${described.status} ${described.message}${req.requestId ? `\n\nrequest id: ${req.requestId}` : ''}`)
    }
  }
}
