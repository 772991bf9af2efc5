// Reads the error shapes providers put in HTTP error bodies and inside streams:
//   OpenAI / Azure / DeepSeek / OpenRouter   {"error": {"code", "type", "message"}}
//   vLLM                                     {"object": "error", "message", "code", "type"}
//   DashScope                                {"code", "message", "request_id"}
//   FastAPI-style servers                    {"detail": "..."}
//   anything else                            plain text (HTML pages included)

export const PROVIDER_MESSAGE_MAX_CHARS = 500

export interface ProviderErrorPayload {
  readonly code: string | undefined
  readonly message: string
}

/** The error carried by a parsed JSON value, or undefined when it is not an error shape. */
export function readProviderErrorPayload(value: unknown): ProviderErrorPayload | undefined {
  if (!isRecord(value)) return undefined
  const nested = value['error']
  if (typeof nested === 'string' && nested !== '') return { code: undefined, message: nested }
  if (isRecord(nested)) {
    return {
      code: codeText(nested['code']) ?? codeText(nested['type']),
      message: messageText(nested['message']) ?? JSON.stringify(nested),
    }
  }
  if (value['object'] === 'error') {
    return { code: codeText(value['code']) ?? codeText(value['type']), message: messageText(value['message']) ?? '' }
  }
  const hasChoices = 'choices' in value
  const message = messageText(value['message'])
  const code = codeText(value['code'])
  if (!hasChoices && message !== undefined && code !== undefined) return { code, message }
  if (!hasChoices && typeof value['detail'] === 'string') return { code: undefined, message: value['detail'] }
  return undefined
}

/** Code and message from a non-2xx response body; falls back to the (trimmed) text itself. */
export function parseProviderErrorBody({
  bodyText,
  statusText,
}: {
  readonly bodyText: string
  readonly statusText: string
}): ProviderErrorPayload {
  const fromJson = readProviderErrorPayload(parseJsonOrUndefined(bodyText))
  const raw = fromJson ?? { code: undefined, message: bodyText.trim() }
  const message = raw.message === '' ? statusText : raw.message
  return { code: raw.code, message: truncateForDisplay(message) }
}

/** At most `maxChars` code points, never splitting one; "…" marks a cut. */
export function truncateForDisplay(text: string, maxChars: number = PROVIDER_MESSAGE_MAX_CHARS): string {
  if (text.length <= maxChars) return text
  const codePoints = Array.from(text)
  if (codePoints.length <= maxChars) return text
  return codePoints.slice(0, maxChars - 1).join('') + '…'
}

function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function codeText(value: unknown): string | undefined {
  if (typeof value === 'string' && value !== '') return value
  if (typeof value === 'number' && Number.isFinite(value)) return String(value)
  return undefined
}

function messageText(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
