// Failures of the Bailian knowledge API, as data. Each class knows its public `code` (docs/api.md)
// and never carries the API key: messages are built from the service's answer, which is redacted
// by the client before it gets here, and from names of settings, never their values.
import * as Data from 'effect/Data'

/** Which of the two required values is missing. */
export type MissingCredential = 'apiKey' | 'workspaceId'

/** The API key or the workspace id resolved to nothing in every layer. */
export class BailianMissingCredentials extends Data.TaggedError('BailianMissingCredentials')<{
  readonly missing: MissingCredential
}> {
  get code(): string {
    return 'retrieval.not_configured'
  }
  override get message(): string {
    return this.missing === 'apiKey'
      ? 'the Bailian API key (DASHSCOPE_API_KEY) is not configured. Set it on the settings page (Settings → Retrieval services, ' +
          'stored encrypted for your account) or ask the operator to set DASHSCOPE_API_KEY in the server environment. ' +
          'Create a key at https://bailian.console.aliyun.com/?tab=app#/api-key.'
      : 'the Bailian workspace id (BAILIAN_WORKSPACE_ID) is not configured. Set it on the settings page (Settings → Retrieval services), ' +
          'in the server config (retrieval.bailian.workspaceId) or as BAILIAN_WORKSPACE_ID in the server environment; ' +
          'it is the subdomain of your Bailian endpoints, shown in the Bailian console.'
  }
}

/**
 * A non-2xx answer, or a 2xx JSON answer with `success: false`. `detail` is `code: message` when
 * the body had them, else the body text; at most 500 characters.
 */
export class BailianHttpError extends Data.TaggedError('BailianHttpError')<{
  /** The operation that failed: list, search or chat. */
  readonly operation: BailianOperation
  readonly status: number
  /** The service's own error code (`InvalidApiKey`, `AgentApp.NotFound` …), when it sent one. */
  readonly serverCode: string | undefined
  readonly detail: string
  readonly requestId: string | undefined
}> {
  get code(): string {
    if (this.status === 429) return 'retrieval.throttled'
    return this.status >= 500 ? 'retrieval.server_error' : 'retrieval.rejected'
  }
  /** The request itself was refused (4xx, or a `success: false` answer) — not throttling. */
  get isRejection(): boolean {
    return this.status !== 429 && (this.status < 500 || this.status === 200)
  }
  override get message(): string {
    const status = this.status === 200 ? 'success: false' : `HTTP ${this.status}`
    return `Bailian ${this.operation} failed (${status}): ${this.detail}`
  }
}

/** No answer within the configured time. For chat, the text received so far is kept. */
export class BailianTimeout extends Data.TaggedError('BailianTimeout')<{
  readonly operation: BailianOperation
  readonly timeoutMs: number
  readonly partialText: string
}> {
  get code(): string {
    return 'retrieval.timeout'
  }
  override get message(): string {
    if (this.operation === 'chat') {
      return (
        `the knowledge chat did not finish within ${this.timeoutMs} ms. The service runs a multi-round retrieval loop ` +
        '(planning, several searches, reranking, then generation), and long questions can exceed the configured timeout. ' +
        'Retry, ask a narrower question, or use kb_search to get the raw passages instead.'
      )
    }
    return `Bailian ${this.operation} did not answer within ${this.timeoutMs} ms; retry later`
  }
}

/** The service could not be reached, or the connection broke before an answer. */
export class BailianConnectionError extends Data.TaggedError('BailianConnectionError')<{
  readonly operation: BailianOperation
  /** An error code such as ECONNREFUSED; never a host name or URL. */
  readonly reason: string
}> {
  get code(): string {
    return 'retrieval.connection'
  }
  override get message(): string {
    return `could not reach the Bailian service for ${this.operation} (${this.reason})`
  }
}

/** The chat stream reported an error (`event: error`), possibly after some answer text. */
export class BailianStreamError extends Data.TaggedError('BailianStreamError')<{
  readonly serverCode: string | undefined
  readonly detail: string
  readonly requestId: string | undefined
  readonly partialText: string
}> {
  get code(): string {
    return 'retrieval.stream_error'
  }
  override get message(): string {
    return `the knowledge chat reported an error: ${this.detail}`
  }
}

/** The chat stream ended (EOF or a lost connection) without a finish reason. */
export class BailianStreamIncomplete extends Data.TaggedError('BailianStreamIncomplete')<{
  readonly reason: string
  readonly partialText: string
}> {
  get code(): string {
    return 'retrieval.incomplete'
  }
  override get message(): string {
    return `the knowledge chat stream ended early: ${this.reason}`
  }
}

/** The service answered something that is not the documented shape. */
export class BailianProtocolError extends Data.TaggedError('BailianProtocolError')<{
  readonly operation: BailianOperation
  readonly detail: string
  readonly partialText: string
}> {
  get code(): string {
    return 'retrieval.protocol'
  }
  override get message(): string {
    return `unreadable answer from Bailian ${this.operation}: ${this.detail}`
  }
}

export type BailianOperation = 'list' | 'search' | 'chat'

/** Every expected failure of a call to the service (what the HTTP client can fail with). */
export type BailianClientError = BailianHttpError | BailianTimeout | BailianConnectionError | BailianStreamError | BailianStreamIncomplete | BailianProtocolError

export type BailianError = BailianMissingCredentials | BailianClientError
