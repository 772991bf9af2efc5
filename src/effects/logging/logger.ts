// Structured JSON logs, one object a line. Secrets never reach a log line: keys that look
// secret are redacted and values that look like bearer tokens are masked.
import * as Context from 'effect/Context'
import { logContext } from './log-context.ts'

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 }
// field names, not header names: a bare "key" or "session" is too common in fields that are not
// secret (messageKey, sessionsEnded); the names that are (sessionId, session_key, privateKey) are here
const SECRET_KEY =
  /^pass$|passw(or)?d|passphrase|secret|token|(api|private|access|subscription|encryption|signing|master)[-_]?key|authorization|bearer|jwt|hmac|cookie|credential|csrf|signature|session[-_]?(id|key|token)|connection[-_]?string|database[-_]?url|dsn$/i
/** Names the list would take for secret that only name one: an API token's id is what an audit line must show. */
const NOT_SECRET_KEY = new Set(['tokenId', 'token_id', 'tokenLabel', 'token_label'])
const SECRET_VALUE = /\b(ka_[A-Za-z0-9_-]{16,}|sk-[A-Za-z0-9_-]{8,}|Bearer\s+\S+)/g

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
  child(fields: Record<string, unknown>): Logger
}

export function redactValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.replace(SECRET_VALUE, '[redacted]')
  if (value instanceof Error) return { name: value.name, message: redactValue(value.message) }
  if (depth > 6 || value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map((item) => redactValue(item, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) {
    out[key] = SECRET_KEY.test(key) && !NOT_SECRET_KEY.has(key) ? '[redacted]' : redactValue(item, depth + 1)
  }
  return out
}

export function createLogger({
  level = 'info',
  write = (line: string) => process.stdout.write(line + '\n'),
  base = {},
}: { level?: LogLevel; write?: (line: string) => void; base?: Record<string, unknown> } = {}): Logger {
  const log = (at: LogLevel, message: string, fields?: Record<string, unknown>) => {
    if (ORDER[at] < ORDER[level]) return
    const record = redactValue({ time: new Date().toISOString(), level: at, msg: message, ...logContext.getStore(), ...base, ...fields })
    write(JSON.stringify(record))
  }
  return {
    debug: (m, f) => log('debug', m, f),
    info: (m, f) => log('info', m, f),
    warn: (m, f) => log('warn', m, f),
    error: (m, f) => log('error', m, f),
    child: (fields) => createLogger({ level, write, base: { ...base, ...fields } }),
  }
}

export const silentLogger: Logger = createLogger({ level: 'error', write: () => {} })

/** The logger as a service of the composition root. */
export class LoggerService extends Context.Service<LoggerService, Logger>()('knowagent/logging/Logger') {}
