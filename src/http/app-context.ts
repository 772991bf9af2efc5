import type { Kysely } from 'kysely'
import type { AppConfig } from '../effects/config/app-config.ts'
import type { DB } from '../effects/db/schema.ts'
import type { Logger } from '../effects/logging/logger.ts'
import type { TokenMemo } from '../effects/auth/token-memo.ts'
import type { User } from '../effects/auth/users.ts'
import type { ModelRegistry } from '../effects/llm/model-registry.ts'
import type { ModelConnections } from '../effects/llm/model-connections.ts'
import type { ToolRegistry } from '../effects/tools/tool-registry.ts'
import type { PreStepHook } from '../effects/turn/pre-step-hooks.ts'
import type { CompileFeature } from '../effects/compile/compile-service.ts'
import type { ChangeFeed } from '../effects/db/change-feed.ts'
import type { RetrievalFeature } from '../effects/retrieval/retrieval-feature.ts'
import type { ServiceMetrics } from '../effects/observability/metrics.ts'
import type { DocumentParser } from '../effects/workspace/parse/document-parser.ts'
import type { LiveTurns } from '../effects/turn/live-turns.ts'

/** Everything a route needs, built once at start-up. */
export interface AppContext {
  readonly db: Kysely<DB>
  readonly ping: () => Promise<void>
  readonly config: AppConfig
  readonly secret: string
  readonly logger: Logger
  readonly models: ModelRegistry
  /** Admin → Model connections; absent in apps built without the composition root (then the page is not mounted). */
  readonly modelConnections?: ModelConnections | undefined
  readonly tools: ToolRegistry
  /** Parses uploads off the event loop, in child processes; released with the runtime. */
  readonly parser: DocumentParser
  /** Runs before every model step of every turn (features register theirs in the composition root). */
  readonly preStep?: PreStepHook | undefined
  /** Compile jobs (queueing, the task center, live updates); absent when the server runs without a queue. */
  readonly compile?: CompileFeature | undefined
  /** Retrieval services (Bailian), when `retrieval.bailian.enabled` is not false: its settings page is mounted. */
  readonly retrieval?: RetrievalFeature | undefined
  /** Keep-alive comment interval on idle SSE streams (default 15 s). */
  readonly sseKeepAliveMs?: number | undefined
  /**
   * How often a job stream re-checks the session or token it was opened with (default 15 s; tests
   * change it). It also re-checks at once when `feed` says one of its user's credentials ended.
   */
  readonly credentialRecheckMs?: number | undefined
  /** The process's change feed (LISTEN), when it follows one (serve). */
  readonly feed?: ChangeFeed | undefined
  /** Aborted when the server shuts down: long-lived responses (SSE) end on it, and the turns still running. */
  readonly shutdownSignal: AbortSignal
  /** The turns this process runs: started by the stream routes, stopped by a command, followed after a reconnect. */
  readonly turns: LiveTurns
  /** This process's id in the instance registry, recorded on every turn it runs. */
  readonly instanceId?: string | undefined
  /** Users of bearer tokens verified a moment ago (token-memo.ts); without it every request looks its token up. */
  readonly tokenMemo?: TokenMemo | undefined
  /** The service's metrics (/metrics, Admin → Status); absent or NO_METRICS when `metrics.enabled` is off. */
  readonly metrics?: ServiceMetrics | undefined
  /** The clock for sessions, sign-in throttling and rate limits (ms since the epoch; tests inject one). */
  readonly now?: (() => number) | undefined
}

export interface RequestAuth {
  readonly user: User
  readonly via: 'session' | 'token'
  /** Present for session auth: required on state-changing requests. */
  readonly csrfToken: string | undefined
  /** The HMAC of the bearer token the request was authenticated with (`via: 'token'`). */
  readonly tokenHash?: string | undefined
  /**
   * Set when the user came from the token memo, unchecked: only on the requests whose turn
   * admission checks the token itself (TOKEN_CHECKED_AT_ADMISSION). Every error response checks
   * it first (a revoked token gets 401, never another error).
   */
  readonly uncheckedTokenHash?: string | undefined
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      auth?: RequestAuth
      requestId?: string
    }
  }
}
