// What each `knowagent` command does once its arguments are parsed (src/cli/command-line.ts parses
// them). Each action prints through `Io` and resolves to the exit code; a failure rejects, and
// src/cli.ts reports it and exits 1.
import { loadConfig } from '../effects/config/app-config.ts'
import * as Effect from 'effect/Effect'
import * as ManagedRuntime from 'effect/ManagedRuntime'
import { databaseLayer, unwrapLayerError } from '../effects/app-layer.ts'
import { AppSecret } from '../effects/config/secret.ts'
import { Database, migrateOnOwnConnection, type DatabaseHandle } from '../effects/db/database.ts'
import { silentLogger } from '../effects/logging/logger.ts'
import { generatePassword } from '../effects/auth/passwords.ts'
import { accountContents, addAccount, deleteAccount, describeAccountContents, disableAccount, enableAccount, listAccounts, exportFirst, refuseIfLastEnabledAdmin, setRole, type AccountSummary } from '../effects/auth/accounts.ts'
import type { UserRole } from '../effects/db/schema.ts'
import { createApiTokenFor, findUserByLogin, listApiTokens, revokeApiTokens, setPassword, UserError, type ApiTokenInfo } from '../effects/auth/users.ts'
import { formatImportReport, importFolder, printableName } from '../effects/workspace/import-folder.ts'
import type { TrashEntry } from '../effects/workspace/trash.ts'
import { parseKbUri } from '../effects/workspace/uri.ts'

export interface Io {
  readonly out: (line: string) => void
  readonly err: (line: string) => void
  readonly env: Readonly<Record<string, string | undefined>>
  /**
   * Asks a person at a terminal and resolves to the line they typed; undefined when stdin is not a
   * terminal (a script, a pipe) or was closed. Without it, there is nobody to ask.
   */
  readonly ask?: ((question: string) => Promise<string | undefined>) | undefined
}

/** A question on the terminal (the prompt on stderr, so that stdout stays the command's output). */
async function askOnTerminal(question: string): Promise<string | undefined> {
  if (!process.stdin.isTTY) return undefined
  const { createInterface } = await import('node:readline/promises')
  const terminal = createInterface({ input: process.stdin, output: process.stderr })
  try {
    return await new Promise<string | undefined>((resolve) => {
      terminal.once('close', () => resolve(undefined)) // Ctrl-D
      terminal.question(question).then(resolve, () => resolve(undefined))
    })
  } finally {
    terminal.close()
  }
}

export const defaultIo: Io = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
  env: process.env,
  ask: askOnTerminal,
}

/** Runs a command with the database (the embedded one is started, or found running beside a server). */
export async function withDatabase<T>(io: Io, run: (db: DatabaseHandle, secret: string) => Promise<T>, { migrate = true } = {}): Promise<T> {
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

export async function serve(io: Io): Promise<number> {
  const { startServer } = await import('../server.ts')
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

export async function worker(io: Io): Promise<number> {
  const { startWorkerProcess } = await import('../worker.ts')
  const { createLogger } = await import('../effects/logging/logger.ts')
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

export async function migrate(io: Io): Promise<number> {
  const applied = await withDatabase(io, async (handle) => (await migrateOnOwnConnection(handle)).applied, { migrate: false })
  io.out(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date')
  return 0
}

export async function addUser(io: Io, { login, password, role }: { login: string; password: string | undefined; role: UserRole }): Promise<number> {
  const added = await withDatabase(io, ({ db }) => addAccount(db, { login, password, role }))
  const as = added!.user.role === 'admin' ? ' (admin)' : ''
  io.out(password ? `created user ${login}${as}` : `created user ${login}${as} with password: ${added!.password}`)
  return 0
}

/** One header line and one line per account: login, role, created, last sign-in, disabled, live tokens — never a secret. */
export function formatAccountList(accounts: ReadonlyArray<AccountSummary>): string[] {
  if (accounts.length === 0) return ['no users (add one with `knowagent user add <login> --admin`)']
  const width = Math.max(5, ...accounts.map((account) => account.login.length))
  const row = (cells: string[]) => cells.map((cell, i) => cell.padEnd([width, 6, 16, 16, 8][i] ?? 0)).join('  ').trimEnd()
  return [
    row(['login', 'role', 'created (UTC)', 'last sign-in', 'disabled', 'tokens']),
    ...accounts.map((a) => row([a.login, a.role, isoMinute(a.createdAt), isoMinute(a.lastSignInAt), a.disabled ? 'yes' : 'no', String(a.tokens)])),
  ]
}

export async function listUsers(io: Io): Promise<number> {
  const accounts = await withDatabase(io, ({ db }) => listAccounts(db))
  for (const line of formatAccountList(accounts)) io.out(line)
  return 0
}

export async function setUserRole(io: Io, { login, role }: { login: string; role: UserRole }): Promise<number> {
  await withDatabase(io, ({ db }) => setRole(db, { login, role }))
  io.out(`${login} is now ${role === 'admin' ? 'an admin' : 'a member'}.`)
  return 0
}

export async function disableUser(io: Io, { login }: { login: string }): Promise<number> {
  const ended = await withDatabase(io, ({ db }) => disableAccount(db, { login }))
  io.out(`${login} is disabled: ${ended.sessions} browser session(s) ended, ${ended.tokens} API token(s) revoked; signing in is refused until \`knowagent user enable ${login}\`.`)
  return 0
}

export async function enableUser(io: Io, { login }: { login: string }): Promise<number> {
  await withDatabase(io, ({ db }) => enableAccount(db, { login }))
  io.out(`${login} is enabled: they can sign in again (no session or token comes back).`)
  return 0
}

/**
 * Says what deleting the account removes, then deletes it once the person at the terminal typed
 * the login — or at once with `yes` (scripts). Without a terminal and without `yes`, refuses.
 */
export async function deleteUser(io: Io, { login, yes }: { login: string; yes: boolean }): Promise<number> {
  return withDatabase(io, async ({ db }) => {
    await refuseIfLastEnabledAdmin(db, { login })
    const contents = await accountContents(db, { login })
    io.out(`Deleting ${login} removes, for good:`)
    for (const line of describeAccountContents(contents)) io.out(`  ${line}`)
    io.out(exportFirst(login))
    if (!yes) {
      const typed = io.ask ? await io.ask(`Type the login (${login}) to delete it: `) : undefined
      if (typed === undefined) throw new UserError('nothing was deleted: there is no terminal to confirm on; pass --yes to delete from a script')
      if (typed.trim() !== login) throw new UserError(`nothing was deleted: "${login}" was not typed`)
    }
    await deleteAccount(db, { login })
    io.out(`deleted ${login}.`)
    return 0
  })
}

export async function setUserPassword(
  io: Io,
  { login, password, revokeTokens }: { login: string; password: string | undefined; revokeTokens: boolean },
): Promise<number> {
  const chosen = password ?? generatePassword()
  const change = await withDatabase(io, ({ db }) => setPassword(db, { login, password: chosen, revokeTokens }))
  io.out(password ? `password set for ${login}` : `new password for ${login}: ${chosen}`)
  io.out(`${change.sessionsEnded} browser session(s) ended.`)
  io.out(
    revokeTokens
      ? `${change.tokensRevoked} API token(s) revoked; none of ${login}'s tokens work any more.`
      : `${change.tokensValid} API token(s) stay valid (--keep-tokens; revoke them with \`knowagent token revoke ${login} --all\`).`,
  )
  return 0
}

export async function unlockUser(io: Io, { login }: { login: string }): Promise<number> {
  const { createUnlockToken, UNLOCK_PARAMETER, UNLOCK_TTL_MINUTES } = await import('../effects/auth/sign-in-unlock.ts')
  const token = await withDatabase(io, ({ db }, secret) => createUnlockToken(db, { secret, login }))
  io.out(`/login?${UNLOCK_PARAMETER}=${token}`)
  io.out(
    `Open that path on this server's address within ${UNLOCK_TTL_MINUTES} minutes: it checks ${login}'s password once even while the sign-in is locked out. ` +
      'It is used up by that one attempt; run this again for another.',
  )
  return 0
}

export async function createToken(io: Io, { login, label }: { login: string; label: string | undefined }): Promise<number> {
  const token = await withDatabase(io, ({ db }, secret) => createApiTokenFor(db, { secret, login, ...(label ? { label } : {}) }))
  io.out(token)
  return 0
}

export async function listTokens(io: Io, { login }: { login: string }): Promise<number> {
  const tokens = await withDatabase(io, async ({ db }) => listApiTokens(db, { userId: (await userNamed(db, login)).id }))
  for (const line of formatTokenList(tokens)) io.out(line)
  return 0
}

export async function revokeTokens(io: Io, { login, tokenId }: { login: string; tokenId: string | 'all' }): Promise<number> {
  const revoked = await withDatabase(io, async ({ db }) => revokeApiTokens(db, { userId: (await userNamed(db, login)).id, tokenId }))
  io.out(tokenId === 'all' ? `${revoked} API token(s) of ${login} revoked.` : revoked ? `token ${tokenId} revoked.` : `token ${tokenId} was already revoked.`)
  return 0
}

export async function importIntoWorkspace(io: Io, { folder, uri, login }: { folder: string; uri: string; login: string }): Promise<number> {
  const { importSourceProblem } = await import('../effects/workspace/import-folder.ts')
  const problem = await importSourceProblem(folder)
  if (problem !== undefined) throw new UserError(problem)
  const config = loadConfig({ env: io.env })
  const report = await withDatabase(io, async ({ db }) => {
    const user = await findUserByLogin(db, login)
    if (!user) throw new UserError(`no user "${login}"`)
    const target = parseKbUri({ uri, callerLogin: user.login })
    const { makeDocumentParser } = await import('../effects/workspace/parse/document-parser.ts') // only this command parses
    const parser = makeDocumentParser(config.parsing)
    try {
      return await importFolder(db, { owner: user, folder, targetSegments: target.segments, maxFileBytes: config.maxFileBytes, parser })
    } finally {
      await parser.close()
    }
  })
  io.out(formatImportReport(report))
  return report.failed.length > 0 ? 1 : 0
}

/**
 * `export <kb-uri> <file.zip> --user <login>`: the folder as a zip of its files' original bytes
 * (the use case the HTTP export streams), written atomically. Ctrl-C stops it and leaves no file.
 */
export async function exportFromWorkspace(io: Io, { uri, file, login }: { uri: string; file: string; login: string }): Promise<number> {
  const { atomicTargetProblem, writeFileAtomically } = await import('../effects/atomic-file.ts')
  const { exportableFolder, writeFolderZip } = await import('../effects/workspace/export-zip.ts')
  const { resolveNode } = await import('../effects/workspace/resolve.ts')
  const problem = await atomicTargetProblem(file) // before the database starts
  if (problem !== undefined) throw new UserError(problem)
  const interrupted = new AbortController()
  const onSignal = (signal: NodeJS.Signals) => interrupted.abort(new UserError(`stopped by ${signal}; no file was written`))
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  try {
    const { folderUri, written } = await withDatabase(io, async ({ db }) => {
      const user = await userNamed(db, login)
      const folder = exportableFolder((await resolveNode(db, { caller: user, uri })).node)
      const written = await writeFileAtomically(file, (output) => writeFolderZip(db, { owner: user, folder, output, signal: interrupted.signal }))
      return { folderUri: folder.uri, written }
    })
    const { files, directories, bytes } = written.result
    io.out(`exported ${files} file(s), ${bytes} byte(s), in ${directories} folder(s) from ${folderUri} to ${written.path} (${written.bytes} bytes zipped)`)
    return 0
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}

/** `retrieval show`: the server-wide Bailian connection settings in force, and where each comes from. */
export async function showRetrievalSettings(io: Io): Promise<number> {
  const { describeServerSettings, readServerSettingsDocument, decodeServerSettings } = await import('../effects/retrieval/retrieval-server-settings.ts')
  const bailian = loadConfig({ env: io.env }).retrievalBailian
  const stored = decodeServerSettings(await withDatabase(io, ({ db }) => readServerSettingsDocument(db)))
  if (!stored.ok) io.err(`knowagent: the stored settings are invalid (${stored.message}); each server keeps its last good values until they are set again`)
  for (const line of describeServerSettings(bailian, stored.ok ? stored.value : {})) io.out(line)
  return 0
}

/** `retrieval set <key> <value>` / `retrieval unset <key>`: one setting for every server on this database, at once. */
export async function changeRetrievalSetting(io: Io, change: { readonly key: string } & ({ readonly action: 'set'; readonly value: string } | { readonly action: 'unset' })): Promise<number> {
  const { changeServerSetting, describeServerSettings } = await import('../effects/retrieval/retrieval-server-settings.ts')
  const bailian = loadConfig({ env: io.env }).retrievalBailian
  const written = await withDatabase(io, ({ db }) => changeServerSetting(db, change))
  if (!written.ok) throw new UserError(`${written.message}; nothing was changed`)
  for (const line of describeServerSettings(bailian, written.value)) io.out(line)
  io.out('every knowagent process on this database uses these values from its next call')
  return 0
}

/** One header line and one line per trash item: id, when deleted, when deleted for good, what (a folder's files), where from. */
export function formatTrashList(items: ReadonlyArray<TrashEntry>, { total }: { total: number }): string[] {
  if (items.length === 0) return ['the Trash is empty']
  const row = (cells: string[]) => cells.map((cell, i) => (i < 3 ? cell.padEnd([36, 16, 12][i]!) : cell)).join('  ').trimEnd()
  const what = (item: TrashEntry) =>
    item.kind === 'directory' ? `${printableName(item.name)}/ (${item.files} ${item.files === 1 ? 'file' : 'files'})` : printableName(item.name)
  return [
    row(['id', 'deleted (UTC)', 'purged on', 'what', 'from']),
    ...items.map((item) => row([item.id, isoMinute(item.deletedAt), item.purgeAt.toISOString().slice(0, 10), what(item), printableName(item.folderUri)])),
    ...(items.length < total ? [`(the ${items.length} most recently deleted of ${total})`] : []),
  ]
}

/** `trash list --user <login>`: what is in the user's Trash, most recently deleted first. */
export async function listTrashItems(io: Io, { login }: { login: string }): Promise<number> {
  const { listTrash, TRASH_MAX_LIMIT } = await import('../effects/workspace/trash.ts')
  const page = await withDatabase(io, async ({ db }) => listTrash(db, { owner: await userNamed(db, login), limit: TRASH_MAX_LIMIT }))
  for (const line of formatTrashList(page.items, page)) io.out(line)
  return 0
}

/**
 * `trash restore <id|kb-uri> --user <login>`: the item (its id from `trash list`, or the URI it was
 * deleted from: the latest item from there) put back where it was — under "name (restored)" when
 * that name is taken.
 */
export async function restoreTrashItem(io: Io, { item, login }: { item: string; login: string }): Promise<number> {
  const { findTrashItemAt, restoreFromTrash } = await import('../effects/workspace/trash.ts')
  const restored = await withDatabase(io, async ({ db }) => {
    const owner = await userNamed(db, login)
    let id = item
    if (item.startsWith('kb://')) {
      const found = await findTrashItemAt(db, { owner, segments: parseKbUri({ uri: item, callerLogin: owner.login }).segments })
      if (!found) throw new UserError(`nothing in ${login}'s Trash was deleted from ${item} (see \`knowagent trash list --user ${login}\`)`)
      id = found.id
    }
    return restoreFromTrash(db, { owner, id })
  })
  io.out(restored.renamed ? `restored as ${printableName(restored.uri)}: ${printableName(restored.from)} is taken by something else now` : `restored ${printableName(restored.uri)}`)
  return 0
}

/** `trash empty --user <login> [--yes]`: deletes everything in the user's Trash for good, once the login is typed (or at once with --yes). */
export async function emptyTrashOf(io: Io, { login, yes }: { login: string; yes: boolean }): Promise<number> {
  const { emptyTrash, listTrash } = await import('../effects/workspace/trash.ts')
  return withDatabase(io, async ({ db }) => {
    const owner = await userNamed(db, login)
    const { total, bytes } = await listTrash(db, { owner, limit: 1 })
    if (total === 0) {
      io.out(`${login}'s Trash is empty`)
      return 0
    }
    if (!yes) {
      io.out(`Emptying ${login}'s Trash deletes ${total} item(s), ${bytes} byte(s) with every version, for good.`)
      const typed = io.ask ? await io.ask(`Type the login (${login}) to empty it: `) : undefined
      if (typed === undefined) throw new UserError('nothing was deleted: there is no terminal to confirm on; pass --yes to empty it from a script')
      if (typed.trim() !== login) throw new UserError(`nothing was deleted: "${login}" was not typed`)
    }
    const emptied = await emptyTrash(db, { owner })
    io.out(`deleted ${emptied.items} item(s), ${emptied.bytes} byte(s), for good`)
    return 0
  })
}
