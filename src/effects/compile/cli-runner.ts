// The CLI compile channel (SPEC §8): an operator-configured argument vector run without a shell.
// The prompt goes to stdin, the answer comes from stdout. The program runs in a process group of
// its own, so a timeout, a cancel or the end of the call kills everything it started (the whole
// group), not only the first process. Stderr is kept (the last part, capped, secrets redacted)
// for the failure reason; the command line itself never appears in one.
import * as Effect from 'effect/Effect'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRedactor } from '../llm/redact-secrets.ts'
import { ChannelFailure } from './channel-failure.ts'
import { type CliProfile, DEFAULT_CLI_TIMEOUT_SECONDS, MODEL_PLACEHOLDER, REASONING_PLACEHOLDER } from './compile-config.ts'

export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024
export const MAX_STDERR_CHARS = 2000
/** After SIGTERM, the group gets this long before SIGKILL. */
export const KILL_GRACE_MS = 2000

export type CliFailureCode = 'cli.spawn' | 'cli.exit' | 'cli.timeout' | 'cli.output_too_large' | 'cli.empty_output' | 'cli.not_allowed'

/** A CLI step's failure: the channels' one failure, with a `cli.*` code. */
const cliFailure = (fields: { readonly code: CliFailureCode; readonly message: string; readonly retryable: boolean }) => new ChannelFailure(fields)

export interface CliInvocation {
  readonly program: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  /** undefined: a fresh temporary directory, removed afterwards. */
  readonly cwd: string | undefined
  readonly stdin: string
  readonly timeoutMs: number
  readonly maxOutputBytes: number
  /**
   * Values redacted from everything the program writes (its answer, which is published, and its
   * stderr): every value of the profile's allow-listed environment, and every secret-named value
   * of the server's environment and of what knowagent adds (see `serverSecrets`).
   */
  readonly secrets: ReadonlyArray<string>
}

/** A server environment variable whose name says it holds a secret (model keys, DASHSCOPE_API_KEY, tokens). */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL/i

/** The values of the server's environment that must never reach a published page. */
export function serverSecrets(serverEnv: Readonly<Record<string, string | undefined>>): string[] {
  return Object.entries(serverEnv).flatMap(([name, value]) => (value !== undefined && SECRET_NAME.test(name) ? [value] : []))
}

/**
 * The argument vector for one call: `{model}` and `{reasoning}` replaced where they are a whole
 * argument (nothing is ever parsed or split), the environment reduced to the allow-list plus
 * `extraEnv`. The model and reasoning level must be among the profile's.
 */
export function buildCliInvocation({
  profile,
  model,
  reasoning,
  serverEnv,
  extraEnv = {},
  prompt,
}: {
  readonly profile: CliProfile
  readonly model: string
  readonly reasoning: string | undefined
  readonly serverEnv: Readonly<Record<string, string | undefined>>
  readonly extraEnv?: Readonly<Record<string, string>>
  readonly prompt: string
}): CliInvocation | ChannelFailure {
  if (!profile.models.includes(model)) {
    return cliFailure({ code: 'cli.not_allowed', message: `model "${model}" is not allowed for CLI profile "${profile.id}"`, retryable: false })
  }
  const levels = profile.reasoningLevels ?? []
  const needsReasoning = profile.command.includes(REASONING_PLACEHOLDER)
  if (reasoning !== undefined && levels.length > 0 && !levels.includes(reasoning)) {
    return cliFailure({ code: 'cli.not_allowed', message: `reasoning level "${reasoning}" is not allowed for CLI profile "${profile.id}"`, retryable: false })
  }
  if (needsReasoning && (reasoning === undefined || (levels.length > 0 && !levels.includes(reasoning)))) {
    return cliFailure({ code: 'cli.not_allowed', message: `CLI profile "${profile.id}" needs a reasoning level`, retryable: false })
  }
  const substitute = (argument: string) => (argument === MODEL_PLACEHOLDER ? model : argument === REASONING_PLACEHOLDER ? (reasoning ?? '') : argument)
  const [program, ...rest] = profile.command
  const env: Record<string, string> = {}
  for (const name of profile.env ?? []) {
    const value = serverEnv[name]
    if (value !== undefined) env[name] = value
  }
  return {
    program: program!,
    args: rest.map(substitute),
    env: { ...env, ...extraEnv },
    // The operator's allow-listed values and every secret-named one; not what knowagent adds for
    // the job's owner (BAILIAN_WORKSPACE_ID is the owner's, shown in their settings, and meant to be quoted).
    secrets: [...Object.values(env), ...serverSecrets(extraEnv), ...serverSecrets(serverEnv)],
    cwd: profile.cwd,
    stdin: prompt,
    timeoutMs: (profile.timeoutSeconds ?? DEFAULT_CLI_TIMEOUT_SECONDS) * 1000,
    maxOutputBytes: profile.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
  }
}

/** Signals the whole process group; a group already gone is fine. */
export function killProcessGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

/** The tail of stderr, whole lines where possible, with the secrets handed to the program redacted. */
export function stderrExcerpt({ stderr, secrets }: { readonly stderr: string; readonly secrets: ReadonlyArray<string> }): string {
  const redacted = createRedactor(secrets)(stderr).trim()
  if (redacted.length <= MAX_STDERR_CHARS) return redacted
  const tail = redacted.slice(-MAX_STDERR_CHARS)
  const newline = tail.indexOf('\n')
  return `…${newline >= 0 && newline < 200 ? tail.slice(newline + 1) : tail}`
}

/**
 * Runs one invocation and returns its stdout. Interruption (a cancel, a job timeout, shutdown)
 * kills the process group and waits until the program has exited.
 */
export function runCliInvocation(invocation: CliInvocation): Effect.Effect<string, ChannelFailure> {
  return Effect.callback<string, ChannelFailure>((resume) => {
    const workDir = invocation.cwd ?? mkdtempSync(join(tmpdir(), 'knowagent-cli-'))
    const removeWorkDir = () => {
      if (invocation.cwd === undefined) rmSync(workDir, { recursive: true, force: true })
    }
    let child: ChildProcess
    try {
      child = spawn(invocation.program, [...invocation.args], {
        cwd: workDir,
        env: invocation.env,
        detached: true, // its own process group: killing -pid reaches everything it starts
        shell: false,
        stdio: ['pipe', 'pipe', 'pipe'],
        windowsHide: true,
      })
    } catch (error) {
      removeWorkDir()
      resume(Effect.fail(cliFailure({ code: 'cli.spawn', message: `could not start the CLI: ${(error as Error).message}`, retryable: false })))
      return
    }
    const secrets = invocation.secrets
    const stdout: Buffer[] = []
    let stdoutBytes = 0
    let stderr = ''
    let failure: ChannelFailure | undefined
    let exited = false
    let escalation: NodeJS.Timeout | undefined
    const pgid = child.pid

    const killGroup = () => {
      if (pgid === undefined) return
      killProcessGroup(pgid, 'SIGTERM')
      escalation ??= setTimeout(() => killProcessGroup(pgid, 'SIGKILL'), KILL_GRACE_MS)
    }
    const stop = (reason: ChannelFailure) => {
      failure ??= reason
      killGroup()
    }

    const timer = setTimeout(
      () => stop(cliFailure({ code: 'cli.timeout', message: `the CLI did not finish within ${Math.round(invocation.timeoutMs / 1000)} s and was stopped`, retryable: true })),
      invocation.timeoutMs,
    )
    child.stdout!.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.byteLength
      if (stdoutBytes > invocation.maxOutputBytes) {
        stop(cliFailure({ code: 'cli.output_too_large', message: `the CLI wrote more than ${invocation.maxOutputBytes} bytes`, retryable: false }))
        return
      }
      stdout.push(chunk)
    })
    child.stderr!.setEncoding('utf8')
    child.stderr!.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4 * MAX_STDERR_CHARS)
    })
    child.stdin!.on('error', () => {}) // a program that does not read its stdin closes the pipe early
    child.stdin!.end(invocation.stdin)

    child.on('error', (error) => {
      stop(cliFailure({ code: 'cli.spawn', message: `could not start the CLI: ${error.message}`, retryable: false }))
    })
    // The leader is done: what it left running in its group (holding our pipes open) goes with it.
    child.on('exit', () => {
      if (pgid !== undefined) killProcessGroup(pgid, 'SIGKILL')
    })
    child.on('close', (code, signal) => {
      exited = true
      clearTimeout(timer)
      if (pgid !== undefined) killProcessGroup(pgid, 'SIGKILL')
      if (escalation) clearTimeout(escalation)
      removeWorkDir()
      if (failure) return resume(Effect.fail(failure))
      if (code !== 0) {
        const excerpt = stderrExcerpt({ stderr, secrets })
        return resume(
          Effect.fail(
            cliFailure({
              code: 'cli.exit',
              message: `the CLI exited with ${signal ? `signal ${signal}` : `code ${code}`}${excerpt ? `: ${excerpt}` : ''}`,
              retryable: true,
            }),
          ),
        )
      }
      const text = Buffer.concat(stdout).toString('utf8').trim()
      if (text === '') {
        const excerpt = stderrExcerpt({ stderr, secrets })
        return resume(Effect.fail(cliFailure({ code: 'cli.empty_output', message: `the CLI wrote nothing to stdout${excerpt ? `: ${excerpt}` : ''}`, retryable: true })))
      }
      // A program that prints its environment (or a key it was given) must not publish it.
      resume(Effect.succeed(createRedactor(secrets)(text)))
    })

    // Interrupted: kill the group and wait for the program to be gone.
    return Effect.promise(
      () =>
        new Promise<void>((resolve) => {
          clearTimeout(timer)
          if (exited || pgid === undefined) return resolve()
          child.once('close', () => resolve())
          killProcessGroup(pgid, 'SIGKILL')
          // a group whose leader already exited but whose members live on
          if (!groupAlive(pgid)) resolve()
        }),
    )
  })
}
