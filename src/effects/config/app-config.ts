// Configuration: a JSON file (validated with Schema, errors name the bad key) plus environment.
import * as Context from 'effect/Context'
import * as Layer from 'effect/Layer'
import * as Schema from 'effect/Schema'
import { CronExpressionParser } from 'cron-parser'
import { existsSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { resolve } from 'node:path'
import { ModelsConfigSchema } from '../llm/model-config.ts'
import { DEFAULT_TURN_SECONDS } from '../../machines/turn-contract.ts'
import { CliProfilesSchema, CompileSettingsSchema } from '../compile/compile-config.ts'
import { type BailianConfig, resolveBailianConfig, RetrievalConfigSchema } from '../retrieval/bailian-config.ts'
import { DEFAULT_TRASH_RETENTION_DAYS } from '../workspace/trash.ts'
import { DEFAULT_PARSE_LIMITS, DEFAULT_PARSE_MEMORY_MB, DEFAULT_PARSE_TIMEOUT_MS, defaultParserProcesses } from '../workspace/parse/parse-outcome.ts'

const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))

/** Why `cron` is not a cron expression the backup schedule takes (five or six fields, UTC), or undefined. */
export function cronProblem(cron: string): string | undefined {
  const fields = cron.trim().split(/\s+/).length
  if (fields < 5 || fields > 6) return `expected a cron expression of 5 fields (minute hour day month weekday) or 6 (with seconds first), got ${fields}`
  try {
    CronExpressionParser.parse(cron, { tz: 'UTC', strict: false })
    return undefined
  } catch (error) {
    return `not a cron expression: ${error instanceof Error ? error.message : String(error)}`
  }
}

export const ConfigFileSchema = Schema.Struct({
  /** OpenAI-compatible model entries (docs/models.md); `local` is always added. */
  models: Schema.optional(ModelsConfigSchema),
  /** Fixed argument vectors for the CLI compile channel (docs/compile.md). */
  cliProfiles: Schema.optional(CliProfilesSchema),
  /** Compile defaults, queue and worker settings (docs/compile.md). */
  compile: Schema.optional(CompileSettingsSchema),
  server: Schema.optional(
    Schema.Struct({
      /** Trust X-Forwarded-* from a reverse proxy (sets Secure cookies behind https). */
      trustProxy: Schema.optional(Schema.Boolean),
      /** Force the Secure cookie flag even without a proxy (when served over https directly). */
      secureCookies: Schema.optional(Schema.Boolean),
      sessionTtlHours: Schema.optional(PositiveInt),
    }),
  ),
  limits: Schema.optional(
    Schema.Struct({
      /** Streams per user per minute on POST stream. */
      streamsPerMinute: Schema.optional(PositiveInt),
      /** Compile requests (queue or retry) per user per minute, across every server process. */
      compileRequestsPerMinute: Schema.optional(PositiveInt),
      /** Largest chat message accepted, in characters. */
      maxMessageChars: Schema.optional(PositiveInt),
      /** Longest a turn may run, in seconds, whatever its provider streams (keep-alives included); then it fails `limit.turn_time`. */
      turnSeconds: Schema.optional(PositiveInt),
      /** Largest uploaded or imported file, in bytes (a file of exactly this size is accepted). */
      maxFileBytes: Schema.optional(PositiveInt),
      /** Files in one upload request. */
      maxFilesPerUpload: Schema.optional(PositiveInt),
      /** Bytes one imported zip may unpack to, all entries together (413 zip_too_large). */
      maxZipImportBytes: Schema.optional(PositiveInt),
      /** Every version of every file of one person, in MiB; an upload past it is refused (413 storage_quota_exceeded). */
      userStorageMb: Schema.optional(PositiveInt),
      /** MiB of new file versions one person may upload in any 60 s (429 upload_rate_limited). */
      uploadMbPerMinute: Schema.optional(PositiveInt),
      /** Text extracted from one file, in Unicode code points; more fails the parse. */
      maxParsedChars: Schema.optional(PositiveInt),
      /** Bytes decompressed while parsing one file (DOCX parts, PDF streams). */
      maxInflatedBytes: Schema.optional(PositiveInt),
      parseTimeoutSeconds: Schema.optional(PositiveInt),
      /** Heap plus ArrayBuffers of one parser process. */
      parseMemoryMb: Schema.optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(32))),
      /** Parser child processes at most. */
      parserProcesses: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 64 }))),
      /** The old name of parserProcesses (parsers ran in worker threads), still read. */
      parserThreads: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 64 }))),
      /** Failed sign-ins per login before lock-outs start (then 1 s, 2 s, 4 s … up to signInMaxLockoutSeconds). */
      signInFailuresPerLogin: Schema.optional(PositiveInt),
      /** Failed sign-ins per client address (IPv6: per /64) before lock-outs start. */
      signInFailuresPerAddress: Schema.optional(PositiveInt),
      /** Longest sign-in lock-out, in seconds. */
      signInMaxLockoutSeconds: Schema.optional(PositiveInt),
      /** Password checks (scrypt) run at once per process; more wait in a short queue. */
      concurrentPasswordChecks: Schema.optional(PositiveInt),
    }),
  ),
  /** The Trash (docs/operations.md#trash): how long a deleted file or folder can be restored. */
  trash: Schema.optional(
    Schema.Struct({
      /** Days a deleted item stays in its owner's Trash before it is deleted for good. */
      retentionDays: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 3650 }))),
    }),
  ),
  /** Turns across instances: reconnecting, stored events, the owner's lease (docs/configuration.md). */
  turns: Schema.optional(
    Schema.Struct({
      /** How long a turn whose client is gone runs on, waiting for it to reconnect, before it is cancelled. */
      detachedGraceSeconds: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 3600 }))),
      /** A turn's events are kept this long after it ended, for a client that reconnects late. */
      eventRetentionSeconds: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 7 * 24 * 3600 }))),
      /** The events of ended turns take at most this many MiB in all; the oldest go first. */
      eventRetentionMb: Schema.optional(PositiveInt),
      /** A server instance that has not renewed its lease this long is dead: its running turns end `turn.interrupted`. */
      leaseSeconds: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 2, maximum: 600 }))),
    }),
  ),
  shutdown: Schema.optional(
    Schema.Struct({
      /** On SIGTERM, how long running turns may finish before the rest are cancelled (0: cancel at once). */
      drainSeconds: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3600 }))),
    }),
  ),
  /** Retrieval services (docs/retrieval.md). */
  retrieval: Schema.optional(RetrievalConfigSchema),
  /** GET /metrics in the Prometheus text format (docs/operations.md, "Metrics"). */
  metrics: Schema.optional(
    Schema.Struct({
      /** Serve /metrics and count (default false: nothing is counted). */
      enabled: Schema.optional(Schema.Boolean),
      /** A bearer token a scraper must send; without one, /metrics answers only this machine (loopback, no proxy headers). */
      token: Schema.optional(Schema.String.check(Schema.isMinLength(16))),
    }),
  ),
  log: Schema.optional(
    Schema.Struct({
      /** The least level written (LOG_LEVEL overrides it). */
      level: Schema.optional(Schema.Literals(['debug', 'info', 'warn', 'error'])),
    }),
  ),
  /** Scheduled backups, run by the server's queue (docs/operations.md, "Scheduled backups"). */
  backup: Schema.optional(
    Schema.Struct({
      /** A cron expression in UTC (5 fields, or 6 with seconds); absent: no scheduled backups. */
      schedule: Schema.optional(Schema.String.check(Schema.makeFilter((cron) => cronProblem(cron) ?? true))),
      /** Where the backups are written (relative to the working directory); default `<data dir>/backups`. */
      dir: Schema.optional(Schema.String.check(Schema.isMinLength(1))),
      /** How many scheduled backups to keep; older ones are deleted after each new one. Default 7. */
      keep: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 }))),
    }),
  ),
  /** Connections an administrator adds from the browser (Admin → Model connections, docs/models.md). */
  modelConnections: Schema.optional(
    Schema.Struct({
      /** Let a connection's base URL be a link-local cloud-metadata address (169.254.0.0/16, fd00:ec2::254). Default false. */
      allowMetadataAddresses: Schema.optional(Schema.Boolean),
    }),
  ),
})
export type ConfigFile = typeof ConfigFileSchema.Type

export interface AppConfig {
  readonly file: ConfigFile
  readonly configPath: string | undefined
  readonly port: number
  readonly host: string
  readonly databaseUrl: string | undefined
  readonly dataDir: string
  /** From KNOWAGENT_SECRET when set; otherwise resolved (generated) from the data dir at start-up. */
  readonly secretFromEnv: string | undefined
  readonly demoPassword: string | undefined
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error'
  readonly trustProxy: boolean
  /** `metrics.enabled` (default false) and `metrics.token`. */
  readonly metrics: { readonly enabled: boolean; readonly token: string | undefined }
  readonly secureCookies: boolean
  readonly sessionTtlHours: number
  readonly streamsPerMinute: number
  readonly compileRequestsPerMinute: number
  readonly maxMessageChars: number
  /** A turn's wall-clock limit (`limits.turnSeconds`, default 600). */
  readonly turnSeconds: number
  /** `turns.*`: a detached turn's grace, its stored events' retention, the owner instance's lease. */
  readonly turns: {
    readonly detachedGraceSeconds: number
    readonly eventRetentionSeconds: number
    readonly eventRetentionMb: number
    readonly leaseSeconds: number
  }
  /** `shutdown.drainSeconds` (default 30): how long SIGTERM lets running turns finish. */
  readonly drainSeconds: number
  readonly maxFileBytes: number
  /** `retrieval.bailian` with defaults (enabled unless switched off). */
  readonly retrievalBailian: BailianConfig
  readonly maxFilesPerUpload: number
  /** `limits.maxZipImportBytes` (default 1 GiB): what one imported zip may unpack to. */
  readonly maxZipImportBytes: number
  /** `limits.userStorageMb` (default 10,240 MiB) and `limits.uploadMbPerMinute` (default 1,024 MiB). */
  readonly userStorageMb: number
  readonly uploadMbPerMinute: number
  /** `trash.retentionDays` (default 30): how long a deleted item can be restored. */
  readonly trashRetentionDays: number
  /** The document parser's budgets (its process pool takes this object as it is). */
  readonly parsing: {
    readonly processes: number
    readonly timeoutMs: number
    readonly memoryLimitMb: number
    readonly limits: { readonly maxBytes: number; readonly maxChars: number; readonly maxInflatedBytes: number }
  }
  /** Where uploads are spooled while they arrive (each request gets a private folder, always removed). */
  readonly uploadTempDir: string
  readonly signInFailuresPerLogin: number
  readonly signInFailuresPerAddress: number
  readonly signInMaxLockoutSeconds: number
  readonly concurrentPasswordChecks: number
  /** `backup`: the schedule (absent: none), the folder (resolved) and how many to keep. */
  readonly backup: { readonly schedule: string | undefined; readonly dir: string; readonly keep: number }
  /** The whole environment, for API-key lookups at call time (never logged). */
  readonly env: Readonly<Record<string, string | undefined>>
}

/** The loaded configuration as a service of the composition root. */
export class AppConfigService extends Context.Service<AppConfigService, AppConfig>()('knowagent/config/AppConfig') {
  static readonly layer = (config: AppConfig): Layer.Layer<AppConfigService> => Layer.succeed(AppConfigService, config)
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError'
}

export function decodeConfigFile({ json, source }: { json: unknown; source: string }): ConfigFile {
  try {
    return Schema.decodeUnknownSync(ConfigFileSchema)(json, { errors: 'all', onExcessProperty: 'error' })
  } catch (error) {
    throw new ConfigError(`invalid configuration in ${source}:\n${(error as Error).message}`)
  }
}

function parsePort(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 3000
  const port = Number(raw)
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`invalid PORT "${raw}": expected an integer between 0 and 65535`)
  }
  return port
}

function parseLogLevel(raw: string | undefined, fromFile: AppConfig['logLevel'] | undefined): AppConfig['logLevel'] {
  const level = (raw || fromFile || 'info').toLowerCase()
  if (level === 'debug' || level === 'info' || level === 'warn' || level === 'error') return level
  throw new ConfigError(`invalid LOG_LEVEL "${raw}": expected debug, info, warn or error`)
}

export function loadConfig({
  env = process.env,
  cwd = process.cwd(),
}: { env?: Readonly<Record<string, string | undefined>>; cwd?: string } = {}): AppConfig {
  const explicitPath = env.KNOWAGENT_CONFIG
  const defaultPath = resolve(cwd, 'knowagent.config.json')
  const configPath = explicitPath ? resolve(cwd, explicitPath) : existsSync(defaultPath) ? defaultPath : undefined
  let file: ConfigFile = {}
  if (configPath) {
    if (!existsSync(configPath)) throw new ConfigError(`KNOWAGENT_CONFIG points at ${configPath}, which does not exist`)
    let json: unknown
    try {
      json = JSON.parse(readFileSync(configPath, 'utf8'))
    } catch (error) {
      throw new ConfigError(`invalid JSON in ${configPath}: ${(error as Error).message}`)
    }
    file = decodeConfigFile({ json, source: configPath })
  }
  const secret = env.KNOWAGENT_SECRET
  if (secret !== undefined && secret.length < 16) {
    throw new ConfigError('KNOWAGENT_SECRET is too short: use at least 16 characters (32 random bytes recommended)')
  }
  const maxFileBytes = file.limits?.maxFileBytes ?? 50 * 1024 * 1024
  return {
    file,
    configPath,
    port: parsePort(env.PORT),
    host: env.HOST || '127.0.0.1',
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: resolve(cwd, env.KNOWAGENT_DATA_DIR || '.knowagent'),
    secretFromEnv: secret || undefined,
    demoPassword: env.KNOWAGENT_DEMO_PASSWORD || undefined,
    logLevel: parseLogLevel(env.LOG_LEVEL, file.log?.level),
    trustProxy: file.server?.trustProxy ?? false,
    metrics: { enabled: file.metrics?.enabled ?? false, token: file.metrics?.token },
    secureCookies: file.server?.secureCookies ?? false,
    sessionTtlHours: file.server?.sessionTtlHours ?? 24 * 14,
    streamsPerMinute: file.limits?.streamsPerMinute ?? 30,
    compileRequestsPerMinute: file.limits?.compileRequestsPerMinute ?? 20,
    maxMessageChars: file.limits?.maxMessageChars ?? 32_000,
    turnSeconds: file.limits?.turnSeconds ?? DEFAULT_TURN_SECONDS,
    turns: {
      detachedGraceSeconds: file.turns?.detachedGraceSeconds ?? 60,
      eventRetentionSeconds: file.turns?.eventRetentionSeconds ?? 600,
      eventRetentionMb: file.turns?.eventRetentionMb ?? 256,
      leaseSeconds: file.turns?.leaseSeconds ?? 15,
    },
    drainSeconds: file.shutdown?.drainSeconds ?? 30,
    retrievalBailian: resolveBailianConfig(file.retrieval?.bailian),
    maxFileBytes,
    maxFilesPerUpload: file.limits?.maxFilesPerUpload ?? 32,
    maxZipImportBytes: file.limits?.maxZipImportBytes ?? 1024 * 1024 * 1024,
    userStorageMb: file.limits?.userStorageMb ?? 10_240,
    uploadMbPerMinute: file.limits?.uploadMbPerMinute ?? 1_024,
    trashRetentionDays: file.trash?.retentionDays ?? DEFAULT_TRASH_RETENTION_DAYS,
    parsing: {
      processes: file.limits?.parserProcesses ?? file.limits?.parserThreads ?? defaultParserProcesses(),
      timeoutMs: (file.limits?.parseTimeoutSeconds ?? DEFAULT_PARSE_TIMEOUT_MS / 1000) * 1000,
      memoryLimitMb: file.limits?.parseMemoryMb ?? DEFAULT_PARSE_MEMORY_MB,
      limits: {
        maxBytes: maxFileBytes,
        maxChars: file.limits?.maxParsedChars ?? DEFAULT_PARSE_LIMITS.maxChars,
        maxInflatedBytes: file.limits?.maxInflatedBytes ?? DEFAULT_PARSE_LIMITS.maxInflatedBytes,
      },
    },
    uploadTempDir: resolve(cwd, env.KNOWAGENT_UPLOAD_TMPDIR || tmpdir()),
    signInFailuresPerLogin: file.limits?.signInFailuresPerLogin ?? 5,
    signInFailuresPerAddress: file.limits?.signInFailuresPerAddress ?? 50,
    signInMaxLockoutSeconds: file.limits?.signInMaxLockoutSeconds ?? 900,
    concurrentPasswordChecks: file.limits?.concurrentPasswordChecks ?? 2,
    backup: {
      schedule: file.backup?.schedule?.trim() || undefined,
      dir: resolve(cwd, file.backup?.dir ?? resolve(cwd, env.KNOWAGENT_DATA_DIR || '.knowagent', 'backups')),
      keep: file.backup?.keep ?? 7,
    },
    env,
  }
}
