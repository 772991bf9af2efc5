// Request decoding shared by every route: Schema-decoded bodies and query strings. Anything that
// does not decode is a 400 `invalid_request` that says what is wrong — never silently corrected
// (`limit=-1` is not 1) and never a 500 (`offset=1e400` is not a database error).
import * as Schema from 'effect/Schema'
import * as SchemaGetter from 'effect/SchemaGetter'
import type { Request } from 'express'
import { describeDecodeError } from '../effects/describe-decode-error.ts'
import { badRequest } from './http-errors.ts'

/** A whole number a JavaScript number, PostgreSQL's bigint and every page offset can hold exactly. */
export function SafeInt({ minimum, maximum = Number.MAX_SAFE_INTEGER }: { minimum: number; maximum?: number }) {
  return Schema.Int.check(Schema.isBetween({ minimum, maximum }))
}

/** A query-string integer: decimal digits only (no sign, exponent, or fraction), then `SafeInt`. */
export function QueryInt({ minimum, maximum = Number.MAX_SAFE_INTEGER }: { minimum: number; maximum?: number }) {
  return Schema.String.check(Schema.isPattern(/^\d{1,16}$/, { message: `expected a whole number from ${minimum} to ${maximum}` })).pipe(
    Schema.decodeTo(SafeInt({ minimum, maximum }), {
      decode: SchemaGetter.transform((text: string) => Number(text)),
      encode: SchemaGetter.transform((value: number) => String(value)),
    }),
  )
}

type Decodable = Schema.Top & { readonly DecodingServices: never }

function decode<S extends Decodable>(schema: S, input: unknown, onExcessProperty: 'error' | 'ignore'): S['Type'] {
  try {
    return Schema.decodeUnknownSync(schema as never)(input, { errors: 'all', onExcessProperty }) as S['Type']
  } catch (error) {
    throw badRequest(`invalid request: ${describeDecodeError(error)}`, 'invalid_request')
  }
}

/**
 * Decodes a request body (JSON or form). Unknown fields are refused, except `_csrf`: the CSRF form
 * field, already checked by `requireCsrf`.
 */
export function decodeBody<S extends Decodable>(schema: S, body: unknown): S['Type'] {
  return decode(schema, bodyFields(body), 'error')
}

/** A request body's fields, for a use case that decodes them itself: an object (else 400 `invalid_body`), without `_csrf`. */
export function bodyFields(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest('expected a JSON object body (Content-Type: application/json)', 'invalid_body')
  }
  const { _csrf: _ignored, ...fields } = body as Record<string, unknown>
  return fields
}

/**
 * Decodes `req.query`. Parameters the schema does not name are ignored (links carry all sorts);
 * a named one given twice (`?limit=1&limit=2`, an array) does not decode.
 */
export function decodeQuery<S extends Decodable>(schema: S, req: Request): S['Type'] {
  return decode(schema, { ...(req.query as Record<string, unknown>) }, 'ignore')
}
