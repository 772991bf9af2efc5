// The operator CLI (bin: knowagent). `--help` on any command prints its usage and exits 0;
// `--version` prints the version. A bad command line prints what is wrong and that command's usage
// on stderr and exits 2; failures exit 1. The commands are in src/cli/.
import { ConfigError } from './effects/config/app-config.ts'
import { UserError } from './effects/auth/users.ts'
import { defaultIo, serve, worker, type Io } from './cli/actions.ts'

export type { Io } from './cli/actions.ts'

/**
 * `serve` and `worker` run as long as the process does and take no arguments. Started bare (as
 * `npm start` and process managers start them) they skip the argument parser, whose modules would
 * otherwise stay in the server's memory for its whole life. Measured after `--version`, against a
 * bare import: +3.4 MB heap and +4.3 MB resident from the sources (the server runs from them
 * whenever the bundle is stale), +0.4 MB heap from the bundle (its effect/cli modules are
 * initialised only through this import), against a 150 MB idle target (docs/performance.md).
 * With anything after them they go through the parser like the rest.
 */
const BARE_LONG_RUNNING = new Map<string, (io: Io) => Promise<number>>([
  ['serve', serve],
  ['worker', worker],
])

export async function main(argv: string[], io: Io = defaultIo): Promise<number> {
  try {
    const [command, ...rest] = argv
    const longRunning = command !== undefined && rest.length === 0 ? BARE_LONG_RUNNING.get(command) : undefined
    if (longRunning) return await longRunning(io)
    const { runCommandLine } = await import('./cli/command-line.ts')
    return await runCommandLine(argv, io)
  } catch (error) {
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
