// One person cannot hold the shared compile queue: each job is in its owner's group and the
// workers run at most `compile.queue.perUserConcurrency` jobs of one group at once (default 1),
// so while alice's jobs hang at their model call, bob's job takes the free slot and finishes. And
// one person's active work is bounded: past `compile.queue.maxActiveJobsPerUser` queued and
// running jobs, a queue request's files are refused `too_many_active_jobs`, and so is a retry (429).
// Real PostgreSQL and pg-boss; the waits follow the job rows' NOTIFY events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createUser } from '../../src/effects/auth/users.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { createScriptedModel, textResult } from '../support/scripted-model.ts'
import { type CompileHarness, registryWith, startCompileHarness } from '../support/compile-harness.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

describe('the compile queue is shared fairly', () => {
  let database: TestDatabase
  let harness: CompileHarness
  let alice: Owner
  let bob: Owner
  // alice's jobs wait at their model call until cancelled; bob's model answers at once
  const hanging = createScriptedModel({ info: { id: 'hanging', name: 'Hanging' }, script: () => ({ kind: 'hang' }) })
  const echo = createScriptedModel({ info: { id: 'echo', name: 'Echo' }, script: () => ({ kind: 'result', result: textResult('a summary') }) })

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    alice = await createUser(database.db, { login: 'alice', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    bob = await createUser(database.db, { login: 'bob', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    for (const dir of ['a1', 'a2', 'a3', 'a4', 'a5']) await putText(database.db, { owner: alice, segments: [dir, 'notes.md'], text: `# ${dir}\nNotes.`, mime: 'text/markdown' })
    await putText(database.db, { owner: bob, segments: ['b', 'notes.md'], text: '# b\nNotes.', mime: 'text/markdown' })
    harness = await startCompileHarness({
      database,
      models: registryWith([hanging, echo]),
      // the defaults' per-person share, two slots, and room for three active jobs a person
      settings: { concurrency: 2, perUserConcurrency: 1, maxActiveJobsPerUser: 3 },
    })
  })
  afterAll(async () => {
    await harness?.close()
    await database?.close()
  })

  const queueOne = async (caller: Owner, dir: string, modelId: string) =>
    harness.service.enqueue({ caller, params: { uris: [`kb://me/${dir}/notes.md`], channel: 'llm', modelId } })

  it("another person's job starts while one person's three jobs wait: at most one of theirs runs, and their fourth is refused", async () => {
    const aliceJobs = []
    for (const dir of ['a1', 'a2', 'a3']) {
      const result = await queueOne(alice, dir, 'hanging')
      expect(result.refused).toEqual([])
      aliceJobs.push(result.jobs[0]!.id)
    }
    await harness.startWorker({ name: 'fair' }) // two slots
    const first = await Promise.any(aliceJobs.map((id) => harness.waitForJob(id, (job) => job.status === 'running', 'running')))

    const bobs = await queueOne(bob, 'b', 'echo')
    expect(bobs.refused).toEqual([])
    // Without the per-person share alice's second job takes the other slot, and bob's never starts.
    const done = await harness.waitForJob(bobs.jobs[0]!.id, (job) => job.status === 'succeeded' || job.status === 'failed', 'the end')
    expect(done.status, JSON.stringify(done)).toBe('succeeded')
    const statuses = await Promise.all(aliceJobs.map(async (id) => (await harness.service.get({ caller: alice, id }))!.status))
    expect(statuses.filter((status) => status === 'running')).toEqual(['running'])
    expect(statuses.filter((status) => status === 'queued')).toHaveLength(2)

    // three active already: a fourth request's file is refused, with the limit in words
    const fourth = await queueOne(alice, 'a4', 'hanging')
    expect(fourth.jobs).toEqual([])
    expect(fourth.refused).toEqual([{ uri: 'kb://users/alice/a4/notes.md', code: 'too_many_active_jobs', message: expect.stringContaining('(3)') }])

    // a retry that would make a fourth active job is refused too (429)
    const queuedId = aliceJobs.find((id) => id !== first.id)!
    expect((await harness.service.cancel({ caller: alice, id: queuedId })).ok).toBe(true)
    expect((await queueOne(alice, 'a5', 'hanging')).refused).toEqual([])
    expect(await harness.service.retry({ caller: alice, id: queuedId })).toMatchObject({ ok: false, status: 429, code: 'too_many_active_jobs' })

    for (const job of (await harness.service.list({ caller: alice, filter: { offset: 0, limit: 100 } })).jobs) {
      if (job.status === 'queued' || job.status === 'running') await harness.service.cancel({ caller: alice, id: job.id })
    }
  })
})
