// The operator CLI (bin: knowagent). Bad arguments print usage and exit 2; failures exit 1.
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from './effects/config/app-config.ts'
import * as Effect from 'effect/Effect'
import * as ManagedRuntime from 'effect/ManagedRuntime'
import { databaseLayer, unwrapLayerError } from './effects/app-layer.ts'
import { AppSecret } from './effects/config/secret.ts'
import { Database, migrateOnOwnConnection, type DatabaseHandle } from './effects/db/database.ts'
import { silentLogger } from './effects/logging/logger.ts'
import { generatePassword } from './effects/auth/passwords.ts'
import { createApiTokenFor, createUser, findUserByLogin, listApiTokens, revokeApiTokens, setPassword, UserError, type ApiTokenInfo } from './effects/auth/users.ts'
import { formatImportReport, importFolder } from './effects/workspace/import-folder.ts'
import { parseKbUri } from './effects/workspace/uri.ts'

export const USAGE = `usage: knowagent <command> [options]

commands:
  serve                                  start the server (PORT, HOST, DATABASE_URL, KNOWAGENT_DATA_DIR)
  worker                                 run compile jobs only (serve runs workers too; DATABASE_URL or the data dir)
  migrate                                apply database migrations
  user add <login> [--password P]        create a user (a password is generated and printed when omitted)
  user passwd <login> [--password P] [--revoke-tokens]
                                         set a user's password; ends their sessions (API tokens
                                         stay valid unless --revoke-tokens)
  token create <login> [--label L]       create an API token; prints only the token
  token list <login>                     list a user's API tokens (id, label, created, last used,
                                         revoked; never the token)
  token revoke <login> <token-id|--all>  revoke one API token, or all of the user's tokens
  retrieval show                         the Bailian connection settings in force (endpointHost,
                                         agentVersion, chatTimeoutMs) and where each comes from
  retrieval set <key> <value>            change one for every server on this database, at once
  retrieval unset <key>                  back to the config file's value, at once
  import <folder> <kb-uri> --user <login>
                                         import a folder (recursive, idempotent)
  help                                   show this help`

export class UsageError extends Error {
  override readonly name = 'UsageError'
}

interface Io {
  readonly out: (line: string) => void
  readonly err: (line: string) => void
  readonly env: Readonly<Record<string, string | undefined>>
}

const defaultIo: Io = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
  env: process.env,
}

function parse<const O extends Record<string, { type: 'string' } | { type: 'boolean' }>>(args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true })
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
}

function expectPositionals(positionals: string[], count: number, what: string): string[] {
  if (positionals.length !== count) throw new UsageError(`expected ${what}`)
  return positionals
}

/** Runs a command with the database (the embedded one is started, or found running beside a server). */
async function withDatabase<T>(io: Io, run: (db: DatabaseHandle, secret: string) => Promise<T>, { migrate = true } = {}): Promise<T> {
  const config = loadConfig({ env: io.env })
  const runtime = ManagedRuntime.make(databaseLayer({ config, logger: silentLogger, migrate }))
  try {
    const { database, secret } = await runtime.runPromise(Effect.all({ database: Database, secret: AppSecret })).catch((error: unknown) => {
      throw unwrapLayerError(error)
    })
    return await run(database, secret)
  } finally {
    await runtime.dispose()
  }
}

async function userNamed(db: DatabaseHandle['db'], login: string) {
  const user = await findUserByLogin(db, login)
  if (!user) throw new UserError(`no user "${login}"`)
  return user
}

const isoMinute = (at: Date | null) => (at ? at.toISOString().slice(0, 16).replace('T', ' ') : '-')

/** One header line and one line per token: id, created, last used, revoked, label — never the token. */
export function formatTokenList(tokens: ReadonlyArray<ApiTokenInfo>): string[] {
  if (tokens.length === 0) return ['no API tokens']
  const row = (cells: string[]) => cells.map((cell, i) => (i < 4 ? cell.padEnd(i === 0 ? 36 : 16) : cell)).join('  ').trimEnd()
  return [
    row(['id', 'created (UTC)', 'last used', 'revoked', 'label']),
    ...tokens.map((t) => row([t.id, isoMinute(t.createdAt), isoMinute(t.lastUsedAt), isoMinute(t.revokedAt), JSON.stringify(t.label ?? '')])),
  ]
}

/**
 * Runs a long-lived command (serve, worker) until SIGINT or SIGTERM, then `stop`s it. The signals
 * are taken before `start` runs, not once it has announced itself: a signal that arrives while it
 * starts (or right after its "running" line, before a listener would otherwise be in place) stops
 * it as soon as it is up — never by the default action, which would leave the embedded PostgreSQL
 * behind. `onSignal` hears every signal with its count (`running` is undefined during start-up);
 * the first one stops. Rejects when `start` or `stop` fails (main reports it and exits 1).
 */
async function untilStopped<Running>({
  start,
  stop,
  onSignal,
}: {
  start: () => Promise<Running>
  stop: (running: Running, signal: NodeJS.Signals) => Promise<void>
  onSignal?: (count: number, signal: NodeJS.Signals, running: Running | undefined) => void
}): Promise<void> {
  let running: Running | undefined
  let count = 0
  let signalled!: (signal: NodeJS.Signals) => void
  const firstSignal = new Promise<NodeJS.Signals>((resolve) => (signalled = resolve))
  const listener = (signal: NodeJS.Signals) => {
    count += 1
    onSignal?.(count, signal, running)
    signalled(signal) // only the first one counts
  }
  process.on('SIGINT', listener)
  process.on('SIGTERM', listener)
  try {
    running = await start()
    await stop(running, await firstSignal)
  } finally {
    process.off('SIGINT', listener)
    process.off('SIGTERM', listener)
  }
}

export async function main(argv: string[], io: Io = defaultIo): Promise<number> {
  const [command, ...rest] = argv
  try {
    switch (command) {
      case 'serve': {
        parse(rest, {})
        const { startServer } = await import('./server.ts')
        // Ctrl-C once stops gracefully; twice cuts what the shutdown still waits for (the embedded
        // PostgreSQL is still stopped, so none is left behind); three times exits at once.
        await untilStopped({
          start: () => startServer({ config: loadConfig({ env: io.env }) }),
          stop: (running, signal) => running.shutdown(signal),
          onSignal: (count, signal, running) => {
            if (count === 1) io.err(`stopping (${signal}); send it again to cut open connections at once`)
            else if (count === 2) {
              io.err('cutting open connections; the database is still stopped cleanly (a third signal exits at once)')
              running?.hurry()
            } else {
              io.err('exiting at once: the embedded PostgreSQL, if any, keeps running and the next start takes it over')
              process.exit(130)
            }
          },
        })
        return 0
      }
      case 'worker': {
        parse(rest, {})
        const { startWorkerProcess } = await import('./worker.ts')
        const { createLogger } = await import('./effects/logging/logger.ts')
        const config = loadConfig({ env: io.env })
        await untilStopped({
          start: async () => {
            const running = await startWorkerProcess({ config, logger: createLogger({ level: config.logLevel }) })
            io.out(`knowagent worker ${running.worker.id} is taking compile jobs (stop with Ctrl-C)`)
            return running
          },
          stop: (running) => running.stop(),
          onSignal: (count) => {
            if (count === 1) return
            io.err('exiting at once: the running compile attempts are retried once their heartbeat expires')
            process.exit(130)
          },
        })
        return 0
      }
      case 'migrate': {
        parse(rest, {})
        const applied = await withDatabase(io, async (handle) => (await migrateOnOwnConnection(handle)).applied, { migrate: false })
        io.out(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date')
        return 0
      }
      case 'user': {
        const { positionals, values } = parse(rest, { password: { type: 'string' }, 'revoke-tokens': { type: 'boolean' } })
        const [action, login] = expectPositionals(positionals, 2, '"user add <login>" or "user passwd <login>"')
        const password = values.password ?? generatePassword()
        if (action === 'add') {
          if (values['revoke-tokens']) throw new UsageError('--revoke-tokens goes with "user passwd"')
          await withDatabase(io, ({ db }) => createUser(db, { login: login!, password }))
          io.out(values.password ? `created user ${login}` : `created user ${login} with password: ${password}`)
          return 0
        }
        if (action === 'passwd') {
          const change = await withDatabase(io, ({ db }) => setPassword(db, { login: login!, password, revokeTokens: values['revoke-tokens'] === true }))
          io.out(values.password ? `password set for ${login}` : `new password for ${login}: ${password}`)
          io.out(`${change.sessionsEnded} browser session(s) ended.`)
          io.out(
            values['revoke-tokens']
              ? `${change.tokensRevoked} API token(s) revoked; none of ${login}'s tokens work any more.`
              : `${change.tokensValid} API token(s) stay valid (revoke them with --revoke-tokens or \`knowagent token revoke ${login} --all\`).`,
          )
          return 0
        }
        throw new UsageError(`unknown user action "${action}"`)
      }
      case 'token': {
        const { positionals, values } = parse(rest, { label: { type: 'string' }, all: { type: 'boolean' } })
        const [action, login, tokenId] = positionals
        if (action === 'create') {
          expectPositionals(positionals, 2, '"token create <login>"')
          if (values.all) throw new UsageError('--all goes with "token revoke"')
          const token = await withDatabase(io, ({ db }, secret) => createApiTokenFor(db, { secret, login: login!, ...(values.label ? { label: values.label } : {}) }))
          io.out(token)
          return 0
        }
        if (action === 'list') {
          expectPositionals(positionals, 2, '"token list <login>"')
          const tokens = await withDatabase(io, async ({ db }) => listApiTokens(db, { userId: (await userNamed(db, login!)).id }))
          for (const line of formatTokenList(tokens)) io.out(line)
          return 0
        }
        if (action === 'revoke') {
          if (positionals.length !== (values.all ? 2 : 3)) throw new UsageError('expected "token revoke <login> <token-id>" or "token revoke <login> --all"')
          const revoked = await withDatabase(io, async ({ db }) =>
            revokeApiTokens(db, { userId: (await userNamed(db, login!)).id, tokenId: values.all ? 'all' : tokenId! }),
          )
          io.out(values.all ? `${revoked} API token(s) of ${login} revoked.` : revoked ? `token ${tokenId} revoked.` : `token ${tokenId} was already revoked.`)
          return 0
        }
        throw new UsageError(action ? `unknown token action "${action}"` : 'expected "token create|list|revoke <login>"')
      }
      case 'retrieval': {
        const { positionals } = parse(rest, {})
        const [action, key, value] = positionals
        const { describeServerSettings, parseServerSetting, readServerSettingsDocument, SERVER_SETTING_KEYS, writeServerSettings, decodeServerSettings } = await import(
          './effects/retrieval/retrieval-server-settings.ts'
        )
        const config = loadConfig({ env: io.env })
        const bailian = config.retrievalBailian
        if (action === 'show') {
          expectPositionals(positionals, 1, '"retrieval show"')
          const stored = decodeServerSettings(await withDatabase(io, ({ db }) => readServerSettingsDocument(db)))
          if (!stored.ok) io.err(`knowagent: the stored settings are invalid (${stored.message}); each server keeps its last good values until they are set again`)
          for (const line of describeServerSettings(bailian, stored.ok ? stored.value : {})) io.out(line)
          return 0
        }
        if (action !== 'set' && action !== 'unset') throw new UsageError(action ? `unknown retrieval action "${action}"` : 'expected "retrieval show|set|unset"')
        expectPositionals(positionals, action === 'set' ? 3 : 2, action === 'set' ? '"retrieval set <key> <value>"' : '"retrieval unset <key>"')
        const known = SERVER_SETTING_KEYS.find((name) => name === key)
        if (action === 'unset' && known === undefined) throw new UserError(`unknown setting "${key!.slice(0, 40)}"; the settings are ${SERVER_SETTING_KEYS.join(', ')}`)
        const parsed = action === 'set' ? parseServerSetting(key!, value!) : undefined
        if (parsed !== undefined && !parsed.ok) throw new UserError(`${parsed.message}; nothing was changed`)
        const written = await withDatabase(io, ({ db }) => writeServerSettings(db, parsed?.ok ? { patch: parsed.value } : { unset: known ? [known] : [] }))
        if (!written.ok) throw new UserError(`${written.message}; nothing was changed`)
        for (const line of describeServerSettings(bailian, written.value)) io.out(line)
        io.out('every knowagent process on this database uses these values from its next call')
        return 0
      }
      case 'import': {
        const { positionals, values } = parse(rest, { user: { type: 'string' } })
        const [folder, uri] = expectPositionals(positionals, 2, '<folder> <kb-uri>')
        if (!values.user) throw new UsageError('import needs --user <login>')
        const login = values.user
        const { importSourceProblem } = await import('./effects/workspace/import-folder.ts')
        const problem = await importSourceProblem(folder!)
        if (problem !== undefined) throw new UserError(problem)
        const config = loadConfig({ env: io.env })
        const report = await withDatabase(io, async ({ db }) => {
          const user = await findUserByLogin(db, login)
          if (!user) throw new UserError(`no user "${login}"`)
          const target = parseKbUri({ uri: uri!, callerLogin: user.login })
          const { makeDocumentParser } = await import('./effects/workspace/parse/document-parser.ts') // only this command parses
          const parser = makeDocumentParser(config.parsing)
          try {
            return await importFolder(db, { owner: user, folder: folder!, targetSegments: target.segments, maxFileBytes: config.maxFileBytes, parser })
          } finally {
            await parser.close()
          }
        })
        io.out(formatImportReport(report))
        return report.failed.length > 0 ? 1 : 0
      }
      case 'help':
      case '--help':
      case '-h':
        io.out(USAGE)
        return 0
      default:
        throw new UsageError(command ? `unknown command "${command}"` : 'no command given')
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`knowagent: ${error.message}\n\n${USAGE}`)
      return 2
    }
    if (error instanceof ConfigError || error instanceof UserError) {
      io.err(`knowagent: ${error.message}`)
      return 1
    }
    const tagged = error as { _tag?: string; message?: string }
    if (tagged && typeof tagged._tag === 'string') {
      io.err(`knowagent: ${tagged.message}`)
      return 1
    }
    io.err(`knowagent: ${error instanceof Error ? error.message : String(error)}`)
    return 1
  }
}
