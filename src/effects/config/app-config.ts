// Configuration: a JSON file (validated with Schema, errors name the bad key) plus environment.
import { Context, Layer, Schema } from 'effect'
import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { ModelsConfigSchema } from '../llm/model-config.ts'

const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))

export const ConfigFileSchema = Schema.Struct({
  /** OpenAI-compatible model entries (docs/models.md); `local` is always added. */
  models: Schema.optional(ModelsConfigSchema),
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
      /** Largest chat message accepted, in characters. */
      maxMessageChars: Schema.optional(PositiveInt),
      /** Largest uploaded or imported file, in bytes. */
      maxFileBytes: Schema.optional(PositiveInt),
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
  readonly secureCookies: boolean
  readonly sessionTtlHours: number
  readonly streamsPerMinute: number
  readonly maxMessageChars: number
  readonly maxFileBytes: number
  readonly signInFailuresPerLogin: number
  readonly signInFailuresPerAddress: number
  readonly signInMaxLockoutSeconds: number
  readonly concurrentPasswordChecks: number
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

function parseLogLevel(raw: string | undefined): AppConfig['logLevel'] {
  const level = (raw ?? 'info').toLowerCase()
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
  return {
    file,
    configPath,
    port: parsePort(env.PORT),
    host: env.HOST || '127.0.0.1',
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: resolve(cwd, env.KNOWAGENT_DATA_DIR || '.knowagent'),
    secretFromEnv: secret || undefined,
    demoPassword: env.KNOWAGENT_DEMO_PASSWORD || undefined,
    logLevel: parseLogLevel(env.LOG_LEVEL),
    trustProxy: file.server?.trustProxy ?? false,
    secureCookies: file.server?.secureCookies ?? false,
    sessionTtlHours: file.server?.sessionTtlHours ?? 24 * 14,
    streamsPerMinute: file.limits?.streamsPerMinute ?? 30,
    maxMessageChars: file.limits?.maxMessageChars ?? 32_000,
    maxFileBytes: file.limits?.maxFileBytes ?? 50 * 1024 * 1024,
    signInFailuresPerLogin: file.limits?.signInFailuresPerLogin ?? 5,
    signInFailuresPerAddress: file.limits?.signInFailuresPerAddress ?? 50,
    signInMaxLockoutSeconds: file.limits?.signInMaxLockoutSeconds ?? 900,
    concurrentPasswordChecks: file.limits?.concurrentPasswordChecks ?? 2,
    env,
  }
}
