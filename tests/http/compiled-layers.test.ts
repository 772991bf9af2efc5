// Issue 35 over HTTP, on the real app with a compile worker (the local extractive engine): the
// delete dialog says what a delete does to compiled pages, and the delete does it; the preview of
// a generated page says what it is and, when its sources changed, that it is out of date, what
// changed and how to compile again; the task center links each page a job produced where it is
// now (or says it was deleted) and gives each skipped file's reason. Broke before: the dialog
// said nothing of summaries while the deleted file's text lived on in one, the preview did not
// mark a stale page, and a succeeded job had no way to open what it produced.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findCompileJob, type CompileJobView } from '../../src/effects/compile/compile-jobs-store.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

const API = '/api/v1/knowledge-agent'
const DOCS = 'kb://users/alice/docs/'

describe('compiled layers when their sources change, over HTTP', () => {
  let server: TestServer
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  let session: { cookie: string; csrf: string }
  let docsJob: string

  const page = (path: string, init: RequestInit = {}) =>
    fetch(`${server.url}${path}`, { ...init, headers: { cookie: session.cookie, 'x-csrf-token': session.csrf, 'hx-request': 'true', ...(init.headers ?? {}) } })
  const html = async (path: string) => {
    const response = await page(path)
    expect(response.status, path).toBe(200)
    return response.text()
  }
  const post = (action: string, fields: Record<string, string>) =>
    page(`/workspace/files/${action}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields) })
  const preview = (uri: string) => html(`/workspace/content?uri=${encodeURIComponent(uri)}`)
  const href = (uri: string) => `href="/workspace?uri=${encodeURIComponent(uri)}"`

  /** Queues a compile through the API and waits (on the job's notifications) until it ends. */
  async function compile(body: Record<string, unknown>): Promise<CompileJobView> {
    const response = await fetch(`${server.url}${API}/compile`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'llm', model_id: 'local', ...body }),
    })
    const { jobs } = (await response.json()) as { jobs: Array<{ id: string }> }
    const id = jobs[0]!.id
    const events = server.compile!.feature.events
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => (unsubscribe(), reject(new Error(`job ${id} did not end`))), 30_000)
      const check = async () => {
        const job = (await findCompileJob(server.database.db, { id }))?.view
        if (job && ['succeeded', 'failed', 'cancelled'].includes(job.status)) {
          clearTimeout(timer)
          unsubscribe()
          resolve(job)
        }
      }
      const unsubscribe = events.subscribe((event) => {
        if (event.type === 'resync' || event.jobId === id) void check()
      })
      void check()
    })
  }

  beforeAll(async () => {
    server = await startTestServer({ compile: { worker: true } })
    alice = await addUserWithToken(server, 'alice')
    session = await signIn(server, 'alice', alice.password)
    const put = (path: string, text: string) => putText(server.database.db, { owner: alice.user, segments: path.split('/'), text })
    await put('docs/a.md', '# Alpha\n\nThe heron nests by the river. Herons eat fish.')
    await put('docs/b.md', '# Bravo\n\nThe queue retries failed jobs three times.')
    await put('docs/c.md', '# Charlie\n\nWorkers send heartbeats every ten seconds.')
    await put('docs/empty.md', '')
    await put('src/x.md', '# X\n\nThe x file speaks of lanterns.')
    await put('src/y.md', '# Y\n\nThe y file speaks of ropes.')
    await put('wiki/readme.md', '# Wiki\n\nWhere src/ is compiled.')
    const docs = await compile({ uris: ['a.md', 'b.md', 'c.md', 'empty.md'].map((name) => `${DOCS}${name}`) })
    expect(docs.status, JSON.stringify(docs)).toBe('succeeded')
    docsJob = docs.id
    const src = await compile({ uris: ['kb://me/src/x.md', 'kb://me/src/y.md'], artifact_parent_uri: 'kb://me/wiki/' })
    expect(src.status, JSON.stringify(src)).toBe('succeeded')
  }, 120_000)
  afterAll(async () => {
    await server?.close()
  })

  it('a fresh summary says what it summarises and that it is up to date', async () => {
    const shown = await preview(`${DOCS}summaries/b.md`)
    expect(shown).toContain('data-generated="summary" data-stale="false"')
    expect(shown).toMatch(/Summary of <a [^>]*href="\/workspace\?uri=kb%3A%2F%2Fusers%2Falice%2Fdocs%2Fb\.md"[^>]*>b\.md<\/a>, written by a compile job on /)
    expect(shown).toContain('Up to date with its sources.')
    expect(await preview(`${DOCS}b.md`)).not.toContain('layer-mark') // a person's own file
  })

  it('the delete dialog says what happens to the generated pages, and the delete does it', async () => {
    const fileForm = await html(`/workspace/files/delete?uri=${encodeURIComponent(`${DOCS}a.md`)}`)
    expect(fileForm).toContain(`Its summary, ${DOCS}summaries/a.md, goes to the Trash with it; the overview of ${DOCS} will be marked out of date, and may quote the file until it is compiled again.`)
    expect(fileForm).toContain('It goes to the Trash for 30 days, with every version and its summary. Until then you can restore it from')
    expect(fileForm).not.toContain('cannot be undone')
    const folderForm = await html(`/workspace/files/delete?uri=${encodeURIComponent('kb://me/src/')}`)
    expect(folderForm).toContain('The 2 summaries of these files kept outside this folder go to the Trash with them; the overview of kb://users/alice/wiki/ will be marked out of date, and may quote these files until it is compiled again.')
    expect(folderForm).toContain('It goes to the Trash for 30 days, with every version of these files and the pages compiled in the folder (summaries, overview, abstract).')
    await putText(server.database.db, { owner: alice.user, segments: ['docs', 'later.md'], text: 'Never compiled.' })
    expect(await html(`/workspace/files/delete?uri=${encodeURIComponent(`${DOCS}later.md`)}`)).not.toContain('delete-generated')

    const heron = async () => ((await (await fetch(`${server.url}/api/v1/workspace/search?q=heron`, { headers: { authorization: `Bearer ${alice.token}` } })).json()) as { hits: Array<{ uri: string }> }).hits.map((hit) => hit.uri)
    expect(await heron()).toContain(`${DOCS}a.md`) // one result per source: the file's own hit stands for its summary's
    expect((await page(`/workspace/content?uri=${encodeURIComponent(`${DOCS}summaries/a.md`)}`)).status).toBe(200)
    const deleted = await post('delete', { uri: `${DOCS}a.md` })
    expect(deleted.status).toBe(200)
    expect(await deleted.text()).toContain('Moved the file a.md and its summary to the Trash, until ')
    // the summary is gone; the overview and abstract may quote the file until the folder is compiled again (the dialog says so)
    const after = await heron()
    expect(after).not.toContain(`${DOCS}summaries/a.md`)
    expect(after.every((uri) => /\/docs\/\.(overview|abstract)\.md$/.test(uri)), after.join()).toBe(true)
    expect((await page(`/workspace/content?uri=${encodeURIComponent(`${DOCS}summaries/a.md`)}`)).status).toBe(404)

    const folderDeleted = await post('delete', { uri: 'kb://me/src/' })
    expect(await folderDeleted.text()).toContain('Moved the folder src (2 files), and 2 summaries of its files kept elsewhere, to the Trash, until ')
    expect((await page(`/workspace/content?uri=${encodeURIComponent('kb://me/wiki/summaries/x.md')}`)).status).toBe(404)
  })

  it('a renamed source: its summary follows (fresh); the overview and abstract are marked out of date, with what changed and a way to compile again', async () => {
    const renamed = await post('rename', { uri: `${DOCS}b.md`, name: 'bravo.md' })
    expect(renamed.status).toBe(200)
    const summary = await preview(`${DOCS}summaries/bravo.md`)
    expect(summary).toContain('data-stale="false"')
    expect(summary).toContain(`Source: <a`) // the rendered page cites the new URI
    expect(summary).toContain(`${DOCS}bravo.md`)
    expect(summary).not.toContain(`${DOCS}b.md`)

    const overview = await preview(`${DOCS}.overview.md`)
    expect(overview).toContain('data-generated="overview" data-stale="true"')
    expect(overview).toMatch(/Overview \(L1\) of <a [^>]*>docs\/<\/a>/)
    expect(overview).toContain('<strong>Out of date:</strong>')
    expect(overview).toContain(`<li>deleted: ${DOCS}a.md</li>`)
    expect(overview).toContain(`<li>moved: ${DOCS}b.md → ${DOCS}bravo.md</li>`)
    expect(overview).toContain(`data-open-compile="true" data-compile-uri="${DOCS}"`)
    expect(await preview(`${DOCS}.abstract.md`)).toContain('data-generated="abstract" data-stale="true"')
  })

  it('a new version of a source marks its summary out of date, with a way to compile its folder again', async () => {
    await putText(server.database.db, { owner: alice.user, segments: ['docs', 'c.md'], text: '# Charlie\n\nWorkers now send heartbeats every five seconds.' })
    const summary = await preview(`${DOCS}summaries/c.md`)
    expect(summary).toContain('data-generated="summary" data-stale="true"')
    expect(summary).toContain(`<li>changed: ${DOCS}c.md</li>`)
    expect(summary).toContain(`data-compile-uri="${DOCS}"`)
  })

  it('the task center links each page the job produced where it is now, says which were deleted, and gives skipped files their reason', async () => {
    const tasks = await html('/tasks')
    const row = tasks.slice(tasks.indexOf(`id="job-${docsJob}"`), tasks.indexOf('</tr>', tasks.indexOf(`id="job-${docsJob}"`)))
    expect(row).toContain(`<li data-kind="overview" data-state="here"><a ${href(`${DOCS}.overview.md`)}`)
    expect(row).toContain(`<li data-kind="abstract" data-state="here"><a ${href(`${DOCS}.abstract.md`)}`)
    expect(row).toContain(`<li data-kind="summary" data-state="moved"><a ${href(`${DOCS}summaries/bravo.md`)} title="${DOCS}summaries/bravo.md">summary bravo.md</a><span class="muted"> (renamed from b.md)</span>`)
    expect(row).toContain(`<li data-kind="summary" data-state="deleted" title="${DOCS}summaries/a.md"><span class="muted">summary a.md: deleted</span>`)
    expect(row).toContain(`<li data-kind="summary" data-state="here"><a ${href(`${DOCS}summaries/c.md`)}`)
    expect(row).toMatch(/<li data-uri="kb:\/\/users\/alice\/docs\/empty\.md"><span [^>]*>empty\.md<\/span> — the (file has no content|parsed body is empty)<\/li>/)

    const job = (await (await fetch(`${server.url}${API}/jobs/${docsJob}`, { headers: { authorization: `Bearer ${alice.token}` } })).json()) as { job: CompileJobView }
    expect(job.job.produced).toEqual(
      expect.arrayContaining([
        { kind: 'summary', published: `${DOCS}summaries/a.md`, uri: null },
        { kind: 'summary', published: `${DOCS}summaries/b.md`, uri: `${DOCS}summaries/bravo.md` },
        { kind: 'overview', published: `${DOCS}.overview.md`, uri: `${DOCS}.overview.md` },
      ]),
    )
  })
})
