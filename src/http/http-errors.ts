/** An error that reaches HTTP with a status and a stable code. */
export class HttpError extends Error {
  readonly status: number
  readonly code: string
  readonly headers: Record<string, string>
  constructor(status: number, code: string, message: string, headers: Record<string, string> = {}) {
    super(message)
    this.status = status
    this.code = code
    this.headers = headers
  }
}

/** The 401 message for a bearer token that is unknown or revoked. */
export const REVOKED_TOKEN_MESSAGE = 'invalid or revoked API token'

export const unauthorized = (message = 'sign in or send Authorization: Bearer <token>') =>
  new HttpError(401, 'unauthorized', message)
export const badRequest = (message: string, code = 'invalid_request') => new HttpError(400, code, message)
export const forbidden = (message: string, code = 'forbidden') => new HttpError(403, code, message)
