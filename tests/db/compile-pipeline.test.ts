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
import { findNode, putFile } from '../../src/effects/workspace/store.ts'
import { listChildren } from '../../src/effects/workspace/folder-listing.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { readCurrent } from '../../src/effects/workspace/file-contents.ts'
import { moveNode } from '../../src/effects/workspace/manage.ts'
import { moveToTrash } from '../../src/effects/workspace/trash.ts'
import { parseKbUri } from '../../src/effects/workspace/uri.ts'
import { ProviderHttpError } from '../../src/effects/llm/model-errors.ts'
import { createScriptedModel, textResult } from '../support/scripted-model.ts'
import { type CompileHarness, registryWith, startCompileHarness } from '../support/compile-harness.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

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

  // Fails its first call for good (a provider 400), answers every call after: a job that fails, then succeeds on retry.
  let flakyCalls = 0
  const flaky = createScriptedModel({
    info: { id: 'flaky', name: 'Flaky' },
    script: () =>
      flakyCalls++ === 0
        ? { kind: 'error', error: new ProviderHttpError({ status: 400, code: 'invalid_request', message: 'not today', retryAfterMs: undefined }) }
        : { kind: 'result', result: textResult('A summary, on the second try.') },
  })

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    demo = await createUser(database.db, { login: 'demo', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    parser = makeDocumentParser({ processes: 1 })
    await importFolder(database.db, { owner: demo, folder: SAMPLES_DIR, targetSegments: ['samples'], maxFileBytes: 10_000_000, parser })
    harness = await startCompileHarness({ database, models: registryWith([failing, gated, flaky]), parser })
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
    // each page's version says a compile job wrote it (the file's history shows "compile")
    const origins = await database.db
      .selectFrom('nodes')
      .innerJoin('file_versions', 'file_versions.id', 'nodes.current_version_id')
      .select('file_versions.origin')
      .where('nodes.owner_id', '=', demo.id)
      .where('nodes.generated', 'is not', null)
      .execute()
    expect(new Set(origins.map((row) => row.origin))).toEqual(new Set(['compile']))
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
    await putText(database.db, { owner: demo, segments: ['samples', 'guides', '.abstract.md'], text })
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
    await putText(database.db, { owner: demo, segments: ['notes2', 'plan.md'], text: '# Plan\nShip the compile queue.' })
    const result = await harness.service.enqueue({ caller: demo, params: { uris: ['kb://me/notes2/plan.md'], channel: 'llm', modelId: 'failing' } })
    const job = await harness.waitForJob(result.jobs[0]!.id, (j) => j.status === 'failed', 'failed')
    expect(job.failure).toMatchObject({ stage: 'summarising', code: 'provider.http', retryable: false, bodyReadable: true, attempt: 1 })
    expect(job.dead_lettered).toBe(true)
    const body = await read('kb://me/notes2/', 'kb://me/notes2/plan.md')
    expect((body.result as { text: string }).text).toContain('Ship the compile queue.')
    expect(await findNode(database.db, demo, ['notes2', '.overview.md'])).toBeUndefined()
  })
  describe('the tree changes while a job runs', () => {
    const put = (segments: string[], text: string) => putText(database.db, { owner: demo, segments, text, mime: 'text/markdown' })
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
      await moveToTrash(database.db, { owner: demo, node: folder! })
      release()
      const job = await harness.waitForJob(jobId, (j) => j.status === 'failed' || j.status === 'succeeded', 'the end')
      expect(job.failure).toMatchObject({ stage: 'publishing', code: 'deleted_while_running', retryable: false })
      expect(job.failure!.message).toContain('kb://users/demo/doomed/ was deleted while the job ran')
      expect(await findNode(database.db, demo, ['doomed'])).toBeUndefined()
      expect(await findNode(database.db, demo, ['doomed', 'summaries', 'secret.md'])).toBeUndefined()
    })

    it('a source file deleted meanwhile: the job fails and its text is not published', async () => {
      const { jobId, release } = await startHeld('thinned')
      await moveToTrash(database.db, { owner: demo, node: (await findNode(database.db, demo, ['thinned', 'secret.md']))! })
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

  describe('several sources, one artifact directory', () => {
    const put = (segments: string[], text: string) => putText(database.db, { owner: demo, segments, text, mime: 'text/markdown' })
    const compile = async (uris: string[], extra: Record<string, unknown> = {}) => {
      const result = await harness.service.enqueue({ caller: demo, params: { uris, channel: 'llm', modelId: 'local', artifactParentUri: 'kb://me/wiki/', ...extra } })
      expect(result.refused).toEqual([])
      return harness.waitForJob(result.jobs[0]!.id, (j) => j.status === 'succeeded' || j.status === 'failed', 'the end')
    }
    const summaryPages = async () => {
      const directory = await findNode(database.db, demo, ['wiki', 'summaries'])
      const page = await listChildren(database.db, { owner: demo, parent: directory!, offset: 0, limit: 100 })
      return Object.fromEntries(await Promise.all(page.entries.map(async (node) => [node.name, /^Source: (\S+)$/m.exec((await readCurrent(database.db, demo, node)).body ?? '')?.[1]] as const)))
    }
    const overviewText = async () => (await read('kb://me/wiki/', 'kb://me/wiki/.overview.md')).result.text

    it("two sources with one page name keep a page each; compiling one again rewrites its own, never the other's", async () => {
      await put(['wiki', 'readme.md'], '# Wiki\nThe wiki.')
      await put(['north', 'notes.md'], '# North notes\nThe north office runs the nightly backups.')
      await put(['south', 'notes.md'], '# South notes\nThe south office answers the support queue.')
      await put(['south', 'notes'], 'South plain notes: the south office also keeps the spare keys.')
      expect((await compile(['kb://me/north/notes.md'])).status).toBe('succeeded')
      expect((await compile(['kb://me/south/notes.md', 'kb://me/south/notes'])).status).toBe('succeeded')
      expect(await summaryPages()).toEqual({
        'notes.md': 'kb://users/demo/north/notes.md',
        'notes.md.summary.md': 'kb://users/demo/south/notes.md',
        'notes.summary.md': 'kb://users/demo/south/notes',
      })
      await put(['north', 'notes.md'], '# North notes\nThe north office now runs the backups at noon.')
      expect((await compile(['kb://me/north/notes.md'])).status).toBe('succeeded')
      const pages = await summaryPages()
      expect(Object.keys(pages)).toHaveLength(3)
      expect(pages['notes.md']).toBe('kb://users/demo/north/notes.md')
      const north = await read('kb://me/wiki/', 'kb://me/wiki/summaries/notes.md')
      expect(north.result.text).toContain('noon')
      const south = await read('kb://me/wiki/', 'kb://me/wiki/summaries/notes.md.summary.md')
      expect(south.result.text).toContain('support queue')
      const overview = await overviewText()
      for (const uri of ['kb://users/demo/north/notes.md', 'kb://users/demo/south/notes.md', 'kb://users/demo/south/notes']) expect(overview).toContain(uri)
    })

    it('a later overview cites an earlier source where it is now, and leaves out one deleted since', async () => {
      const root = await findNode(database.db, demo, [])
      await moveNode(database.db, { owner: demo, node: (await findNode(database.db, demo, ['north']))!, destination: root!, name: 'north-office' })
      await moveToTrash(database.db, { owner: demo, node: (await findNode(database.db, demo, ['south', 'notes']))! })
      await put(['east', 'plan.md'], '# East plan\nThe east office plans the move.')
      expect((await compile(['kb://me/east/plan.md'])).status).toBe('succeeded')
      const overview = await overviewText()
      expect(overview).toContain('kb://users/demo/north-office/notes.md')
      expect(overview).toContain('**notes.md** (kb://users/demo/north-office/notes.md)') // named as the source is, not as its page
      expect(overview).not.toContain('kb://users/demo/north/')
      expect(overview).not.toContain('kb://users/demo/south/notes\n')
      expect(overview).not.toMatch(/kb:\/\/users\/demo\/south\/notes(?!\.md)/)
      expect(overview).toContain('kb://users/demo/south/notes.md')
      expect(overview).toContain('kb://users/demo/east/plan.md')
    })

    it('pages write a name with spaces as one linkable URI, which the read tool opens', async () => {
      await put(['spaced dir', "Bob's meeting notes.md"], '# Meeting\nThe team meets on Tuesdays.')
      const result = await harness.service.enqueue({ caller: demo, params: { uris: ["kb://me/spaced dir/Bob's meeting notes.md"], channel: 'llm', modelId: 'local' } })
      const job = await harness.waitForJob(result.jobs[0]!.id, (j) => j.status === 'succeeded' || j.status === 'failed', 'the end')
      expect(job.status).toBe('succeeded')
      const linkable = 'kb://users/demo/spaced%20dir/Bob%27s%20meeting%20notes.md'
      const summary = await read('kb://me/spaced dir/', "kb://me/spaced dir/summaries/Bob's meeting notes.md")
      expect(summary.result.text).toContain(`Source: ${linkable}\n`)
      const overview = (await read('kb://me/spaced dir/', 'kb://me/spaced dir/.overview.md')).result.text
      expect(overview).toContain(`${linkable} (summary: kb://users/demo/spaced%20dir/summaries/Bob%27s%20meeting%20notes.md)`)
      expect(overview).not.toContain("spaced dir/Bob's")
      const opened = await read('kb://me/spaced dir/', linkable)
      expect(opened.ok).toBe(true)
      expect(opened.result.text).toContain('The team meets on Tuesdays.')
    })

    it('a retry after a source was deleted says the file was skipped, and counts its attempts afresh', async () => {
      await put(['retry-src', 'keep.md'], '# Keep\nThis file stays.')
      await put(['retry-src', 'drop.md'], '# Drop\nThis file goes.')
      flakyCalls = 0
      const failed = await compile(['kb://me/retry-src/keep.md', 'kb://me/retry-src/drop.md'], { modelId: 'flaky', artifactParentUri: undefined })
      expect(failed).toMatchObject({ status: 'failed', attempts: 1 })
      await moveToTrash(database.db, { owner: demo, node: (await findNode(database.db, demo, ['retry-src', 'drop.md']))! })
      expect(await harness.service.retry({ caller: demo, id: failed.id })).toMatchObject({ ok: true })
      const done = await harness.waitForJob(failed.id, (j) => j.status === 'succeeded' || j.status === 'failed', 'the end')
      expect(done).toMatchObject({ status: 'succeeded', attempts: 1 })
      expect(done.result!.skipped).toEqual([{ uri: 'kb://users/demo/retry-src/drop.md', reason: 'deleted or moved since the job was queued' }])
    })
  })

  describe('a directory whose canonical URI is over 4,096 characters (made before the limit held)', () => {
    it('is refused at enqueue, with why, instead of a job that stays queued forever', async () => {
      // kb://me/<path>/ is 4,090 characters; kb://users/demo/<path>/ is 4,098. Such a tree cannot
      // be made through the store any more, so the older one is inserted as rows.
      const names = [...Array.from({ length: 16 }, (_, i) => String.fromCharCode(97 + i).repeat(250)), 'q'.repeat(65)]
      let parentId = (await findNode(database.db, demo, []))!.id
      for (let depth = 1; depth <= names.length; depth++) {
        const id = randomUUID()
        await database.db.insertInto('nodes').values({ id, owner_id: demo.id, parent_id: parentId, name: names[depth - 1]!, path: names.slice(0, depth).join('/'), kind: 'directory' }).execute()
        parentId = id
      }
      expect(`kb://me/${names.join('/')}/`).toHaveLength(4090)
      const fileId = randomUUID()
      await database.db.insertInto('nodes').values({ id: fileId, owner_id: demo.id, parent_id: parentId, name: 'f', path: [...names, 'f'].join('/'), kind: 'file' }).execute()
      const uri = `kb://me/${names.join('/')}/f`
      expect(uri.length).toBeLessThanOrEqual(4096)
      const result = await harness.service.enqueue({ caller: demo, params: { uris: [uri], channel: 'llm', modelId: 'local' } })
      expect(result.jobs).toEqual([])
      expect(result.refused).toEqual([
        { uri: `kb://users/demo/${names.join('/')}/f`, code: 'invalid_configuration', message: 'the URI of the source directory is 4098 characters, over 4096: move or rename it to compile its files' },
      ])
      const rows = await database.db.selectFrom('jobs').select('id').where('owner_id', '=', demo.id).where('uri', 'like', `%${names.at(-1)!}%`).execute()
      expect(rows).toEqual([])
    })
  })
})
