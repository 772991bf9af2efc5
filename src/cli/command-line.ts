// `knowagent`'s commands, arguments and flags, parsed with effect/cli (`Command`, `Flag`,
// `Argument`): it answers `--help`/`-h` on every command and `--version`/`-v` itself, and rejects
// what a command does not take. Its output goes through src/cli/help.ts; the actions are in
// src/cli/actions.ts. Exit codes: 0 for help and the version, 2 for a bad command line (effect's
// own runner would exit 1; docs/operations.md says 2), else the action's.
import * as Cause from 'effect/Cause'
import * as Effect from 'effect/Effect'
import * as Exit from 'effect/Exit'
import * as Layer from 'effect/Layer'
import * as Option from 'effect/Option'
import * as Argument from 'effect/cli/Argument'
import * as CliConfig from 'effect/cli/CliConfig'
import * as CliError from 'effect/cli/CliError'
import * as CliOutput from 'effect/cli/CliOutput'
import * as Command from 'effect/cli/Command'
import * as Flag from 'effect/cli/Flag'
import * as GlobalFlag from 'effect/cli/GlobalFlag'
import { packageVersion } from '../project-root.ts'
import * as actions from './actions.ts'
import type { Io } from './actions.ts'
import { makePresenter } from './help.ts'

const backupActions = () => import('./backup-actions.ts')

/** A bad command line found after parsing: shown like a parse error, with the command's usage. */
const usageError = (commandPath: ReadonlyArray<string>, message: string) =>
  new CliError.ShowHelp({ commandPath, errors: [new CliError.ValidationError({ message })] })

// effect's built-in --help and --version (their actions), described in our words; no --wizard,
// --completions or --log-level.
const builtIns = [
  GlobalFlag.Action({
    flag: Flag.Boolean('help').pipe(Flag.withAlias('h'), Flag.withDescription('show this help'), Flag.withDefault(false)),
    run: GlobalFlag.Help.run,
  }),
  GlobalFlag.Action({
    flag: Flag.Boolean('version').pipe(Flag.withAlias('v'), Flag.withDescription("print knowagent's version"), Flag.withDefault(false)),
    run: GlobalFlag.Version.run,
  }),
]

const login = Argument.String('login').pipe(Argument.withDescription("the user's login"))
const newPassword = Flag.String('password').pipe(Flag.withMetavar('P'), Flag.optional)

/**
 * The command tree. `act` runs an action and keeps its exit code; `showHelp` runs the command line
 * again with `--help` (for `knowagent help <command>`).
 */
function knowagentCommand({
  io,
  act,
  showHelp,
}: {
  io: Io
  act: (action: () => Promise<number>) => Effect.Effect<void>
  showHelp: (commandPath: ReadonlyArray<string>) => Effect.Effect<void, unknown>
}) {
  const user = Command.make('user', {}, () =>
    Effect.fail(usageError(['knowagent', 'user'], 'expected "user add|list|passwd|promote|demote|disable|enable|delete|unlock"')),
  ).pipe(
    Command.withDescription('manage accounts: create, list, roles, passwords, disable, delete, unlock a locked-out sign-in'),
    Command.withSubcommands([
      Command.make(
        'add',
        {
          login,
          password: newPassword.pipe(Flag.withDescription('the password (when omitted, one is generated and printed)')),
          admin: Flag.Boolean('admin').pipe(Flag.withDescription('an administrator (the first user always is one); a member otherwise'), Flag.withDefault(false)),
        },
        ({ login, password, admin }) => act(() => actions.addUser(io, { login, password: Option.getOrUndefined(password), role: admin ? 'admin' : 'member' })),
      ).pipe(Command.withDescription('create a user (a password is generated and printed when --password is omitted)')),
      Command.make('list', {}, () => act(() => actions.listUsers(io))).pipe(
        Command.withDescription('list the users (login, role, created, last sign-in, disabled, live API tokens; never a secret)'),
      ),
      Command.make('promote', { login }, ({ login }) => act(() => actions.setUserRole(io, { login, role: 'admin' }))).pipe(
        Command.withDescription('make the user an administrator'),
      ),
      Command.make('demote', { login }, ({ login }) => act(() => actions.setUserRole(io, { login, role: 'member' }))).pipe(
        Command.withDescription('make the administrator a member (refused for the last enabled admin)'),
      ),
      Command.make('disable', { login }, ({ login }) => act(() => actions.disableUser(io, { login }))).pipe(
        Command.withDescription('stop the user signing in; ends their sessions and revokes their API tokens (refused for the last enabled admin)'),
      ),
      Command.make('enable', { login }, ({ login }) => act(() => actions.enableUser(io, { login }))).pipe(
        Command.withDescription('let a disabled user sign in again'),
      ),
      Command.make(
        'delete',
        {
          login,
          yes: Flag.Boolean('yes').pipe(Flag.withDescription('delete without asking (for scripts; without it the login must be typed at a terminal)'), Flag.withDefault(false)),
        },
        ({ login, yes }) => act(() => actions.deleteUser(io, { login, yes })),
      ).pipe(Command.withDescription('delete the user and everything they own, after saying what that is (refused for the last enabled admin)')),
      Command.make(
        'passwd',
        {
          login,
          password: newPassword.pipe(Flag.withDescription('the new password (when omitted, one is generated and printed)')),
          keepTokens: Flag.Boolean('keep-tokens').pipe(Flag.withDescription("keep the user's API tokens valid (they are revoked by default)"), Flag.withDefault(false)),
          revokeTokens: Flag.Boolean('revoke-tokens').pipe(Flag.withDescription('revoke the API tokens (the default; kept for scripts that pass it)'), Flag.withDefault(false)),
        },
        ({ login, password, keepTokens }) => act(() => actions.setUserPassword(io, { login, password: Option.getOrUndefined(password), revokeTokens: !keepTokens })),
      ).pipe(
        Command.validate(({ keepTokens, revokeTokens }) =>
          keepTokens && revokeTokens ? Effect.fail(new CliError.ValidationError({ message: '--keep-tokens and --revoke-tokens contradict each other' })) : Effect.void,
        ),
        Command.withDescription("set a user's password; ends their browser sessions and revokes their API tokens (unless --keep-tokens)"),
      ),
      Command.make('unlock', { login }, ({ login }) => act(() => actions.unlockUser(io, { login }))).pipe(
        Command.withDescription('print a one-time link that lets the user sign in with the right password while locked out (15 minutes)'),
      ),
    ]),
  )

  const token = Command.make('token', {}, () => Effect.fail(usageError(['knowagent', 'token'], 'expected "token create|list|revoke <login>"'))).pipe(
    Command.withDescription('create, list and revoke API tokens'),
    Command.withSubcommands([
      Command.make('create', { login, label: Flag.String('label').pipe(Flag.withMetavar('L'), Flag.optional, Flag.withDescription("the token's label")) }, ({ login, label }) =>
        act(() => actions.createToken(io, { login, label: Option.getOrUndefined(label) })),
      ).pipe(Command.withDescription('create an API token; prints only the token')),
      Command.make('list', { login }, ({ login }) => act(() => actions.listTokens(io, { login }))).pipe(
        Command.withDescription("list a user's API tokens (id, label, created, last used, revoked; never the token)"),
      ),
      Command.make(
        'revoke',
        {
          login,
          tokenId: Argument.String('token-id').pipe(Argument.withDescription('the token to revoke (its id from "token list")'), Argument.optional),
          all: Flag.Boolean('all').pipe(Flag.withDescription("revoke all of the user's tokens instead of one"), Flag.withDefault(false)),
        },
        ({ login, tokenId, all }) => act(() => actions.revokeTokens(io, { login, tokenId: Option.getOrElse(tokenId, () => 'all' as const) })),
      ).pipe(
        Command.validate(({ tokenId, all }) =>
          Option.isSome(tokenId) === all
            ? Effect.fail(new CliError.ValidationError({ message: 'expected "token revoke <login> <token-id>" or "token revoke <login> --all"' }))
            : Effect.void,
        ),
        Command.withDescription('revoke one API token, or all of the user\'s tokens with --all'),
      ),
    ]),
  )

  const settingKey = Argument.String('key').pipe(Argument.withDescription('workspaceId (the default one), endpointHost, agentVersion or chatTimeoutMs'))
  const retrieval = Command.make('retrieval', {}, () => Effect.fail(usageError(['knowagent', 'retrieval'], 'expected "retrieval show|set|unset"'))).pipe(
    Command.withDescription('the Bailian server-wide settings every server on this database uses (also: Administration → Retrieval defaults)'),
    Command.withSubcommands([
      Command.make('show', {}, () => act(() => actions.showRetrievalSettings(io))).pipe(
        Command.withDescription('the settings in force (workspaceId, endpointHost, agentVersion, chatTimeoutMs) and where each comes from'),
      ),
      Command.make('set', { key: settingKey, value: Argument.String('value').pipe(Argument.withDescription('the new value')) }, ({ key, value }) =>
        act(() => actions.changeRetrievalSetting(io, { action: 'set', key, value })),
      ).pipe(Command.withDescription('change one for every server on this database, at once')),
      Command.make('unset', { key: settingKey }, ({ key }) => act(() => actions.changeRetrievalSetting(io, { action: 'unset', key }))).pipe(
        Command.withDescription("back to the config file's value, at once"),
      ),
    ]),
  )

  const trashUser = Flag.String('user').pipe(Flag.withMetavar('<login>'), Flag.withDescription('whose Trash'))
  const trash = Command.make('trash', {}, () => Effect.fail(usageError(['knowagent', 'trash'], 'expected "trash list|restore|empty --user <login>"'))).pipe(
    Command.withDescription("a user's Trash (deleted files and folders, kept trash.retentionDays): list it, restore an item, empty it"),
    Command.withSubcommands([
      Command.make('list', { user: trashUser }, ({ user }) => act(() => actions.listTrashItems(io, { login: user }))).pipe(
        Command.withDescription('one line per item, most recently deleted first: id, deleted, deleted for good on, what (a folder with its file count), where from'),
      ),
      Command.make(
        'restore',
        {
          item: Argument.String('id|kb-uri').pipe(Argument.withDescription('the item\'s id from "trash list", or the kb:// URI it was deleted from (the latest item from there)')),
          user: trashUser,
        },
        ({ item, user }) => act(() => actions.restoreTrashItem(io, { item, login: user })),
      ).pipe(Command.withDescription('put an item back where it was, the folders above made again; under "name (restored)" when the name is taken there')),
      Command.make(
        'empty',
        {
          user: trashUser,
          yes: Flag.Boolean('yes').pipe(Flag.withDescription('empty it without asking (for scripts; without it the login must be typed at a terminal)'), Flag.withDefault(false)),
        },
        ({ user, yes }) => act(() => actions.emptyTrashOf(io, { login: user, yes })),
      ).pipe(Command.withDescription('delete everything in the Trash for good, with every version (frees the storage it counts for)')),
    ]),
  )

  return Command.make('knowagent', {}, () => Effect.fail(usageError(['knowagent'], 'no command given'))).pipe(
    Command.withSubcommands([
      Command.make('serve', {}, () => act(() => actions.serve(io))).pipe(Command.withDescription('start the server (PORT, HOST, DATABASE_URL, KNOWAGENT_DATA_DIR)')),
      Command.make('worker', {}, () => act(() => actions.worker(io))).pipe(
        Command.withDescription('run compile jobs only (serve runs workers too; DATABASE_URL or the data dir)'),
      ),
      Command.make('migrate', {}, () => act(() => actions.migrate(io))).pipe(Command.withDescription('apply database migrations')),
      user,
      token,
      retrieval,
      Command.make(
        'import',
        {
          folder: Argument.String('folder').pipe(Argument.withDescription('the folder to import (recursively)')),
          uri: Argument.String('kb-uri').pipe(Argument.withDescription('where to put it, e.g. kb://me/notes/')),
          user: Flag.String('user').pipe(Flag.withMetavar('<login>'), Flag.withDescription('the user whose workspace it goes into')),
        },
        ({ folder, uri, user }) => act(() => actions.importIntoWorkspace(io, { folder, uri, login: user })),
      ).pipe(Command.withDescription('import a folder (recursive, idempotent)')),
      Command.make(
        'export',
        {
          uri: Argument.String('kb-uri').pipe(Argument.withDescription('the folder to export, e.g. kb://me/notes/ (kb://me/ for the whole workspace)')),
          file: Argument.String('file.zip').pipe(Argument.withDescription('the zip to write (replaced whole at the end; nothing is left on a failure)')),
          user: Flag.String('user').pipe(Flag.withMetavar('<login>'), Flag.withDescription('the user whose workspace it comes from')),
        },
        ({ uri, file, user }) => act(() => actions.exportFromWorkspace(io, { uri, file, login: user })),
      ).pipe(Command.withDescription("export a folder as a zip of its files' original bytes, folders kept")),
      trash,
      Command.make(
        'import-zip',
        {
          file: Argument.String('file.zip').pipe(Argument.withDescription('the zip to unpack (e.g. one knowagent export wrote)')),
          uri: Argument.String('kb-uri').pipe(Argument.withDescription('the folder to unpack it into, e.g. kb://me/notes/ (made when missing)')),
          user: Flag.String('user').pipe(Flag.withMetavar('<login>'), Flag.withDescription('the user whose workspace it goes into')),
        },
        ({ file, uri, user }) => act(() => import('./import-zip-action.ts').then(({ importZipIntoWorkspace }) => importZipIntoWorkspace(io, { file, uri, login: user }))),
      ).pipe(Command.withDescription('unpack a zip into a folder: every entry checked first, all files or none')),
      Command.make(
        'backup',
        { file: Argument.String('file').pipe(Argument.withDescription('the backup file to write (renamed into place only once complete; nothing is left on a failure)')) },
        ({ file }) => act(() => backupActions().then(({ backup }) => backup(io, { file }))),
      ).pipe(Command.withDescription('back up everything (users, tokens, settings, every file version, jobs) into one file, while the server runs')),
      Command.make(
        'restore',
        { file: Argument.String('file').pipe(Argument.withDescription('a file written by knowagent backup')) },
        ({ file }) => act(() => backupActions().then(({ restore }) => restore(io, { file }))),
      ).pipe(Command.withDescription('restore a backup into an empty data dir (KNOWAGENT_DATA_DIR) or an empty DATABASE_URL database')),
      Command.make('help', { command: Argument.String('command').pipe(Argument.withDescription('the command to explain'), Argument.variadic()) }, ({ command }) =>
        showHelp(command),
      ).pipe(Command.withDescription('show this help, or a command\'s')),
    ]),
  )
}

/**
 * Parses `argv` and runs the command it names. Resolves to the exit code; rejects with what an
 * action failed with (src/cli.ts reports it and exits 1).
 */
export async function runCommandLine(argv: ReadonlyArray<string>, io: Io): Promise<number> {
  let exitCode = 0
  const command = knowagentCommand({
    io,
    act: (action) => Effect.promise(async () => void (exitCode = await action())),
    showHelp: (commandPath) => Effect.suspend(() => run([...commandPath, '--help'])),
  })
  const layer = Layer.mergeAll(CliOutput.layerPresenter(makePresenter({ io, root: command })), CliConfig.layer({ builtIns }))
  const version = packageVersion()
  // effect/cli's type asks for its platform services (file system, path, terminal, stdio, child
  // processes) but it uses them only for file and path arguments, prompts, and `Command.run`'s
  // reading of process.argv: our arguments and flags are strings and booleans, we pass argv, and
  // the presenter writes through `io`. A service asked for anyway would be a defect naming it.
  const run = (args: ReadonlyArray<string>): Effect.Effect<void, unknown> =>
    Command.runWith(command, { version })(args).pipe(Effect.provide(layer)) as Effect.Effect<void, unknown, never>
  const exit = await Effect.runPromiseExit(run(argv))
  if (Exit.isSuccess(exit)) return exitCode
  const error = Cause.squash(exit.cause)
  if (CliError.isCliError(error) && error._tag === 'ShowHelp') return 2 // the presenter has shown what is wrong
  throw error
}
