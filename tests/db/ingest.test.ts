// The one ingest path (src/effects/workspace/ingest.ts) on real PostgreSQL: each outcome with the
// parse job that records it, a batch stored whole or not at all, an abort that stops the parse
// and writes nothing, the batch's folder followed or refused when it changed during the parse, and
// a compile's re-parse of a file stored without its text.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createUser } from '../../src/effects/auth/users.ts'
import { readCurrent } from '../../src/effects/workspace/file-contents.ts'
import { currentText, FolderGone, type IngestBatch, ingestFiles } from '../../src/effects/workspace/ingest.ts'
import { moveNode } from '../../src/effects/workspace/manage.ts'
import { moveToTrash } from '../../src/effects/workspace/trash.ts'
import { cancelled, failure, success, type ParseOutcome } from '../../src/effects/workspace/parse/parse-outcome.ts'
import type { DocumentParser, ParseRequest } from '../../src/effects/workspace/parse/document-parser.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { findNode, getNode, putFile } from '../../src/effects/workspace/store.ts'
import { InvalidUri } from '../../src/effects/workspace/workspace-errors.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

const encode = (text: string) => new TextEncoder().encode(text)
const UNSUPPORTED = 'unsupported file type (.bin); raw bytes kept'

/** `.bin` is not parseable, anything else is its own text; `script` answers first when it returns an outcome. */
function scriptedParser(script?: (request: ParseRequest) => Promise<ParseOutcome | undefined> | ParseOutcome | undefined): DocumentParser & { readonly calls: string[] } {
  const calls: string[] = []
  return {
    calls,
    parse: async (request) => {
      calls.push(request.name)
      const scripted = await script?.(request)
      if (scripted) return scripted
      if (request.name.endsWith('.bin')) return failure('application/octet-stream', 'unsupported', UNSUPPORTED)
      const bytes = request.bytes ?? readFileSync(request.path!)
      return success('text/markdown', 'text', new TextDecoder().decode(bytes))
    },
    onActivity: () => () => undefined,
    close: async () => undefined,
  }
}

describe('ingest: parse, then store in one transaction', () => {
  let database: TestDatabase
  let owner: Owner
  beforeAll(async () => {
    database = await openTestDatabase()
    owner = await createUser(database.db, { login: 'ingrid', password: 'correct horse', hashCost: TEST_PASSWORD_COST })
  })
  afterAll(async () => {
    await database?.close()
  })

  const ingest = (batch: Omit<IngestBatch, 'owner'>) => ingestFiles(database.db, { owner, ...batch })
  const parseJobs = async (uri: string) =>
    (await database.db.selectFrom('jobs').select(['status', 'error']).where('uri', '=', uri).where('kind', '=', 'parse').orderBy('created_at').orderBy('finished_at').execute()).map(
      (job) => (job.error === null ? job.status : `${job.status}: ${job.error}`),
    )
  const passages = async (uri: string) => {
    const node = await findNode(database.db, owner, uri.replace('kb://users/ingrid/', '').split('/'))
    const row = await database.db.selectFrom('search_passages').select((eb) => eb.fn.countAll().as('n')).where('node_id', '=', node!.id).executeTakeFirstOrThrow()
    return Number(row.n)
  }
  /** Everything the store holds for the owner, to compare before and after a batch that must leave no trace. */
  const storeState = async () => ({
    nodes: await database.db.selectFrom('nodes').select(['path', 'current_version_id']).where('owner_id', '=', owner.id).orderBy('path').execute(),
    versions: await database.db.selectFrom('file_versions').innerJoin('nodes', 'nodes.id', 'file_versions.node_id').select(['file_versions.id', 'file_versions.parse_status', 'file_versions.body']).where('nodes.owner_id', '=', owner.id).orderBy('file_versions.id').execute(),
    jobs: await database.db.selectFrom('jobs').select('id').where('owner_id', '=', owner.id).orderBy('id').execute(),
    passages: await database.db.selectFrom('search_passages').select(['version_id', 'start']).where('owner_id', '=', owner.id).orderBy('version_id').orderBy('start').execute(),
  })

  it('reports each outcome — added, updated, unchanged, stored without text and why — and records each parse', async () => {
    const parser = scriptedParser()
    const folder = { segments: ['outcomes'], create: true }
    const first = await ingest({ folder, parser, files: [{ name: 'a.md', bytes: encode('# A') }, { name: 'blob.bin', bytes: new Uint8Array([0, 1, 2]) }] })
    expect(first.folderUri).toBe('kb://users/ingrid/outcomes/')
    expect(first.files.map(({ node, outcome, withoutText }) => ({ uri: node.uri, outcome, withoutText }))).toEqual([
      { uri: 'kb://users/ingrid/outcomes/a.md', outcome: 'added', withoutText: undefined },
      { uri: 'kb://users/ingrid/outcomes/blob.bin', outcome: 'added', withoutText: UNSUPPORTED },
    ])
    expect(await readCurrent(database.db, owner, first.files[1]!.node)).toMatchObject({ body: null, parseStatus: 'failed', parseError: UNSUPPORTED })
    expect(await parseJobs('kb://users/ingrid/outcomes/a.md')).toEqual(['succeeded'])
    expect(await parseJobs('kb://users/ingrid/outcomes/blob.bin')).toEqual([`failed: ${UNSUPPORTED}`])

    const second = await ingest({ folder, parser, files: [{ name: 'a.md', bytes: encode('# A') }, { name: 'blob.bin', bytes: new Uint8Array([0, 1, 2]) }] })
    expect(second.files.map(({ outcome, withoutText }) => ({ outcome, withoutText }))).toEqual([
      { outcome: 'unchanged', withoutText: undefined },
      { outcome: 'unchanged', withoutText: UNSUPPORTED }, // still without its text: said again
    ])
    expect(await parseJobs('kb://users/ingrid/outcomes/a.md')).toEqual(['succeeded']) // the same bytes with their text: nothing written

    const third = await ingest({ folder, parser, files: [{ name: 'a.md', bytes: encode('# A, revised') }] })
    expect(third.files[0]).toMatchObject({ outcome: 'updated', withoutText: undefined })
    expect(await readCurrent(database.db, owner, third.files[0]!.node)).toMatchObject({ body: '# A, revised', versionNo: 2 })
    expect(await parseJobs('kb://users/ingrid/outcomes/a.md')).toEqual(['succeeded', 'succeeded'])
  })

  it('the same bytes stored without their text: a parse that now works saves the text onto that version', async () => {
    let failNext = true
    const parser = scriptedParser(() => (failNext ? ((failNext = false), failure('text/markdown', 'time_limit', 'time limit 30 s: parsing took longer')) : undefined))
    const folder = { segments: ['retry'], create: true }
    const first = await ingest({ folder, parser, files: [{ name: 'slow.md', bytes: encode('# Slow, but fine') }] })
    expect(first.files[0]).toMatchObject({ outcome: 'added', withoutText: 'time limit 30 s: parsing took longer' })
    expect(await passages('kb://users/ingrid/retry/slow.md')).toBe(0)

    const again = await ingest({ folder, parser, files: [{ name: 'slow.md', bytes: encode('# Slow, but fine') }] })
    expect(again.files[0]).toMatchObject({ outcome: 'unchanged', withoutText: undefined })
    expect(await readCurrent(database.db, owner, again.files[0]!.node)).toMatchObject({ body: '# Slow, but fine', versionNo: 1, parseStatus: 'parsed', parseError: null })
    expect(await passages('kb://users/ingrid/retry/slow.md')).toBeGreaterThan(0)
    expect(await parseJobs('kb://users/ingrid/retry/slow.md')).toEqual(['failed: time limit 30 s: parsing took longer', 'succeeded'])
  })

  it('a batch that fails midway leaves the store as it was: no file, no folder, no version, no job', async () => {
    await putText(database.db, { owner, segments: ['whole', 'keep.md'], text: 'kept' })
    const before = await storeState()
    const parser = scriptedParser()
    const refused = ingest({
      folder: { segments: ['whole', 'fresh'], create: true },
      parser,
      files: [{ name: 'one.md', bytes: encode('one') }, { name: 'two.bin', bytes: new Uint8Array([9]) }, { name: '..', bytes: encode('escape') }],
    })
    await expect(refused).rejects.toBeInstanceOf(InvalidUri)
    expect(parser.calls).toEqual(['one.md', 'two.bin', '..']) // all parsed; the store refused the third
    expect(await storeState()).toEqual(before)

    // An update of an existing file in a batch that fails is undone too.
    await expect(ingest({ folder: { segments: ['whole'], create: false }, parser, files: [{ name: 'keep.md', bytes: encode('changed') }, { name: '..', bytes: encode('x') }] })).rejects.toBeInstanceOf(InvalidUri)
    expect(await storeState()).toEqual(before)
  })

  it('a parse cancelled by the parser itself (shutting down) stores nothing, not a file without text', async () => {
    const before = await storeState()
    const parser = scriptedParser((request) => (request.name === 'late.md' ? cancelled('text/markdown', 'parsing was cancelled: the parser is shut down') : undefined))
    const refused = ingest({ folder: { segments: ['shutdown'], create: true }, parser, files: [{ name: 'early.md', bytes: encode('early') }, { name: 'late.md', bytes: encode('late') }] })
    await expect(refused).rejects.toThrow('late.md: parsing was cancelled: the parser is shut down; nothing was stored')
    expect(await storeState()).toEqual(before)
  })

  it('an abort stops the parse under way and writes nothing', async () => {
    const before = await storeState()
    const started = Promise.withResolvers<void>()
    let sawAbort = false
    const parser = scriptedParser((request) => {
      if (request.name !== 'slow.md') return undefined
      started.resolve()
      return new Promise<ParseOutcome>((resolve) =>
        request.signal!.addEventListener('abort', () => {
          sawAbort = true
          resolve(cancelled('text/markdown'))
        }),
      )
    })
    const controller = new AbortController()
    const reason = new Error('the client left')
    const batch = ingest({
      folder: { segments: ['aborted'], create: true },
      parser,
      signal: controller.signal,
      files: [{ name: 'quick.md', bytes: encode('quick') }, { name: 'slow.md', bytes: encode('slow') }, { name: 'never.md', bytes: encode('never') }],
    })
    await started.promise
    controller.abort(reason)
    await expect(batch).rejects.toBe(reason)
    expect(sawAbort).toBe(true)
    expect(parser.calls).toEqual(['quick.md', 'slow.md']) // the rest is never parsed
    expect(await storeState()).toEqual(before)
  })

  it('keeps parsed texts in the spool folder given, and stores files read from disk', async () => {
    const spool = mkdtempSync(join(tmpdir(), 'knowagent-ingest-spool-'))
    try {
      writeFileSync(join(spool, '0'), '# From disk')
      const { files } = await ingest({ folder: { segments: ['spooled'], create: true }, parser: scriptedParser(), spool, files: [{ name: 'disk.md', path: join(spool, '0') }] })
      expect(readdirSync(spool).sort()).toEqual(['0', '0.txt'])
      expect(await readCurrent(database.db, owner, files[0]!.node)).toMatchObject({ body: '# From disk', size: 11 })
    } finally {
      rmSync(spool, { recursive: true, force: true })
    }
  })

  it('follows the folder found before the parse when it moved meanwhile; refuses one deleted meanwhile unless asked to create it', async () => {
    const parser = scriptedParser()
    const found = await ingest({ folder: { segments: ['before'], create: true }, parser, files: [] }) // an empty batch makes the folder
    expect(found).toEqual({ folderUri: 'kb://users/ingrid/before/', files: [] })
    const folder = await getNode(database.db, owner, ['before'])
    await moveNode(database.db, { owner, node: folder, destination: await getNode(database.db, owner, []), name: 'after' })
    const moved = await ingest({ folder: { segments: ['before'], nodeId: folder.id, create: false }, parser, files: [{ name: 'n.md', bytes: encode('n') }] })
    expect(moved.folderUri).toBe('kb://users/ingrid/after/')
    expect(moved.files[0]!.node.uri).toBe('kb://users/ingrid/after/n.md')
    expect(await findNode(database.db, owner, ['before'])).toBeUndefined()

    await moveToTrash(database.db, { owner, node: await getNode(database.db, owner, ['after']) })
    const before = await storeState()
    const gone = ingest({ folder: { segments: ['after'], nodeId: folder.id, create: false }, parser, files: [{ name: 'late.md', bytes: encode('late') }] })
    await expect(gone).rejects.toBeInstanceOf(FolderGone)
    await expect(gone).rejects.toMatchObject({ code: 'not_found', status: 404, message: 'kb://users/ingrid/after/ was deleted while the upload was read; nothing was stored' })
    expect(await storeState()).toEqual(before)
    const remade = await ingest({ folder: { segments: ['after'], nodeId: folder.id, create: true }, parser, files: [{ name: 'late.md', bytes: encode('late') }] })
    expect(remade.files[0]).toMatchObject({ outcome: 'added', node: { uri: 'kb://users/ingrid/after/late.md' } })
  })

  describe('currentText: a file stored without its text is parsed again', () => {
    const stored = async (name: string, text: string, error: string) =>
      (await putFile(database.db, { owner, segments: ['again', name], bytes: encode(text), parsed: { ok: false, mime: 'text/markdown', error } })).node

    it('answers from the store when the text is there, without parsing', async () => {
      const { node } = await putText(database.db, { owner, segments: ['again', 'fine.md'], text: 'fine' })
      const parser = scriptedParser()
      expect(await currentText(database.db, { owner, node, parser })).toEqual({ _tag: 'Text', text: 'fine' })
      expect(parser.calls).toEqual([])
    })

    it('without a parser: the stored reason', async () => {
      const node = await stored('none.md', 'x', 'parser crashed (simulated)')
      expect(await currentText(database.db, { owner, node, parser: undefined })).toEqual({ _tag: 'WithoutText', reason: 'parser crashed (simulated)' })
    })

    it('a parse that works: the text, saved on the version with its search passages and a parse job', async () => {
      const node = await stored('works.md', '# Works now', 'parser crashed (simulated)')
      expect(await currentText(database.db, { owner, node, parser: scriptedParser() })).toEqual({ _tag: 'Text', text: '# Works now' })
      expect(await readCurrent(database.db, owner, node)).toMatchObject({ body: '# Works now', parseStatus: 'parsed', versionNo: 1 })
      expect(await passages(node.uri)).toBeGreaterThan(0)
      expect(await parseJobs(node.uri)).toEqual(['failed: parser crashed (simulated)', 'succeeded'])
    })

    it('a parse that fails again: the new reason, on the version and in a parse job', async () => {
      const node = await stored('still.bin', 'x', 'parser crashed (simulated)')
      expect(await currentText(database.db, { owner, node, parser: scriptedParser() })).toEqual({ _tag: 'WithoutText', reason: UNSUPPORTED })
      expect(await readCurrent(database.db, owner, node)).toMatchObject({ body: null, parseStatus: 'failed', parseError: UNSUPPORTED })
      expect(await parseJobs(node.uri)).toEqual(['failed: parser crashed (simulated)', `failed: ${UNSUPPORTED}`])
    })

    it('a version replaced while it was parsed is left as it was', async () => {
      const node = await stored('raced.md', 'old bytes', 'parser crashed (simulated)')
      const parser = scriptedParser(async () => {
        await putText(database.db, { owner, segments: ['again', 'raced.md'], text: 'new bytes' })
        return undefined
      })
      expect(await currentText(database.db, { owner, node, parser })).toEqual({ _tag: 'Text', text: 'old bytes' })
      expect(await readCurrent(database.db, owner, node)).toMatchObject({ body: 'new bytes', versionNo: 2 })
      const old = await database.db.selectFrom('file_versions').select(['parse_status', 'body']).where('node_id', '=', node.id).where('version_no', '=', 1).executeTakeFirstOrThrow()
      expect(old).toEqual({ parse_status: 'failed', body: null })
      expect(await parseJobs(node.uri)).toEqual(['failed: parser crashed (simulated)', 'succeeded']) // the new version's own
    })
  })
})
