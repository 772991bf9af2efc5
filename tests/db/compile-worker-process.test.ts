// `knowagent worker` as a real child process on real PostgreSQL: it takes a job, is killed with
// SIGKILL mid-job, and another worker finishes the job once the dead worker's heartbeat has
// expired. The other worker's queue runs on pg-boss's TestClock, so the expiry, the retry's
// backoff and its polling happen when the test moves time — no sleeping.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { TestClock } from 'pg-boss'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createUser } from '../../src/effects/auth/users.ts'
import { makeModelRegistry } from '../../src/effects/llm/model-registry.ts'
import type { ModelConfig } from '../../src/effects/llm/model-config.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { type CompileHarness, startCompileHarness } from '../support/compile-harness.ts'
import { type ScriptedProvider, startScriptedProvider, streamScript, textAnswerSse } from '../support/scripted-provider.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

const BIN = fileURLToPath(new URL('../../bin/knowagent.mjs', import.meta.url))
const HEARTBEAT_SECONDS = 10

describe('a worker process killed mid-job', () => {
  let database: TestDatabase
  let provider: ScriptedProvider
  let harness: CompileHarness
  let owner: Owner
  let dir: string
  let child: ChildProcess | undefined
  let model: ModelConfig

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    owner = await createUser(database.db, { login: 'kim', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    const text = '# Runbook\nRestart the worker when the queue stalls.'
    await putText(database.db, { owner, segments: ['ops', 'runbook.md'], text })
    provider = await startScriptedProvider()
    // the first call (the doomed worker's) never gets an answer; every later one does
    provider.setHandler((request) => (request.index === 0 ? { kind: 'hang' } : streamScript(textAnswerSse(`Answer ${request.index}.`))))
    model = {
      id: 'remote',
      name: 'Remote (scripted)',
      profile: 'tests',
      baseUrl: provider.baseUrl,
      model: 'scripted',
      contextWindow: 32_000,
      maxOutputTokens: 2_000,
      supportsNativeToolCalling: false,
      maxRetries: 0,
    }
    dir = mkdtempSync(join(tmpdir(), 'knowagent-worker-'))
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({ models: [model], compile: { queue: { heartbeatSeconds: HEARTBEAT_SECONDS, retryDelaySeconds: 1, pollingIntervalSeconds: 0.5, concurrency: 1 } } }),
    )
    harness = await startCompileHarness({
      database,
      models: makeModelRegistry({ models: [model], env: {} }),
      settings: { heartbeatSeconds: HEARTBEAT_SECONDS, retryDelaySeconds: 1, concurrency: 1 },
    })
  })
  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await harness?.close()
    await provider?.close()
    await database?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('is taken over by another worker once its heartbeat has expired', { timeout: 60_000 }, async () => {
    child = spawn(process.execPath, [BIN, 'worker'], {
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: database.url!, KNOWAGENT_CONFIG: join(dir, 'config.json'), KNOWAGENT_DATA_DIR: dir, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout!.on('data', (chunk) => (output += String(chunk)))
    child.stderr!.on('data', (chunk) => (output += String(chunk)))
    await vi.waitFor(() => expect(output).toContain('is taking compile jobs'), { timeout: 30_000, interval: 50 })

    const result = await harness.service.enqueue({ caller: owner, params: { uris: ['kb://me/ops/runbook.md'], channel: 'llm', modelId: 'remote' } })
    const id = result.jobs[0]!.id
    await harness.waitForJob(id, (job) => job.stage === 'summarising', 'summarising in the child worker')
    await provider.waitForRequests(1, { timeoutMs: 20_000 })

    const exited = new Promise((resolve) => child!.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
    expect((await harness.service.get({ caller: owner, id }))!).toMatchObject({ status: 'running', attempts: 1 })

    const clock = new TestClock(Date.now())
    await harness.startWorker({ clock, name: 'survivor' })
    // nothing happens before the heartbeat has expired …
    await clock.tick((HEARTBEAT_SECONDS - 2) * 1000)
    expect((await harness.service.get({ caller: owner, id }))!).toMatchObject({ status: 'running', attempts: 1 })
    // … then the survivor's supervision retries it, and its polling claims the retry
    const done = harness.waitForJob(id, (job) => job.status === 'succeeded' || job.status === 'failed', 'the end')
    for (let step = 0; step < 12 && (await harness.service.get({ caller: owner, id }))!.attempts < 2; step++) await clock.tick(5_000)
    const job = await done
    expect(job).toMatchObject({ status: 'succeeded', attempts: 2, failure: null })
    expect(job.result!.artifacts).toContain('kb://users/kim/ops/.overview.md')
  })
})
