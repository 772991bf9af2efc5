// Removes secrets (API keys) and provider endpoints from text before it leaves the model
// gateway. Provider error bodies sometimes echo the key ("Incorrect API key provided: sk-…")
// or the URL; neither may reach a client, a log line or a stored turn (SPEC §2, §10).
import {
  ProviderConnectionError,
  ProviderHttpError,
  ProviderProtocolError,
  ProviderStreamError,
  StreamIdleTimeout,
  StreamIncomplete,
} from './model-errors.ts'
import type { ModelError, ModelResult } from './model.ts'

export const REDACTED = '[redacted]'

export type Redact = (text: string) => string

/** Replaces every occurrence of each non-empty secret, longest first. */
export function createRedactor(secrets: ReadonlyArray<string | undefined>): Redact {
  const needles = [...new Set(secrets.filter((s): s is string => s !== undefined && s.length >= 4))].sort(
    (a, b) => b.length - a.length,
  )
  if (needles.length === 0) return (text) => text
  return (text) => {
    let out = text
    for (const needle of needles) if (out.includes(needle)) out = out.split(needle).join(REDACTED)
    return out
  }
}

/**
 * `createRedactor` for text that arrives in pieces (a model's streamed deltas): `push` returns what
 * may be sent now, with every complete secret replaced; it holds back only the end of the text
 * that could still become a secret (the longest suffix that is a secret's beginning: at most the
 * longest secret's length − 1 characters, and nothing for ordinary text). `flush` returns the rest
 * when the stream ends. A key split across deltas is therefore never sent, whole or in parts.
 */
export function createStreamRedactor(secrets: ReadonlyArray<string | undefined>): { readonly push: (text: string) => string; readonly flush: () => string } {
  const needles = [...new Set(secrets.filter((s): s is string => s !== undefined && s.length >= 4))]
  if (needles.length === 0) return { push: (text) => text, flush: () => '' }
  const redact = createRedactor(needles)
  let held = ''
  const heldBack = (text: string): number => {
    let longest = 0
    for (const needle of needles) {
      for (let k = Math.min(needle.length - 1, text.length); k > longest; k--) {
        if (text.charCodeAt(text.length - k) === needle.charCodeAt(0) && text.endsWith(needle.slice(0, k))) {
          longest = k
          break
        }
      }
    }
    return longest
  }
  return {
    push: (text) => {
      const pending = redact(held + text)
      const keep = heldBack(pending)
      held = pending.slice(pending.length - keep)
      return pending.slice(0, pending.length - keep)
    },
    flush: () => {
      const rest = held
      held = ''
      return rest
    },
  }
}

/** A request header that carries a credential by its name (`api-key`, `X-Auth-Token`, `Cookie`…); attribution headers such as `X-Title` do not. */
const CREDENTIAL_HEADER = /auth|key|token|secret|password|passwd|credential|signature|cookie|session/i

/** A header's value as a secret: whole, and without its scheme ("Bearer tok…" → also "tok…", which a provider may echo alone). */
const valueSecrets = (value: string): string[] => {
  const whole = value.trim()
  const credential = /^[A-Za-z][\w-]*\s+(\S.*)$/u.exec(whole)?.[1]
  return credential === undefined ? [whole] : [whole, credential]
}

/** The values of `headers` that are credentials by their header's name. */
function credentialHeaderValues(headers: Readonly<Record<string, string>> | undefined): string[] {
  return Object.entries(headers ?? {})
    .filter(([name]) => CREDENTIAL_HEADER.test(name))
    .flatMap(([, value]) => valueSecrets(value))
}

/**
 * Secrets of one provider. Error messages lose the key, every extra header's value (as the
 * connection's Test shows them) and the base URL and its host (endpoints stay server-side). A
 * model's output loses the key and the credential headers' values (Azure's `api-key`, a gateway's
 * token), not an attribution header's (`X-Title: knowagent` stays a word the model may write).
 */
export function createProviderRedactors({
  apiKey,
  baseUrl,
  headers,
}: {
  readonly apiKey: string | undefined
  readonly baseUrl: string
  readonly headers?: Readonly<Record<string, string>> | undefined
}): {
  readonly redactMessage: Redact
  readonly redactOutput: Redact
  /** Everything `redactOutput` removes, for the streamed deltas' redactor. */
  readonly outputSecrets: ReadonlyArray<string | undefined>
} {
  const outputSecrets = [apiKey, ...credentialHeaderValues(headers)]
  return {
    redactMessage: createRedactor([apiKey, ...Object.values(headers ?? {}).map((value) => value.trim()), ...outputSecrets, baseUrl, baseUrl.replace(/\/+$/, ''), hostOf(baseUrl)]),
    redactOutput: createRedactor(outputSecrets),
    outputSecrets,
  }
}

export function redactModelError({
  error,
  redactMessage,
  redactOutput,
}: {
  readonly error: ModelError
  readonly redactMessage: Redact
  readonly redactOutput: Redact
}): ModelError {
  switch (error._tag) {
    case 'ProviderHttpError':
      return new ProviderHttpError({
        status: error.status,
        code: mapOptional(error.code, redactMessage),
        message: redactMessage(error.message),
        retryAfterMs: error.retryAfterMs,
      })
    case 'ProviderConnectionError':
      return new ProviderConnectionError({ message: redactMessage(error.message) })
    case 'ProviderStreamError':
      return new ProviderStreamError({
        code: mapOptional(error.code, redactMessage),
        message: redactMessage(error.message),
        partialText: redactOutput(error.partialText),
      })
    case 'StreamIncomplete':
      return new StreamIncomplete({ message: redactMessage(error.message), partialText: redactOutput(error.partialText) })
    case 'StreamIdleTimeout':
      return new StreamIdleTimeout({ idleMs: error.idleMs, partialText: redactOutput(error.partialText) })
    case 'ProviderProtocolError':
      return new ProviderProtocolError({ message: redactMessage(error.message), partialText: redactOutput(error.partialText) })
    case 'MissingApiKey':
      return error
  }
}

export function redactModelResult({ result, redactOutput }: { readonly result: ModelResult; readonly redactOutput: Redact }): ModelResult {
  return {
    ...result,
    text: redactOutput(result.text),
    thinking: redactOutput(result.thinking),
    toolCalls: result.toolCalls.map((call) => ({
      ...call,
      rawArguments: redactOutput(call.rawArguments),
      argumentsJson: mapOptional(call.argumentsJson, redactOutput),
      argumentsError: mapOptional(call.argumentsError, redactOutput),
    })),
  }
}

function mapOptional(value: string | undefined, f: Redact): string | undefined {
  return value === undefined ? undefined : f(value)
}

function hostOf(baseUrl: string): string | undefined {
  try {
    return new URL(baseUrl).host
  } catch {
    return undefined
  }
}
