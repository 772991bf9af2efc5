import * as Effect from 'effect/Effect'
import * as Exit from 'effect/Exit'
import * as Schema from 'effect/Schema'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { isRunning, runningInGroup } from '../../../tests/support/process-tree.ts'
import { ChannelFailure } from './channel-failure.ts'
import { buildCliInvocation, type CliInvocation, runCliInvocation, stderrExcerpt } from './cli-runner.ts'
import { type CliProfile, CliProfileSchema, CliProfilesSchema } from './compile-config.ts'

const FAKE_CLI = fileURLToPath(new URL('../../../tests/fixtures/cli/fake-cli.mjs', import.meta.url))

const dirs: string[] = []
function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cli-test-'))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function profile(overrides: Partial<CliProfile> = {}): CliProfile {
  return {
    id: 'fake',
    name: 'Fake CLI',
    command: [process.execPath, FAKE_CLI, '--mode', 'echo', '--model', '{model}', '--reasoning', '{reasoning}'],
    models: ['gpt-x'],
    reasoningLevels: ['low', 'high'],
    ...overrides,
  }
}

function invocation(overrides: Partial<CliProfile> = {}, args: { model?: string; reasoning?: string; prompt?: string; serverEnv?: Record<string, string> } = {}): CliInvocation {
  const built = buildCliInvocation({
    profile: profile(overrides),
    model: args.model ?? 'gpt-x',
    reasoning: args.reasoning ?? 'low',
    serverEnv: args.serverEnv ?? {},
    prompt: args.prompt ?? 'Summarise this.',
  })
  if (built instanceof ChannelFailure) throw new Error(built.message)
  return built
}

const run = (inv: CliInvocation, signal?: AbortSignal) => Effect.runPromiseExit(runCliInvocation(inv), { signal })

async function failureOf(inv: CliInvocation): Promise<ChannelFailure> {
  const exit = await run(inv)
  if (Exit.isSuccess(exit)) throw new Error(`expected a failure, got ${exit.value}`)
  const error = exit.cause.reasons.find((reason) => reason._tag === 'Fail')
  if (!error || error._tag !== 'Fail') throw new Error('expected an expected failure')
  return error.error as ChannelFailure
}

async function readPids(dir: string): Promise<Record<string, number>> {
  // parsed inside the wait: the file may be seen half written
  return vi.waitFor(() => JSON.parse(readFileSync(join(dir, 'pids.json'), 'utf8')) as Record<string, number>, { timeout: 10_000, interval: 20 })
}

describe('the CLI profile schema', () => {
  const decode = (value: unknown) => Schema.decodeUnknownSync(CliProfileSchema)(value, { errors: 'all', onExcessProperty: 'error' })

  it('accepts placeholders as whole arguments', () => {
    expect(decode({ id: 'codex', name: 'Codex', command: ['/usr/bin/codex', 'exec', '-m', '{model}', '-c', '{reasoning}'], models: ['o4'] }).command).toHaveLength(6)
  })

  it.each([
    ['a placeholder inside an argument', { command: ['/usr/bin/codex', '--model={model}'] }, /must be a whole argument/],
    ['a placeholder as the program', { command: ['{model}', 'x'] }, /program must be fixed/],
    ['an empty command', { command: [] }, /./],
    ['a NUL in an argument', { command: ['/bin/x', 'a\u0000b'] }, /NUL/],
    ['no models', { models: [] }, /./],
    ['a shell string is just one program name', { command: [''] }, /program must be fixed/],
  ])('refuses %s', (_, change, message) => {
    expect(() => decode({ id: 'codex', name: 'Codex', command: ['/usr/bin/codex'], models: ['o4'], ...change })).toThrow(message)
  })

  it('refuses duplicate profile ids', () => {
    const one = { id: 'a', name: 'A', command: ['/bin/a'], models: ['m'] }
    expect(() => Schema.decodeUnknownSync(CliProfilesSchema)([one, one])).toThrow(/duplicate profile id "a"/)
  })
})

describe('buildCliInvocation', () => {
  it('substitutes whole arguments only and passes only allow-listed environment variables', () => {
    const inv = invocation({ env: ['ALLOWED', 'MISSING'] }, { serverEnv: { ALLOWED: 'yes', SECRET: 'no', PATH: '/usr/bin' } })
    expect(inv.args).toEqual([FAKE_CLI, '--mode', 'echo', '--model', 'gpt-x', '--reasoning', 'low'])
    expect(inv.env).toEqual({ ALLOWED: 'yes' })
  })

  it('adds the extra environment (e.g. BAILIAN_WORKSPACE_ID)', () => {
    const built = buildCliInvocation({ profile: profile(), model: 'gpt-x', reasoning: 'low', serverEnv: {}, extraEnv: { BAILIAN_WORKSPACE_ID: 'ws-1' }, prompt: '' })
    expect(built).toMatchObject({ env: { BAILIAN_WORKSPACE_ID: 'ws-1' } })
  })

  it.each([
    ['a model the profile does not allow', { model: 'other' }, 'model "other" is not allowed'],
    ['a reasoning level the profile does not allow', { reasoning: 'extreme' }, 'reasoning level "extreme" is not allowed'],
  ])('refuses %s', (_, args, message) => {
    const built = buildCliInvocation({ profile: profile(), model: 'gpt-x', reasoning: 'low', serverEnv: {}, prompt: '', ...args })
    expect(built).toBeInstanceOf(ChannelFailure)
    expect((built as ChannelFailure).message).toContain(message)
  })
})

describe('runCliInvocation', () => {
  it('sends the prompt on stdin and returns stdout, with only the allowed environment, in a fresh directory it removes', async () => {
    const inv = invocation({ env: ['ALLOWED'] }, { prompt: 'Ünïcode prompt\nline 2', serverEnv: { ALLOWED: '1', HOME: '/root' } })
    const exit = await run(inv)
    expect(Exit.isSuccess(exit)).toBe(true)
    const answer = JSON.parse(Exit.isSuccess(exit) ? exit.value : '{}') as { argv: string[]; stdin: string; env: string[]; cwd: string }
    expect(answer.stdin).toBe('Ünïcode prompt\nline 2')
    expect(answer.argv).toEqual(['--mode', 'echo', '--model', 'gpt-x', '--reasoning', 'low'])
    expect(answer.env.filter((name) => name === 'ALLOWED' || name === 'HOME')).toEqual(['ALLOWED'])
    expect(answer.cwd).toMatch(/knowagent-cli-/)
    expect(existsSync(answer.cwd)).toBe(false)
  })

  describe('never runs anything through a shell', () => {
    const injections = ['$(touch PWNED-dollar)', 'x; touch PWNED-semicolon', '`touch PWNED-backtick`', "'; touch PWNED-quote; '", 'a && touch PWNED-and | cat']

    it('the injection strings do run a command when a shell reads them (control)', () => {
      const dir = freshDir()
      // as a careless command line would hold them: bare, and the quote-breaking one inside quotes
      for (const text of injections) {
        spawnSync('/bin/sh', ['-c', text.startsWith("'") ? `echo '${text}'` : `echo ${text}`], { cwd: dir, stdio: 'ignore' })
      }
      expect(readdirSync(dir).filter((name) => name.startsWith('PWNED')).sort()).toEqual(
        ['PWNED-and', 'PWNED-backtick', 'PWNED-dollar', 'PWNED-quote', 'PWNED-semicolon'],
      )
    })

    it.each(injections)('a model name %j arrives as one literal argument and creates nothing', async (model) => {
      const dir = freshDir()
      const inv = invocation({ models: [model], cwd: dir }, { model, prompt: `File: ${model}.md\n---\n${model}` })
      const exit = await run(inv)
      expect(Exit.isSuccess(exit)).toBe(true)
      const answer = JSON.parse(Exit.isSuccess(exit) ? exit.value : '{}') as { argv: string[]; stdin: string }
      expect(answer.argv).toEqual(['--mode', 'echo', '--model', model, '--reasoning', 'low'])
      expect(answer.stdin).toContain(model)
      expect(readdirSync(dir)).toEqual([])
    })
  })

  it('kills the whole process tree when interrupted, and waits for it', async () => {
    const dir = freshDir()
    const controller = new AbortController()
    const running = run(invocation({ command: [process.execPath, FAKE_CLI, '--mode', 'tree'], cwd: dir }), controller.signal)
    const pids = await readPids(dir)
    expect(Object.values(pids).every(isRunning)).toBe(true)
    expect(runningInGroup(pids.leader!).sort()).toEqual([pids.leader, pids.child, pids.grandchild].sort())
    controller.abort()
    const exit = await running
    expect(Exit.isFailure(exit) && exit.cause.reasons.every((reason) => reason._tag === 'Interrupt')).toBe(true)
    await vi.waitFor(() => expect(runningInGroup(pids.leader!)).toEqual([]), { timeout: 5_000, interval: 20 })
    expect(Object.values(pids).filter(isRunning)).toEqual([])
  })

  it('kills the whole process tree on timeout and says so', async () => {
    const dir = freshDir()
    // long enough for the three processes to be up on a loaded machine; the tree must be whole when it fires
    const inv = { ...invocation({ command: [process.execPath, FAKE_CLI, '--mode', 'tree'], cwd: dir }), timeoutMs: 5_000 }
    const failure = failureOf(inv)
    const pids = await readPids(dir)
    expect(Object.values(pids).every(isRunning)).toBe(true)
    expect(await failure).toMatchObject({ code: 'cli.timeout', retryable: true, message: 'the CLI did not finish within 5 s and was stopped' })
    await vi.waitFor(() => expect(runningInGroup(pids.leader!)).toEqual([]), { timeout: 5_000, interval: 20 })
    expect(Object.values(pids).filter(isRunning)).toEqual([])
  })

  it('kills what the program left running when it exits', async () => {
    const dir = freshDir()
    const exit = await run(invocation({ command: [process.execPath, FAKE_CLI, '--mode', 'orphan'], cwd: dir }))
    expect(exit).toEqual(Exit.succeed('answered, leaving a process behind'))
    const pids = await readPids(dir)
    await vi.waitFor(() => expect(isRunning(pids.grandchild!)).toBe(false), { timeout: 5_000, interval: 20 })
  })

  // Issue 34: stderr was redacted, stdout (the answer, published as a summary page) was not.
  it('redacts from its answer every value it was given and the server secrets a prompt may quote', async () => {
    const inv = invocation(
      { command: [process.execPath, FAKE_CLI, '--mode', 'env'], env: ['PATH', 'SOME_TOKEN', 'TEAM_NAME'] },
      {
        serverEnv: { PATH: process.env.PATH ?? '/usr/bin', SOME_TOKEN: 'tok-passed-to-the-cli', TEAM_NAME: 'team-blue-ops', OPENAI_API_KEY: 'sk-model-key-never-passed', HOME: '/root' },
        prompt: 'The file says: sk-model-key-never-passed',
      },
    )
    const exit = await run(inv)
    if (!Exit.isSuccess(exit)) throw new Error('the CLI failed')
    expect(exit.value).toContain('SOME_TOKEN=[redacted]')
    expect(exit.value).toContain('TEAM_NAME=[redacted]') // every value it was given, whatever its name
    expect(exit.value).toContain('The file says: [redacted]') // a model key of the server, not given to it
    for (const secret of ['tok-passed-to-the-cli', 'team-blue-ops', 'sk-model-key-never-passed']) expect(exit.value).not.toContain(secret)
    expect(exit.value).not.toContain('HOME=') // never passed: the allow-list holds
  })

  it('puts the end of stderr, capped and with the secrets it was given redacted, into the failure', async () => {
    const inv = invocation({ command: [process.execPath, FAKE_CLI, '--mode', 'fail'], env: ['SECRET_TOKEN'] }, { serverEnv: { SECRET_TOKEN: 'sk-very-secret-value' } })
    const failure = await failureOf(inv)
    expect(failure.code).toBe('cli.exit')
    expect(failure.message).toMatch(/^the CLI exited with code 3: …/)
    expect(failure.message).toContain('fatal: quota exceeded')
    expect(failure.message).toContain('token [redacted] rejected')
    expect(failure.message).not.toContain('sk-very-secret-value')
    expect(failure.message).not.toContain(FAKE_CLI) // never the command line
    expect(failure.message.length).toBeLessThan(2100)
  })

  it.each([
    ['no output', 'silent', 'cli.empty_output'],
    ['too much output', 'flood', 'cli.output_too_large'],
  ])('fails on %s', async (_, mode, code) => {
    expect(await failureOf(invocation({ command: [process.execPath, FAKE_CLI, '--mode', mode] }))).toMatchObject({ code })
  })

  it('fails clearly when the program does not exist', async () => {
    expect(await failureOf(invocation({ command: ['/nonexistent/cli'] }))).toMatchObject({ code: 'cli.spawn', retryable: false })
  })
})

describe('stderrExcerpt', () => {
  it('keeps short stderr whole and redacts the given secrets', () => {
    expect(stderrExcerpt({ stderr: ' key abcd1234 bad \n', secrets: ['abcd1234'] })).toBe('key [redacted] bad')
  })
})
