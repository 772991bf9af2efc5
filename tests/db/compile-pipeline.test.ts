// The compile pipeline end to end on real PostgreSQL: the sample corpus compiled by the built-in
// local model through the real queue and worker, the artifacts read (and cited) by the agent's
// tools, the cache, and what a failed semantic step leaves readable.
import * as Effect from 'effect/Effect'
import { randomUUID } from 'node:crypto'
import { makeLocalChatModel } from '../../src/effects/llm/local/index.ts'
import { runTurn } from '../../src/effects/turn/run-turn.ts'
import type { TurnEmitted } from '../../src/machines/index.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createUser } from '../../src/effects/auth/users.ts'
import { makeToolRegistry } from '../../src/effects/tools/tool-registry.ts'
import { WORKSPACE_TOOLS } from '../../src/effects/tools/workspace-tools.ts'
import { importFolder } from '../../src/effects/workspace/import-folder.ts'
import { SAMPLES_DIR } from '../../src/effects/workspace/bootstrap-demo.ts'
import { type DocumentParser, makeDocumentParser } from '../../src/effects/workspace/parse/document-parser.ts'
import { findNode, listChildren, type Owner, putFile, readCurrent } from '../../src/effects/workspace/store.ts'
import { deleteSubtree, moveNode } from '../../src/effects/workspace/manage.ts'
import { parseKbUri } from '../../src/effects/workspace/uri.ts'
import { ProviderHttpError } from '../../src/effects/llm/model-errors.ts'
import { createScriptedModel, textResult } from '../support/scripted-model.ts'
import { type CompileHarness, registryWith, startCompileHarness } from '../support/compile-harness.ts'
import { openTestDatabase, type TestDatabase } from '../support/test-database.ts'

const GUIDES = 'kb://users/demo/samples/guides/'

describe('compiling the sample corpus with the built-in local model', () => {
  let database: TestDatabase
  let harness: CompileHarness
  let demo: Owner
  let parser: DocumentParser
  // Answers every call once `held` resolves (the test changes the tree meanwhile); `called` says a call is waiting.
  let held: Promise<void> = Promise.resolve()
  let called = Promise.withResolvers<void>()
  const gated = createScriptedModel({
    info: { id: 'gated', name: 'Gated' },
    script: () =>
      Effect.promise(() => {
        called.resolve()
        return held
      }).pipe(Effect.as({ kind: 'result' as const, result: textResult('What this covers, in one line.') })),
  })
  const failing = createScriptedModel({
    info: { id: 'failing', name: 'Failing' },
    script: () => ({ kind: 'error', error: new ProviderHttpError({ status: 400, code: 'invalid_request', message: 'context too long', retryAfterMs: undefined }) }),
  })

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    demo = await createUser(database.db, { login: 'demo', password: 'a-long-password' })
    parser = makeDocumentParser({ processes: 1 })
    await importFolder(database.db, { owner: demo, folder: SAMPLES_DIR, targetSegments: ['samples'], maxFileBytes: 10_000_000, parser })
    harness = await startCompileHarness({ database, models: registryWith([failing, gated]), parser })
    await harness.startWorker()
  })
  afterAll(async () => {
    await harness?.close()
    await parser?.close()
    await database?.close()
  })

  const guideUris = async () => {
    const directory = await findNode(database.db, demo, ['samples', 'guides'])
    const page = await listChildren(database.db, { owner: demo, parent: directory!, offset: 0, limit: 100 })
    return page.entries.filter((node) => node.kind === 'file').map((node) => node.uri)
  }
  const tools = makeToolRegistry(WORKSPACE_TOOLS)
  const runTool = async (scope: string, name: string, args: Record<string, unknown>) =>
    Effect.runPromise(tools.run({ context: { db: database.db, caller: demo, scope: parseKbUri({ uri: scope, callerLogin: 'demo' }), progress: () => {} }, name, args }))
  const read = async (scope: string, uri: string) => {
    const outcome = await runTool(scope, 'read', { uri })
    return { ...outcome, result: outcome.result as { text: string } }
  }

  it('writes a summary per file, the directory overview (L1) and abstract (L0), as generated files', async () => {
    const uris = await guideUris()
    expect(uris.length).toBeGreaterThanOrEqual(3)
    const result = await harness.service.enqueue({ caller: demo, params: { uris, channel: 'llm', modelId: 'local' } })
    expect(result.refused).toEqual([])
    expect(result.jobs).toHaveLength(1)
    const job = await harness.waitForJob(result.jobs[0]!.id, (j) => j.status === 'succeeded' || j.status === 'failed', 'the end')
    expect(job).toMatchObject({ status: 'succeeded', attempts: 1, failure: null, dead_lettered: false })
    expect(job.progress).toMatchObject({ stage: 'publishing', filesDone: uris.length - job.result!.skipped.length, callsUsed: job.progress!.filesDone + 2 })
    expect(job.result!.artifacts).toContain(`${GUIDES}.overview.md`)
    expect(job.result!.artifacts).toContain(`${GUIDES}.abstract.md`)
    const summaries = await findNode(database.db, demo, ['samples', 'guides', 'summaries'])
    const summaryFiles = (await listChildren(database.db, { owner: demo, parent: summaries!, offset: 0, limit: 100 })).entries
    expect(summaryFiles.map((node) => node.name).sort()).toEqual(
      uris.filter((uri) => !job.result!.skipped.some((s) => s.uri === uri)).map((uri) => `${uri.split('/').at(-1)!.replace(/\.md$/, '')}.md`).sort(),
    )
    const generated = await database.db.selectFrom('nodes').select(['name', 'generated']).where('owner_id', '=', demo.id).where('generated', 'is not', null).execute()
    expect(generated.filter((row) => row.generated === 'overview').map((row) => row.name)).toEqual(['.overview.md'])
    expect(generated.filter((row) => row.generated === 'abstract').map((row) => row.name)).toEqual(['.abstract.md'])
    expect(generated.filter((row) => row.generated === 'summary')).toHaveLength(summaryFiles.length)
  })

  it('the read tool reads the overview, which cites every compiled file by URI, and the abstract points at it', async () => {
    const overview = await read(GUIDES, `${GUIDES}.overview.md`)
    expect(overview.ok).toBe(true)
    const text = (overview.result as { text: string }).text
    expect(text).toMatch(/^# Overview: guides/)
    expect(text).toContain(`${GUIDES}knowagent-guide.md`)
    expect(text).toContain(`${GUIDES}summaries/knowagent-guide.md`)
    const abstract = await read(GUIDES, `${GUIDES}.abstract.md`)
    expect((abstract.result as { text: string }).text).toContain(`Overview: ${GUIDES}.overview.md`)
    const summary = await read(GUIDES, `${GUIDES}summaries/knowagent-guide.md`)
    expect((summary.result as { text: string }).text).toContain(`Source: ${GUIDES}knowagent-guide.md`)
  })

  it('the local model, asked in the compiled directory, reads an artifact and cites it', async () => {
    const events: TurnEmitted[] = []
    const output = await runTurn({
      db: database.db,
      caller: demo,
      tools,
      model: makeLocalChatModel({ deltaDelayMs: 0 }),
      turnId: randomUUID(),
      uri: GUIDES,
      question: 'What does the compiled overview of guides say?',
      history: [],
      onEvent: (event) => events.push(event),
      signal: new AbortController().signal,
    })
    expect(output.status).toBe('done')
    const reads = output.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : [])).filter((c) => c.function.name === 'read').map((c) => JSON.parse(c.function.arguments).uri as string)
    const answer = events.filter((e) => e.type === 'delta').map((e) => (e as { text: string }).text).join('')
    expect(reads).toContain(`${GUIDES}.overview.md`)
    expect(answer).toContain(`${GUIDES}.overview.md`)
  })

  it('the status tool reports the latest compile job for the directory and for each of its files', async () => {
    const forDirectory = await runTool(GUIDES, 'status', {})
    expect(forDirectory.result).toMatchObject({ uri: GUIDES, compile: { kind: 'compile', status: 'succeeded', uri: GUIDES, error: null } })
    const forFile = await runTool(GUIDES, 'status', { uri: `${GUIDES}knowagent-guide.md` })
    expect(forFile.result).toMatchObject({ body: { kind: 'parse', status: 'succeeded' }, compile: { kind: 'compile', status: 'succeeded', uri: GUIDES } })
    const forOtherFile = await runTool('kb://me/samples/', 'status', { uri: 'kb://me/samples/README.md' })
    expect(forOtherFile.result).toMatchObject({ compile: null })
  })

  it('compiling again without changes makes no model call and no new version', async () => {
    const before = harness.modelCalls.length
    const overviewNode = await findNode(database.db, demo, ['samples', 'guides', '.overview.md'])
    const versionBefore = (await readCurrent(database.db, demo, overviewNode!)).versionNo
    const result = await harness.service.enqueue({ caller: demo, params: { uris: await guideUris().then((uris) => uris.filter((uri) => !uri.includes('/summaries/'))), channel: 'llm', modelId: 'local' } })
    const job = await harness.waitForJob(result.jobs[0]!.id, (j) => j.status === 'succeeded' || j.status === 'failed', 'the end')
    expect(job.status).toBe('succeeded')
    expect(harness.modelCalls.length).toBe(before)
    expect(job.progress!.callsUsed).toBe(0)
    expect((await readCurrent(database.db, demo, overviewNode!)).versionNo).toBe(versionBefore)
  })

  it('refuses generated artifacts as compile inputs', async () => {
    const result = await harness.service.enqueue({ caller: demo, params: { uris: [`${GUIDES}.overview.md`, `${GUIDES}summaries/knowagent-guide.md`], channel: 'llm', modelId: 'local' } })
    expect(result.jobs).toEqual([])
    expect(result.refused.map((refusal) => refusal.code)).toEqual(['generated_artifact', 'generated_artifact'])
  })

  it('a file you upload over a generated page is yours again: compilable, and never overwritten by a job', async () => {
    const text = '# My own abstract\nWritten by hand.'
    await putFile(database.db, { owner: demo, segments: ['samples', 'guides', '.abstract.md'], bytes: new TextEncoder().encode(text), parsed: { ok: true, mime: 'text/markdown', text } })
    const row = await database.db.selectFrom('nodes').select('generated').where('owner_id', '=', demo.id).where('path', '=', 'samples/guides/.abstract.md').executeTakeFirstOrThrow()
    expect(row.generated).toBeNull()
    const result = await harness.service.enqueue({ caller: demo, params: { uris: [`${GUIDES}knowagent-guide.md`], channel: 'llm', modelId: 'local', callBudget: 7 } })
    const job = await harness.waitForJob(result.jobs[0]!.id, (j) => j.status === 'failed' || j.status === 'succeeded', 'the end')
    expect(job.failure).toMatchObject({ stage: 'publishing', code: 'artifact_conflict', retryable: false })
    expect(job.failure!.message).toContain(`${GUIDES}.abstract.md is one of your own files`)
    const abstract = await read(GUIDES, `${GUIDES}.abstract.md`)
    expect(abstract.result.text).toBe(text)
  })

  it('parses again a file whose parse had failed, and saves its body before the semantic steps', async () => {
    const text = '# Retry notes\nParsers improve; a job parses again what failed before.'
    await putFile(database.db, { owner: demo, segments: ['reparse', 'notes.md'], bytes: new TextEncoder().encode(text), parsed: { ok: false, mime: 'text/markdown', error: 'parser crashed (simulated)' } })
    const before = await read('kb://me/reparse/', 'kb://me/reparse/notes.md')
    expect(before.ok).toBe(true)
    expect(before.result.text).toBe('')
    const result = await harness.service.enqueue({ caller: demo, params: { uris: ['kb://me/reparse/notes.md'], channel: 'llm', modelId: 'local' } })
    const job = await harness.waitForJob(result.jobs[0]!.id, (j) => j.status === 'succeeded' || j.status === 'failed', 'the end')
    expect(job).toMatchObject({ status: 'succeeded', result: { skipped: [] } })
    expect((await read('kb://me/reparse/', 'kb://me/reparse/notes.md')).result.text).toContain('a job parses again what failed before')
  })

  it('when the semantic step fails, the parsed body stays readable and the job says so', async () => {
    await putFile(database.db, { owner: demo, segments: ['notes2', 'plan.md'], bytes: new TextEncoder().encode('# Plan\nShip the compile queue.'), parsed: { ok: true, mime: 'text/markdown', text: '# Plan\nShip the compile queue.' } })
    const result = await harness.service.enqueue({ caller: demo, params: { uris: ['kb://me/notes2/plan.md'], channel: 'llm', modelId: 'failing' } })
    const job = await harness.waitForJob(result.jobs[0]!.id, (j) => j.status === 'failed', 'failed')
    expect(job.failure).toMatchObject({ stage: 'summarising', code: 'provider.http', retryable: false, bodyReadable: true, attempt: 1 })
    expect(job.dead_lettered).toBe(true)
    const body = await read('kb://me/notes2/', 'kb://me/notes2/plan.md')
    expect((body.result as { text: string }).text).toContain('Ship the compile queue.')
    expect(await findNode(database.db, demo, ['notes2', '.overview.md'])).toBeUndefined()
  })
  describe('the tree changes while a job runs', () => {
    const put = (segments: string[], text: string) =>
      putFile(database.db, { owner: demo, segments, bytes: new TextEncoder().encode(text), parsed: { ok: true, mime: 'text/markdown', text } })
    /** Queues a job on the gated model for `folder`'s files, and resolves once its first model call waits. */
    const startHeld = async (folder: string) => {
      const release = Promise.withResolvers<void>()
      held = release.promise
      called = Promise.withResolvers<void>()
      await put([folder, 'secret.md'], '# Secret\nA confidential paragraph.')
      await put([folder, 'other.md'], '# Other\nAnother paragraph.')
      const result = await harness.service.enqueue({ caller: demo, params: { uris: [`kb://me/${folder}/secret.md`, `kb://me/${folder}/other.md`], channel: 'llm', modelId: 'gated' } })
      expect(result.refused).toEqual([])
      await called.promise
      return { jobId: result.jobs[0]!.id, release: release.resolve }
    }

    it('a folder deleted meanwhile is not made again: the job fails and publishes nothing', async () => {
      const { jobId, release } = await startHeld('doomed')
      const folder = await findNode(database.db, demo, ['doomed'])
      await deleteSubtree(database.db, { owner: demo, node: folder! })
      release()
      const job = await harness.waitForJob(jobId, (j) => j.status === 'failed' || j.status === 'succeeded', 'the end')
      expect(job.failure).toMatchObject({ stage: 'publishing', code: 'deleted_while_running', retryable: false })
      expect(job.failure!.message).toContain('kb://users/demo/doomed/ was deleted while the job ran')
      expect(await findNode(database.db, demo, ['doomed'])).toBeUndefined()
      expect(await findNode(database.db, demo, ['doomed', 'summaries', 'secret.md'])).toBeUndefined()
    })

    it('a source file deleted meanwhile: the job fails and its text is not published', async () => {
      const { jobId, release } = await startHeld('thinned')
      await deleteSubtree(database.db, { owner: demo, node: (await findNode(database.db, demo, ['thinned', 'secret.md']))! })
      release()
      const job = await harness.waitForJob(jobId, (j) => j.status === 'failed' || j.status === 'succeeded', 'the end')
      expect(job.failure).toMatchObject({ stage: 'publishing', code: 'deleted_while_running' })
      expect(job.failure!.message).toContain('secret.md was deleted while the job ran')
      expect(await findNode(database.db, demo, ['thinned', 'summaries'])).toBeUndefined()
      expect(await findNode(database.db, demo, ['thinned', '.overview.md'])).toBeUndefined()
    })

    it('a folder renamed meanwhile gets the pages where it is now, citing its files by their new URIs', async () => {
      const { jobId, release } = await startHeld('before')
      const root = await findNode(database.db, demo, [])
      await moveNode(database.db, { owner: demo, node: (await findNode(database.db, demo, ['before']))!, destination: root!, name: 'after' })
      release()
      const job = await harness.waitForJob(jobId, (j) => j.status === 'failed' || j.status === 'succeeded', 'the end')
      expect(job.status).toBe('succeeded')
      expect(job.result!.artifacts).toContain('kb://users/demo/after/.overview.md')
      expect(await findNode(database.db, demo, ['before'])).toBeUndefined()
      const overview = await read('kb://me/after/', 'kb://me/after/.overview.md')
      expect(overview.result.text).toContain('kb://users/demo/after/secret.md')
      expect(overview.result.text).not.toContain('kb://users/demo/before/')
    })
  })
})
