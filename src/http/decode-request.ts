// Request decoding shared by every route: Schema at the boundary, a 400 that says what is wrong.
import { Schema } from 'effect'
import { badRequest } from './http-errors.ts'

/** Decodes a request body with Schema; failures are a 400 that says what is wrong. */
export function decodeBody<S extends Schema.Top & { readonly DecodingServices: never }>(schema: S, body: unknown): S['Type'] {
  if (body === undefined || body === null || typeof body !== 'object') {
    throw badRequest('expected a JSON object body (Content-Type: application/json)', 'invalid_body')
  }
  try {
    return Schema.decodeUnknownSync(schema as never)(body, { errors: 'all', onExcessProperty: 'error' }) as S['Type']
  } catch (error) {
    throw badRequest(`invalid request: ${(error as Error).message.replace(/\n\s*/g, ' ')}`, 'invalid_request')
  }
}
