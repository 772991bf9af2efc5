// Issue 41's quoted failures, as tests over the evaluation's team corpora (tests/fixtures/eval-corpus/:
// meeting notes, a people-policy set, a support runbook with a price list), each question through the
// real turn (turn machine, real tools, real PostgreSQL) with the built-in local model. Before the
// fixes: the action items of the February ops meeting got "nothing covers it", a price came as a bare
// CSV row, a folder summary quoted unrelated passages, a policy the files do not hold was answered
// with a near-topic passage, and a question in another form of the document's words found nothing.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeLocalChatModel } from '../../src/effects/llm/local/index.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { makeToolRegistry } from '../../src/effects/tools/tool-registry.ts'
import { WORKSPACE_TOOLS } from '../../src/effects/tools/workspace-tools.ts'
import { runTurn } from '../../src/effects/turn/run-turn.ts'
import { isQuoteRead, loadEvalCorpora, parseCitations, readPagesOf } from '../eval/local-model/evaluate.ts'
import { openTestDatabase, type TestDatabase } from '../support/test-database.ts'

const TEAM = 'kb://users/demo/product-team/'
const PEOPLE = 'kb://users/demo/people/'
const SUPPORT = 'kb://users/demo/support/'

describe('the local model over a team\'s own files (issue 41)', () => {
  const tools = makeToolRegistry(WORKSPACE_TOOLS)
  const model = makeLocalChatModel({ deltaDelayMs: 0 })
  let database: TestDatabase
  let demo: Owner
  beforeAll(async () => {
    database = await openTestDatabase()
    demo = await loadEvalCorpora(database.db)
  }, 60_000)
  afterAll(async () => {
    await database?.close()
  })

  /** The answer of one turn, its citations, and whether each quote is text read in the turn. */
  const ask = async (uri: string, question: string) => {
    const output = await runTurn({
      db: database.db, caller: demo, tools, model, turnId: randomUUID(), uri, question, history: [],
      onEvent: () => {}, signal: new AbortController().signal,
    })
    expect(output.status).toBe('done')
    const final = output.messages.findLast((m) => m.role === 'assistant' && (m.tool_calls ?? []).length === 0)
    const answer = final?.role === 'assistant' ? (final.content ?? '') : ''
    const citations = parseCitations(answer)
    const pages = readPagesOf(output.messages)
    for (const citation of citations) expect(isQuoteRead(citation, pages), `${citation.uri} @${citation.offset} was read`).toBe(true)
    return { answer, citations }
  }

  it('quotes the whole "## Action items" list of the February ops meeting, each item with its owner and date', async () => {
    const { answer, citations } = await ask(TEAM, 'What are the action items from the February ops meeting?')
    const note = `${TEAM}meetings/2026-02-10-ops-review.md`
    expect(citations[0]?.uri, answer).toBe(note)
    for (const item of [
      "- Ana: add the identity provider's certificate to the expiry monitor by 14 February.",
      '- Ana: move the nightly export job to 04:00 UTC.',
      '- Leo: publish the status page post-mortem for the login outage by 13 February.',
      '- Tomasz: add a load test for search during the export window before the March review.',
    ]) expect(answer).toContain(`> ${item}`)
  })

  it('answers a price question with the CSV row under its header, the column names above the values', async () => {
    const { answer, citations } = await ask(SUPPORT, 'How much does the Team plan cost per month?')
    expect(citations.map((c) => c.uri)).toContain(`${SUPPORT}price-list.csv`)
    const header = answer.indexOf('> sku,plan,billing,price_eur_per_seat,seats_included,storage_gb')
    const row = answer.indexOf('> PF-TEAM-M,Team,monthly,8,3,100')
    expect(header, answer).toBeGreaterThanOrEqual(0)
    expect(row, answer).toBeGreaterThan(header)
  })

  it('summarises what the files of a folder are about: one line per file from its title and opening, labelled as such', async () => {
    const { answer, citations } = await ask(`${TEAM}meetings/`, 'Summarise what these files are about.')
    expect(answer).toContain("here is each file's title and opening")
    for (const title of ['Q1 planning — 13 January 2026', 'Monthly ops review — February 2026', 'Pricing workshop — 4 March 2026']) expect(answer).toContain(title)
    // Every quote is from the folder's own files, none from elsewhere (compaction, samples).
    expect(citations.length).toBeGreaterThanOrEqual(3)
    for (const citation of citations) expect(citation.uri.startsWith(`${TEAM}meetings/`), citation.uri).toBe(true)
  })

  it.each([
    [PEOPLE, 'What is the sabbatical policy?', 'sabbatical'],
    [PEOPLE, 'When are annual bonuses paid?', 'bonuses'],
    [TEAM, 'What are the action items from the March ops review?', 'march'],
    [SUPPORT, 'Is there a volume discount for more than 100 seats?', 'discount'],
  ])('in %s, “%s” — which nothing covers — is answered honestly, with what was searched and no quote', async (uri, question, searched) => {
    const { answer, citations } = await ask(uri, question)
    expect(citations, answer).toEqual([])
    expect(answer).toMatch(new RegExp(`^Nothing in ${uri.replace(/[/.]/gu, '\\$&')} covers “`, 'u'))
    expect(answer).toContain(`“${searched}”`)
  })

  it.each([
    // retain (question) / kept for, retention (document): the table row quoted with its header
    [PEOPLE, 'How long do we retain payroll records?', 'records-retention.md', /Payroll and tax records \| 10 years after the end of the tax year/u],
    // renewed / renewal
    [SUPPORT, 'Can a customer on an annual plan get a refund after it renewed?', 'runbooks/refund-request.md', /within 30 days of the renewal/u],
    // approve / approval
    [PEOPLE, 'Who has to approve unpaid leave?', 'leave-policy.md', /approval of your manager and of HR/u],
    // monthly / month, a CSV column named in other words
    [PEOPLE, 'What is the monthly internet allowance in Portugal?', 'allowances.csv', /Portugal,600,30,9\.60/u],
  ])('in %s, “%s” — in other forms of the document\'s words — is answered from %s', async (uri, question, file, fact) => {
    const { answer, citations } = await ask(uri, question)
    expect(citations.map((c) => c.uri), answer).toContain(`${uri}${file}`)
    expect(citations.filter((c) => c.uri === `${uri}${file}`).map((c) => c.quote).join(' ')).toMatch(fact)
  })
})
