// When and how long to wait before retrying a provider request. Retries happen only before the
// first byte of a response body (nothing has been shown to the user yet).

export const DEFAULT_MAX_RETRIES = 2
export const DEFAULT_RETRY_BASE_DELAY_MS = 500
/** A provider asking for a longer wait than this is not retried: the error is returned at once. */
export const DEFAULT_MAX_RETRY_DELAY_MS = 20_000

/** 408 (request timeout), 429 (rate limit) and 5xx are worth another try; other 4xx are not. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599)
}

/**
 * `retry-after-ms` (OpenAI, Azure) or `Retry-After` as delta-seconds or an HTTP date.
 * Undefined when absent or unreadable; never negative.
 */
export function parseRetryAfterMs({ headers, nowMs }: { readonly headers: Headers; readonly nowMs: number }): number | undefined {
  const milliseconds = headers.get('retry-after-ms')
  if (milliseconds !== null && /^\s*\d+(\.\d+)?\s*$/.test(milliseconds)) return Math.ceil(Number(milliseconds))
  const value = headers.get('retry-after')?.trim()
  if (value === undefined || value === '') return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000)
  if (!/[a-z]/i.test(value)) return undefined // "-5" and the like: Date.parse would accept them
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs)
}

/**
 * The wait before retry number `retryNumber` (0-based), or undefined when the provider's own
 * `Retry-After` exceeds the cap (retrying sooner than asked would only fail again).
 */
export function computeRetryDelayMs({
  retryNumber,
  retryAfterMs,
  baseDelayMs = DEFAULT_RETRY_BASE_DELAY_MS,
  maxDelayMs = DEFAULT_MAX_RETRY_DELAY_MS,
}: {
  readonly retryNumber: number
  readonly retryAfterMs: number | undefined
  readonly baseDelayMs?: number | undefined
  readonly maxDelayMs?: number | undefined
}): number | undefined {
  if (retryAfterMs !== undefined) return retryAfterMs <= maxDelayMs ? retryAfterMs : undefined
  return Math.min(maxDelayMs, baseDelayMs * 2 ** retryNumber)
}
