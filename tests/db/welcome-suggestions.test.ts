// Issue 33, item 11: every question the chat's welcome suggests with the built-in local model gets a
// real answer. The sample corpus is imported for `demo` as on a first start; in each of its folders
// (the demo root above it, and a new empty folder) each suggestion is asked through the real turn,
// in that folder's scope, and must quote and cite a file read in the turn, never "Nothing in …
// covers". An empty folder suggested "What can you do in this workspace?" and "How do I add files
// for you to read?", and its parent "What is in new-folder/?", which the local model could only
// answer with "Nothing in … covers". Issue 41: a new user's corpus got chips that led to "Nothing
// covers" answers, so the evaluation's team corpora (meeting notes, policies, a runbook with a price
// list; tests/fixtures/eval-corpus/) are asked their suggestions too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { findUserByLogin } from '../../src/effects/auth/users.ts'
import { makeLocalChatModel } from '../../src/effects/llm/local/index.ts'
import { runTurn } from '../../src/effects/turn/run-turn.ts'
import { resolveNode } from '../../src/effects/workspace/resolve.ts'
import { listChildren } from '../../src/effects/workspace/folder-listing.ts'
import { createDirectory } from '../../src/effects/workspace/manage.ts'
import { makeToolRegistry } from '../../src/effects/tools/tool-registry.ts'
import { WORKSPACE_TOOLS } from '../../src/effects/tools/workspace-tools.ts'
import { exampleQuestions } from '../../views/partials/welcome.tsx'
import { welcomeEntries } from '../../src/http/workspace-listing.ts'
import { openTestDatabase, type TestDatabase } from '../support/test-database.ts'
import { isQuoteRead, loadEvalCorpora, parseCitations, readPagesOf } from '../eval/local-model/evaluate.ts'

const FOLDERS = [
  'kb://users/demo/',
  'kb://users/demo/samples/',
  'kb://users/demo/samples/guides/',
  'kb://users/demo/samples/notes/',
  'kb://users/demo/samples/data/',
  'kb://users/demo/new-folder/',
  'kb://users/demo/product-team/',
  'kb://users/demo/product-team/meetings/',
  'kb://users/demo/people/',
  'kb://users/demo/support/',
  'kb://users/demo/support/runbooks/',
]

describe('the welcome suggestions with the local model over the sample corpus', () => {
  const tools = makeToolRegistry(WORKSPACE_TOOLS)
  const model = makeLocalChatModel({ deltaDelayMs: 0 })
  let database: TestDatabase
  beforeAll(async () => {
    database = await openTestDatabase()
    // The sample corpus as on a first start, and the team corpora (it throws if a file fails to load).
    const owner = await loadEvalCorpora(database.db)
    const { node: root } = await resolveNode(database.db, { caller: owner, uri: 'kb://users/demo/' })
    await createDirectory(database.db, { owner, parent: root, name: 'new-folder' })
  }, 60_000)
  afterAll(async () => {
    await database?.close()
  })

  /** The suggestions the welcome shows in a folder, from its real entries, as the chat lists them. */
  const suggestionsIn = async (uri: string) => {
    const demo = (await findUserByLogin(database.db, 'demo'))!
    const { node } = await resolveNode(database.db, { caller: demo, uri })
    const { entries } = await listChildren(database.db, { owner: demo, parent: node, offset: 0, limit: 500 })
    return exampleQuestions(await welcomeEntries(database.db, demo, node, entries))
  }

  it.each(FOLDERS)('in %s, each suggestion is answered with a quote of a file it read', { timeout: 60_000 }, async (uri) => {
    const demo = (await findUserByLogin(database.db, 'demo'))!
    const questions = await suggestionsIn(uri)
    if (!uri.endsWith('new-folder/')) expect(questions.length).toBeGreaterThan(0)
    for (const question of questions) {
      const output = await runTurn({
        db: database.db, caller: demo, tools, model, turnId: randomUUID(), uri, question, history: [],
        onEvent: () => {}, signal: new AbortController().signal,
      })
      expect(output.status, question).toBe('done')
      const final = output.messages.findLast((m) => m.role === 'assistant' && (m.tool_calls ?? []).length === 0)
      const answer = final?.role === 'assistant' ? (final.content ?? '') : ''
      expect(answer, `“${question}” in ${uri}`).not.toMatch(/^Nothing in |covers “|no file to read|scope is empty/u)
      const citations = parseCitations(answer)
      expect(citations.length, `“${question}” in ${uri} cites a file:\n${answer}`).toBeGreaterThan(0)
      const pages = readPagesOf(output.messages)
      for (const citation of citations) expect(isQuoteRead(citation, pages), `${citation.uri} @${citation.offset} was read`).toBe(true)
      // A suggestion about one file is answered from that file.
      const named = /(?:key points of|^Summarise) ([^\s/]+\.\w+)[?.]$/u.exec(question)?.[1]
      if (named !== undefined) expect(citations.map((c) => c.uri), `“${question}” quotes ${named}`).toContain(`${uri}${named}`)
      const corpus = uri === 'kb://users/demo/' ? 'kb://users/demo/' : uri
      expect(citations[0]!.uri.startsWith(corpus) && !citations[0]!.uri.endsWith('/'), `${citations[0]!.uri} is a file under ${corpus}`).toBe(true)
    }
  })
})
