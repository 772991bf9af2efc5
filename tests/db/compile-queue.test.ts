// Queueing, claiming, cancelling and retrying compile jobs on real PostgreSQL, with real
// pg-boss workers, real child processes for the CLI channel and scripted models.
import diagnostics from 'node:diagnostics_channel'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Worker } from 'node:worker_threads'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { createUser } from '../../src/effects/auth/users.ts'
import type { CompileJobView } from '../../src/effects/compile/compile-jobs-store.ts'
import { renderSkillFile, userSkillSegments } from '../../src/effects/compile/skills.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { createScriptedModel, textResult } from '../support/scripted-model.ts'
import { type CompileHarness, FAKE_CLI, fakeCliProfile, registryWith, startCompileHarness } from '../support/compile-harness.ts'
import { isRunning, runningInGroup } from '../support/process-tree.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'


describe('compile jobs on the queue', () => {
  let database: TestDatabase
  let harness: CompileHarness
  let alice: Owner
  let bob: Owner
  const dirs: string[] = []
  const hanging = createScriptedModel({ info: { id: 'hanging', name: 'Hanging' }, script: () => ({ kind: 'hang' }) })
  const echo = createScriptedModel({ info: { id: 'echo', name: 'Echo', supportsReasoningEffort: true }, script: (request) => ({ kind: 'result', result: textResult(`summary of ${String(request.messages[1]?.content).slice(0, 40)}`) }) })
  const treeDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'compile-cli-'))
    dirs.push(dir)
    return dir
  }
  const readPids = () =>
    vi.waitFor(() => JSON.parse(readFileSync(join(cliDir, 'pids.json'), 'utf8')) as Record<string, number>, { timeout: 15_000, interval: 20 })
  const put = (owner: Owner, segments: string[], text: string) => putText(database.db, { owner, segments, text, mime: 'text/markdown' })

  let cliDir: string
  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    alice = await createUser(database.db, { login: 'alice', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    bob = await createUser(database.db, { login: 'bob', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    for (const dir of ['a', 'b', 'c', 'race', 'cancel', 'retry', 'stop', 'skills', 'local', 'unread']) {
      for (const name of ['one.md', 'two.md', 'three.md']) await put(alice, [dir, name], `# ${dir}/${name}\nThe ${dir} notes say ${name} matters because of ${dir}.`)
    }
    await put(alice, ['a', 'sub', 'deep.md'], 'deep')
    for (let i = 1; i <= 8; i++) await put(alice, ['race', `r${i}.md`], `Race file ${i}.`)
    await put(bob, ['mine', 'one.md'], 'bob notes')
    cliDir = treeDir()
    harness = await startCompileHarness({
      database,
      models: registryWith([hanging, echo]),
      cliProfiles: [
        fakeCliProfile(),
        fakeCliProfile({ id: 'tree', mode: 'tree', cwd: cliDir }),
        fakeCliProfile({ id: 'slow', command: [process.execPath, FAKE_CLI, '--mode', 'slow', '--delay', '200'], reasoningLevels: [] }),
      ],
    })
  })
  afterEach(() => vi.useRealTimers())
  afterAll(async () => {
    await harness?.close()
    await database?.close()
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })

  describe('enqueueing (no worker running)', () => {
    it('returns the existing job for an identical request and refuses a different configuration with the other job', async () => {
      const uris = ['kb://me/a/one.md', 'kb://me/a/two.md']
      const first = await harness.service.enqueue({ caller: alice, params: { uris, channel: 'llm', modelId: 'echo', callBudget: 9 } })
      expect(first.refused).toEqual([])
      expect(first.jobs).toHaveLength(1)
      expect(first.jobs[0]).toMatchObject({ created: true, status: 'queued', directory_uri: 'kb://users/alice/a/', configuration: { model_id: 'echo', call_budget: 9, skill: { ref: 'wiki-default' } } })

      const again = await harness.service.enqueue({ caller: alice, params: { uris, channel: 'llm', modelId: 'echo', callBudget: 9 } })
      expect(again.jobs.map((job) => [job.id, job.created])).toEqual([[first.jobs[0]!.id, false]])
      expect(again.queued.map((entry) => entry.job_id)).toEqual([first.jobs[0]!.id, first.jobs[0]!.id])

      const other = await harness.service.enqueue({ caller: alice, params: { uris: [...uris, 'kb://me/a/three.md'], channel: 'llm', modelId: 'local', callBudget: 9 } })
      expect(other.refused).toEqual(
        uris.map((uri) => ({
          uri: uri.replace('kb://me/', 'kb://users/alice/'),
          code: 'conflicting_active_job',
          message: expect.stringContaining(first.jobs[0]!.id),
          job_id: first.jobs[0]!.id,
          configuration: expect.objectContaining({ model_id: 'echo', call_budget: 9 }),
        })),
      )
      expect(other.jobs).toHaveLength(1)
      expect(other.jobs[0]!.files).toEqual([{ uri: 'kb://users/alice/a/three.md' }])
      for (const job of [first.jobs[0]!, other.jobs[0]!]) expect((await harness.service.cancel({ caller: alice, id: job.id })).ok).toBe(true)
    })

    it('two identical requests at the same moment make one job', async () => {
      const params = { uris: ['kb://me/b/one.md', 'kb://me/b/two.md'], channel: 'llm' as const, modelId: 'echo' }
      const results = await Promise.all([1, 2, 3].map(() => harness.service.enqueue({ caller: alice, params })))
      const ids = new Set(results.flatMap((result) => result.jobs.map((job) => job.id)))
      expect(ids.size).toBe(1)
      expect(results.filter((result) => result.jobs[0]!.created)).toHaveLength(1)
      expect(results.flatMap((result) => result.refused)).toEqual([])
      await harness.service.cancel({ caller: alice, id: [...ids][0]! })
    })

    it('says for each URI why it was not queued', async () => {
      const result = await harness.service.enqueue({
        caller: alice,
        params: {
          uris: ['kb://me/c/one.md', 'kb://me/c/one.md', 'kb://me/c/', 'kb://me/a/two.md', 'kb://users/bob/mine/one.md', 'kb://me/c/missing.md', '/etc/passwd', ...Array.from({ length: 30 }, () => 'kb://me/c/two.md')],
          channel: 'llm',
          modelId: 'echo',
        },
      })
      expect(result.refused.map((refusal) => `${refusal.uri} ${refusal.code}`).slice(0, 8)).toEqual([
        'kb://me/c/one.md duplicate',
        'kb://me/c/ not_raw',
        'kb://me/a/two.md other_directory',
        'kb://users/bob/mine/one.md not_visible',
        'kb://me/c/missing.md not_visible',
        '/etc/passwd not_visible',
        'kb://me/c/two.md duplicate',
        'kb://me/c/two.md duplicate',
      ])
      expect(result.refused.filter((refusal) => refusal.code === 'over_limit')).toHaveLength(5)
      expect(result.jobs[0]!.files).toEqual([{ uri: 'kb://users/alice/c/one.md' }, { uri: 'kb://users/alice/c/two.md' }])
      await harness.service.cancel({ caller: alice, id: result.jobs[0]!.id })
    })

    it.each([
      ['an unknown model', { channel: 'llm' as const, modelId: 'gpt-nonexistent' }, 'unknown_model'],
      ['an unknown CLI profile', { channel: 'cli' as const, profileId: 'codex' }, 'unknown_profile'],
      ['a model the profile does not allow', { channel: 'cli' as const, profileId: 'fake', modelId: 'o9' }, 'model_not_allowed'],
      ['a reasoning level the profile does not allow', { channel: 'cli' as const, profileId: 'fake', reasoningLevel: 'extreme' }, 'reasoning_not_allowed'],
      ['an unknown skill', { channel: 'llm' as const, skill: 'user:nope' }, 'unknown_skill'],
      ['a file as artifact parent', { channel: 'llm' as const, artifactParentUri: 'kb://me/c/one.md' }, 'invalid_parent'],
      ["another user's directory as artifact parent", { channel: 'llm' as const, artifactParentUri: 'kb://users/bob/mine/' }, 'invalid_parent'],
    ])('refuses every URI for %s', async (_, params, code) => {
      const result = await harness.service.enqueue({ caller: alice, params: { uris: ['kb://me/c/one.md', 'kb://me/c/two.md'], ...params } })
      expect(result.jobs).toEqual([])
      expect(result.refused.map((refusal) => refusal.code)).toEqual([code, code])
    })

    it("keeps a user's skills to that user: snapshotted into their job, unknown to anyone else", async () => {
      const text = renderSkillFile({ name: 'terse', description: 'Terse notes', audience: 'on-call', language: 'English', keep: 'commands' })
      await put(alice, userSkillSegments('terse'), text)
      const own = await harness.service.enqueue({ caller: alice, params: { uris: ['kb://me/skills/one.md'], channel: 'llm', modelId: 'echo', skill: 'user:terse' } })
      expect(own.jobs[0]!.configuration!.skill).toMatchObject({ ref: 'user:terse', name: 'terse' })
      const stored = await database.db.selectFrom('jobs').select('configuration_json').where('id', '=', own.jobs[0]!.id).executeTakeFirstOrThrow()
      expect((stored.configuration_json as { skill: { body: string } }).skill.body).toContain('Write for: on-call.')
      const options = await harness.service.options({ caller: alice })
      expect(options.skills.map((skill) => skill.ref)).toEqual(['wiki-default', 'user:terse'])
      expect((await harness.service.options({ caller: bob })).skills.map((skill) => skill.ref)).toEqual(['wiki-default'])
      const theirs = await harness.service.enqueue({ caller: bob, params: { uris: ['kb://me/mine/one.md'], channel: 'llm', modelId: 'echo', skill: 'user:terse' } })
      expect(theirs.refused.map((refusal) => refusal.code)).toEqual(['unknown_skill'])
      const skillAsInput = await harness.service.enqueue({ caller: alice, params: { uris: ['kb://me/.skills/terse/SKILL.md'], channel: 'llm', modelId: 'echo' } })
      expect(skillAsInput.refused.map((refusal) => refusal.code)).toEqual(['not_raw'])
      await harness.service.cancel({ caller: alice, id: own.jobs[0]!.id })
    })

    it('shows the CLI profiles without their command line', async () => {
      const options = await harness.service.options({ caller: alice })
      expect(options.cli_profiles).toEqual([
        { id: 'fake', name: 'Fake CLI', models: ['fake-model'], reasoning_levels: ['low', 'medium', 'high'], timeout_seconds: 300 },
        { id: 'tree', name: 'Fake CLI', models: ['fake-model'], reasoning_levels: ['low', 'medium', 'high'], timeout_seconds: 300 },
        { id: 'slow', name: 'Fake CLI', models: ['fake-model'], reasoning_levels: [], timeout_seconds: 300 },
      ])
      expect(JSON.stringify(options)).not.toContain('fake-cli.mjs')
      expect(options.defaults).toMatchObject({ channel: 'llm', model_id: 'local', skill: 'wiki-default', max_files: 32 })
    })
  })

  describe('running', () => {
    it('a job whose stored configuration cannot be read fails at its first claim, with why, and frees its files', async () => {
      const result = await harness.service.enqueue({ caller: alice, params: { uris: ['kb://me/unread/one.md'], channel: 'llm', modelId: 'echo' } })
      const id = result.jobs[0]!.id
      // Written by a newer server, or broken: what no attempt can run.
      await database.db.updateTable('jobs').set({ configuration_json: JSON.stringify({ version: 99 }) }).where('id', '=', id).execute()
      const worker = await harness.startWorker({ name: 'unreadable' })
      const failed = await harness.waitForJob(id, (job) => job.status !== 'queued' && job.status !== 'running', 'the end')
      expect(failed).toMatchObject({ status: 'failed', failure: { code: 'unreadable_configuration', retryable: false } })
      const again = await harness.service.enqueue({ caller: alice, params: { uris: ['kb://me/unread/one.md'], channel: 'llm', modelId: 'echo' } })
      expect(again.refused).toEqual([])
      expect(again.jobs[0]).toMatchObject({ created: true })
      await harness.waitForJob(again.jobs[0]!.id, (job) => job.status === 'succeeded', 'succeeded')
      await worker.stop()
    })

    it('two workers racing never run the same job', async () => {
      const workers = [await harness.startWorker({ name: 'racer-1' }), await harness.startWorker({ name: 'racer-2' })]
      const jobs: CompileJobView[] = []
      for (let i = 1; i <= 8; i++) {
        const result = await harness.service.enqueue({ caller: alice, params: { uris: [`kb://me/race/r${i}.md`], channel: 'cli', profileId: 'slow', modelId: 'fake-model', reasoningLevel: '' } })
        expect(result.refused).toEqual([])
        jobs.push(result.jobs[0]!)
      }
      const ends = await Promise.all(jobs.map((job) => harness.waitForJob(job.id, (j) => j.status === 'succeeded' || j.status === 'failed', 'the end')))
      expect(ends.map((job) => [job.status, job.attempts])).toEqual(jobs.map(() => ['succeeded', 1]))
      const starts = harness.logLines.filter((line) => line.includes('compile attempt started')).map((line) => JSON.parse(line) as { jobId: string; name: string })
      for (const job of jobs) expect(starts.filter((start) => start.jobId === job.id)).toHaveLength(1)
      expect(new Set(starts.filter((start) => jobs.some((job) => job.id === start.jobId)).map((start) => start.name))).toEqual(new Set(['racer-1', 'racer-2']))
      for (const worker of workers) await worker.stop()
    })

    it("a local-model job's steps run on a thread the worker starts, and stopping the worker ends that thread", async () => {
      const threads: Worker[] = []
      const onThread = (message: unknown) => threads.push((message as { worker: Worker }).worker)
      diagnostics.subscribe('worker_threads', onThread)
      try {
        const worker = await harness.startWorker({ name: 'local-thread' })
        const result = await harness.service.enqueue({ caller: alice, params: { uris: ['kb://me/local/one.md', 'kb://me/local/two.md'], channel: 'llm', modelId: 'local' } })
        const ended = await harness.waitForJob(result.jobs[0]!.id, (job) => job.status === 'succeeded' || job.status === 'failed', 'the end')
        expect(ended.status, JSON.stringify(ended)).toBe('succeeded')
        expect(threads).toHaveLength(1) // one thread for the summaries, the overview and the abstract
        const exited = new Promise<number>((resolve) => threads[0]!.once('exit', resolve))
        await worker.stop()
        expect(typeof (await exited)).toBe('number')
      } finally {
        diagnostics.unsubscribe('worker_threads', onThread)
      }
    })

    it('cancelling a running job aborts its model call', async () => {
      const worker = await harness.startWorker({ name: 'cancel-llm' })
      const interruptedBefore = hanging.tracker.interrupted.length
      const result = await harness.service.enqueue({ caller: alice, params: { uris: ['kb://me/cancel/one.md'], channel: 'llm', modelId: 'hanging' } })
      const id = result.jobs[0]!.id
      await harness.waitForJob(id, (job) => job.stage === 'summarising', 'summarising')
      await vi.waitFor(() => expect(hanging.tracker.started.length).toBeGreaterThan(interruptedBefore))
      expect(await harness.service.cancel({ caller: alice, id })).toMatchObject({ ok: true, job: { status: 'cancelled' } })
      await vi.waitFor(() => expect(hanging.tracker.interrupted.length).toBe(interruptedBefore + 1), { timeout: 10_000 })
      await vi.waitFor(() => expect(worker.running()).toEqual([]), { timeout: 10_000 })
      const after = (await harness.service.get({ caller: alice, id }))!
      expect(after.status, JSON.stringify(after)).toBe('cancelled')
      expect(await harness.service.cancel({ caller: alice, id })).toMatchObject({ ok: false, status: 409, code: 'job_finished' })
      await worker.stop()
    })

    it('cancelling a running job kills its CLI process tree', async () => {
      const worker = await harness.startWorker({ name: 'cancel-cli' })
      rmSync(join(cliDir, 'pids.json'), { force: true })
      const result = await harness.service.enqueue({ caller: alice, params: { uris: ['kb://me/cancel/two.md'], channel: 'cli', profileId: 'tree', modelId: 'fake-model' } })
      const id = result.jobs[0]!.id
      const pids = await readPids()
      expect(Object.values(pids).every(isRunning)).toBe(true)
      expect((await harness.service.cancel({ caller: alice, id })).ok).toBe(true)
      await vi.waitFor(() => expect(worker.running()).toEqual([]), { timeout: 10_000 })
      // SIGKILL has reached the whole group once the attempt settles; the kernel finishes tearing
      // down a member whose pipes closed a moment later (as in cli-runner.test.ts)
      await vi.waitFor(() => expect(runningInGroup(pids.leader!)).toEqual([]), { timeout: 5_000, interval: 20 })
      expect(Object.values(pids).filter(isRunning)).toEqual([])
      expect((await harness.service.get({ caller: alice, id }))!.status).toBe('cancelled')
      await worker.stop()
    })

    it('a stopping worker interrupts its job, kills the CLI tree and releases the job for retry', async () => {
      const worker = await harness.startWorker({ name: 'stopping' })
      rmSync(join(cliDir, 'pids.json'), { force: true })
      const result = await harness.service.enqueue({ caller: alice, params: { uris: ['kb://me/stop/one.md'], channel: 'cli', profileId: 'tree', modelId: 'fake-model' } })
      const id = result.jobs[0]!.id
      const pids = await readPids()
      await worker.stop()
      await vi.waitFor(() => expect(Object.values(pids).filter(isRunning)).toEqual([]), { timeout: 5_000, interval: 20 })
      const job = (await harness.service.get({ caller: alice, id }))!
      expect(job).toMatchObject({ status: 'queued', failure: { code: 'interrupted', stage: 'summarising', retryable: true, attempt: 1 } })
      expect((await harness.service.cancel({ caller: alice, id })).ok).toBe(true)
    })

    it('a retry runs the snapshot, even after the server configuration changed', async () => {
      // first run: a server where "echo" is gone, so the job fails for good
      const gone = await harness.startWorker({ name: 'old-config', engines: { ...harness.engines, models: registryWith([]) } })
      const result = await harness.service.enqueue({ caller: alice, params: { uris: ['kb://me/retry/one.md'], channel: 'llm', modelId: 'echo', callBudget: 7, reasoningLevel: 'high' } })
      const id = result.jobs[0]!.id
      const failed = await harness.waitForJob(id, (job) => job.status === 'failed', 'failed')
      expect(failed.failure).toMatchObject({ stage: 'queued', code: 'unknown_model', retryable: false })
      await gone.stop()
      // the server's configuration changes (other defaults); the retry still runs "echo", budget 7, "high"
      const requestsBefore = echo.requests.length
      const retried = await harness.service.retry({ caller: alice, id })
      expect(retried).toMatchObject({ ok: true, job: { status: 'queued', failure: null, configuration: { model_id: 'echo', call_budget: 7, reasoning_level: 'high' } } })
      const worker = await harness.startWorker({ name: 'new-config' })
      const done = await harness.waitForJob(id, (job) => job.status === 'succeeded', 'succeeded')
      expect(done).toMatchObject({ attempts: 1, max_attempts: failed.max_attempts, configuration: { model_id: 'echo', call_budget: 7 }, progress: { callBudget: 7 } }) // a fresh set of attempts
      expect(echo.requests.length).toBeGreaterThan(requestsBefore)
      expect(await harness.service.retry({ caller: alice, id })).toMatchObject({ ok: false, status: 409, code: 'job_not_retryable' })
      expect(await harness.service.retry({ caller: bob, id })).toMatchObject({ ok: false, status: 404 })
      await worker.stop()
    })
  })

  describe('waking (pg-boss keeps no LISTEN of its own)', () => {
    it('a job queued while the workers sleep starts at once, not at their next poll a minute later', async () => {
      // Its own harness: workers that poll only every 60 s, so only the wake-up can start the job
      // within waitForJob's 30 s.
      const sleepy = await startCompileHarness({ database, models: registryWith([echo]), settings: { pollingIntervalSeconds: 60, concurrency: 2 } })
      try {
        const worker = await sleepy.startWorker({ name: 'sleepy' })
        // Both pollers have fetched once and found nothing: they wait out their 60 s now.
        await vi.waitFor(
          () => {
            const pollers = worker.queue.boss.getWipData().filter((poller) => poller.name === 'compile')
            expect(pollers).toHaveLength(2)
            for (const poller of pollers) expect(poller.lastFetchedOn).not.toBeNull()
          },
          { timeout: 10_000, interval: 20 },
        )
        const jobs: string[] = []
        for (const name of ['one.md', 'two.md']) {
          const result = await sleepy.service.enqueue({ caller: alice, params: { uris: [`kb://me/b/${name}`], channel: 'llm', modelId: 'echo' } })
          jobs.push(result.jobs[0]!.id)
        }
        // Two jobs at once: each poller is woken, not only the first.
        const ends = await Promise.all(jobs.map((id) => sleepy.waitForJob(id, (job) => job.status === 'succeeded', 'succeeded')))
        expect(ends.map((job) => job.attempts)).toEqual([1, 1])
        const starts = sleepy.logLines.filter((line) => line.includes('compile attempt started')).map((line) => JSON.parse(line) as { jobId: string })
        expect(starts.map((start) => start.jobId).sort()).toEqual([...jobs].sort())
        await worker.stop()
      } finally {
        await sleepy.close()
      }
    })
  })
})
