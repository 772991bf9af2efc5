// Request decoding shared by every route: Schema-decoded bodies and query strings. Anything that
// does not decode is a 400 `invalid_request` that says what is wrong — never silently corrected
// (`limit=-1` is not 1) and never a 500 (`offset=1e400` is not a database error).
import * as Schema from 'effect/Schema'
import * as SchemaGetter from 'effect/SchemaGetter'
import * as SchemaIssue from 'effect/SchemaIssue'
import type { Request } from 'express'
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

const standardIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** A field's path as a person reads it: `messages[0].content`. */
function fieldName(path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined): string | undefined {
  if (!path || path.length === 0) return undefined
  return path
    .map((part) => (typeof part === 'object' && part !== null ? part.key : part))
    .reduce<string>((name, key) => (typeof key === 'number' ? `${name}[${key}]` : name === '' ? String(key) : `${name}.${String(key)}`), '')
}

/** One issue in words: `"notice" must be one of "uploaded", "token_revoked"` rather than the schema's `Expected "uploaded" | … at ["notice"]`. */
function issueInWords(name: string | undefined, message: string): string {
  const field = name === undefined ? 'the request' : JSON.stringify(name)
  if (message === 'Missing key') return `${field} is required`
  if (message === 'Expected no excess property') return `${field} is not a field this request takes`
  const choices = /^Expected ((?:"[^"]*"(?: \| )?)+)$/.exec(message)
  if (choices) return `${field} must be one of ${choices[1]!.split(' | ').join(', ')}`
  return `${field}: ${message.charAt(0).toLowerCase()}${message.slice(1)}`
}

/** What did not decode, in words: each field and what it must be (at most five). */
export function describeDecodeError(error: unknown): string {
  const issue = (error as { readonly issue?: SchemaIssue.Issue } | null)?.issue
  if (issue === undefined) return (error as Error).message.replace(/\n\s*/g, ' ')
  const { issues } = standardIssues(issue)
  const words = issues.slice(0, 5).map(({ path, message }) => issueInWords(fieldName(path), message.replace(/\n\s*/g, ' ')))
  return `${words.join('; ')}${issues.length > 5 ? `; and ${issues.length - 5} more` : ''}`
}

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
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest('expected a JSON object body (Content-Type: application/json)', 'invalid_body')
  }
  const { _csrf: _ignored, ...fields } = body as Record<string, unknown>
  return decode(schema, fields, 'error')
}

/**
 * Decodes `req.query`. Parameters the schema does not name are ignored (links carry all sorts);
 * a named one given twice (`?limit=1&limit=2`, an array) does not decode.
 */
export function decodeQuery<S extends Decodable>(schema: S, req: Request): S['Type'] {
  return decode(schema, { ...(req.query as Record<string, unknown>) }, 'ignore')
}
