/** An error that reaches HTTP with a status and a stable code. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

export const unauthorized = (message = 'sign in or send Authorization: Bearer <token>') =>
  new HttpError(401, 'unauthorized', message)
export const badRequest = (message: string, code = 'invalid_request') => new HttpError(400, code, message)
export const forbidden = (message: string, code = 'forbidden') => new HttpError(403, code, message)
