// How `knowagent` shows a command's usage, its version and a bad command line. effect/cli parses
// the arguments and builds each command's help (a HelpDoc); this renders it as plain text in our
// wording, with no colour, through `Io`: help and the version on stdout, a bad command line on
// stderr as `knowagent: <what is wrong>` followed by that command's usage.
import * as Effect from 'effect/Effect'
import * as Option from 'effect/Option'
import type * as CliError from 'effect/cli/CliError'
import type * as CliOutput from 'effect/cli/CliOutput'
import type * as Command from 'effect/cli/Command'
import type * as HelpDoc from 'effect/cli/HelpDoc'
import type { Io } from './actions.ts'

const flagSignature = (flag: HelpDoc.FlagDoc) => (flag.type === 'boolean' ? `--${flag.name}` : `--${flag.name} ${flag.type}`)

const argumentSignature = (arg: HelpDoc.ArgDoc) => {
  const name = `<${arg.name}>${arg.variadic ? '...' : ''}`
  return arg.required ? name : `[${name}]`
}

/** `user add <login> [--password P]`: the command path (without `knowagent`), its arguments, then its flags. */
export function commandSignature(commandPath: ReadonlyArray<string>, doc: HelpDoc.HelpDoc): string {
  return [
    ...commandPath.slice(1),
    ...(doc.subcommands?.length ? ['<command>'] : []),
    ...(doc.args ?? []).map(argumentSignature),
    ...doc.flags.map((flag) => (flag.required ? flagSignature(flag) : `[${flagSignature(flag)}]`)),
  ].join(' ')
}

/** The command at `commandPath` (which starts with the root's own name). */
function commandAt(root: Command.Command.Any, commandPath: ReadonlyArray<string>): Command.Command.Any {
  let command = root
  for (const name of commandPath.slice(1)) {
    const next = command.subcommands.flatMap((group) => group.commands).find((sub) => sub.name === name)
    if (!next) break
    command = next
  }
  return command
}

/** Every runnable command below `command`, nested ones spelt out (`user add`), with its description. */
function commandRows(command: Command.Command.Any, prefix: ReadonlyArray<string> = []): Array<readonly [string, string]> {
  return command.subcommands.flatMap((group) =>
    group.commands.flatMap((sub) => {
      const path = [...prefix, sub.name]
      return sub.subcommands.length > 0 ? commandRows(sub, path) : [[path.join(' '), sub.description ?? ''] as const]
    }),
  )
}

function table(title: string, rows: ReadonlyArray<readonly [string, string]>): string[] {
  if (rows.length === 0) return []
  const width = Math.max(...rows.map(([left]) => left.length)) + 2
  return ['', `${title}:`, ...rows.map(([left, right]) => `  ${left.padEnd(width)}${right}`.trimEnd())]
}

const flagRows = (flags: ReadonlyArray<HelpDoc.FlagDoc>) =>
  flags.map((flag) => [[...flag.aliases, flagSignature(flag)].join(', '), Option.getOrElse(flag.description, () => '')] as const)

/** The help of the command at `commandPath`. */
export function formatHelp({ root, commandPath, doc }: { root: Command.Command.Any; commandPath: ReadonlyArray<string>; doc: HelpDoc.HelpDoc }): string {
  const lines = [`usage: ${[root.name, commandSignature(commandPath, doc)].join(' ').trimEnd()}`]
  if (doc.description) lines.push('', doc.description)
  lines.push(...table('arguments', (doc.args ?? []).map((arg) => [argumentSignature(arg), Option.getOrElse(arg.description, () => '')] as const)))
  lines.push(...table('flags', flagRows([...doc.flags, ...(doc.inheritedFlags ?? []), ...(doc.globalFlags ?? [])])))
  const commands = commandRows(commandAt(root, commandPath))
  if (commands.length > 0) {
    lines.push(...table('commands', commands))
    lines.push('', `"${commandPath.join(' ')} <command> --help" (or "${root.name} help ${[...commandPath.slice(1), '<command>'].join(' ')}") shows a command's arguments and flags.`)
  }
  return lines.join('\n')
}

const didYouMean = (suggestions: ReadonlyArray<string>) => (suggestions.length > 0 ? ` (did you mean ${suggestions.join(' or ')}?)` : '')

/** What is wrong with a command line, in our words; the command's usage follows it. */
export function describeCliError(error: CliError.NonShowHelpErrors, { commandPath, doc }: { commandPath: ReadonlyArray<string>; doc: HelpDoc.HelpDoc }): string {
  const command = commandPath.slice(1).join(' ')
  switch (error._tag) {
    case 'UnrecognizedOption':
      return `Unknown option '${error.option}'${didYouMean(error.suggestions)}`
    case 'UnknownSubcommand':
      return `unknown command "${[...commandPath.slice(1), error.subcommand].join(' ')}"${didYouMean(error.suggestions)}`
    case 'MissingArgument':
    case 'UnexpectedArgument':
      // The extra arguments are not repeated: one may be a password or token typed in the wrong place.
      return `${error._tag === 'UnexpectedArgument' ? 'too many arguments: ' : ''}expected "${[command, ...(doc.args ?? []).map(argumentSignature)].join(' ')}"`
    case 'MissingOption': {
      const flag = doc.flags.find((candidate) => candidate.name === error.option)
      return `${command} needs ${flag ? flagSignature(flag) : `--${error.option}`}`
    }
    case 'InvalidValue':
    case 'DuplicateOption':
    case 'ValidationError':
    case 'UserError':
      return error.message
    default:
      return error satisfies never
  }
}

/** effect/cli's output, through `io`. */
export function makePresenter({ io, root }: { io: Io; root: Command.Command.Any }): CliOutput.Presenter {
  return {
    present: (event) =>
      Effect.sync(() => {
        switch (event._tag) {
          case 'Help':
            return io.out(formatHelp({ root, commandPath: event.commandPath, doc: event.helpDoc }))
          case 'InvalidInvocation': {
            const context = { commandPath: event.commandPath, doc: event.helpDoc }
            const problems = event.errors.map((error) => `${root.name}: ${describeCliError(error, context)}`)
            return io.err(`${problems.join('\n')}\n\n${formatHelp({ root, ...context })}`)
          }
          case 'Version':
            return io.out(`${event.name} ${event.version}`)
          default:
            return event satisfies never
        }
      }),
  }
}
