import { describe, expect, test } from 'vitest'
import { judgeRelevance, keywordWeights, readDocument } from './ranking.ts'
import { analyseQuestion } from './terms.ts'

const page = (name: string, text: string) => ({ text, offset: 0, atStart: true, atEnd: true, name })

/** The relevance of every passage of the documents to the question, by passage text. */
function judged(question: string, documents: ReadonlyArray<{ name: string; text: string }>) {
  const terms = analyseQuestion(question)
  const read = documents.map((d) => readDocument({ uri: `kb://users/demo/d/${d.name}`, page: page(d.name, d.text) }))
  const weights = keywordWeights({ documents: read, keywords: terms.keywords })
  return read.flatMap((document) => document.passages.map((passage, passageIndex) => ({ text: passage.text, ...judgeRelevance({ passageIndex, document, question: terms, weights }) })))
}

describe('judgeRelevance', () => {
  // The question asks for a measure (maximum size) of a thing (a file to parse): a passage about
  // parsing files that gives no figure, or a figure about something else, does not answer it.
  const DOCUMENTS = [
    { name: 'decisions.md', text: '# D1. Count page sizes in code points\n\nDecision: the read tool counts offsets and page limits in code points, with a default page of 3000 and a maximum of 6000.\n' },
    { name: 'guide.md', text: '# Compiling\n\n**L2 — parse.** Each raw file is parsed into text before it is summarised.\n' },
    { name: 'runbook.md', text: '# Uploads\n\nA file is too large to parse when it is over 50 MB raw.\n' },
  ]

  test('a question about the measure of a thing is answered only by a passage about that thing with a figure', () => {
    const results = judged('What is the maximum size of a file to parse?', DOCUMENTS)
    expect(results.filter((r) => r.relevant).map((r) => r.text)).toEqual(['A file is too large to parse when it is over 50 MB raw.'])
    expect(results.find((r) => r.text.includes('L2'))?.reason).toBe('the passage gives no figure')
    expect(results.find((r) => r.text.includes('6000'))?.reason).toMatch(/not about “file”/u)
  })

  test('a passage that does not name the measure gives a figure in its unit: "at most 6000 characters" is no size in bytes', () => {
    const results = judged('What is the maximum size of a file to read?', [
      { name: 'tools.md', text: "# Tools\n\nThe read tool returns one page of a file's text, at most 6000 characters.\n\nA file is too large to read when it is over 50 MB.\n" },
    ])
    expect(results.find((r) => r.text.includes('6000'))?.reason).toBe('the passage gives no “size” and no figure of one')
    expect(results.find((r) => r.text.includes('50 MB'))?.relevant).toBe(true)
  })

  test('other questions need no figure', () => {
    const results = judged('How are files parsed?', DOCUMENTS)
    expect(results.find((r) => r.text.includes('L2'))?.relevant).toBe(true)
  })
})

describe('judgeRelevance: the key terms of the question', () => {
  const PURCHASING = [
    { name: 'equipment.md', text: '# Equipment\n\nLaptop purchases need a receipt and the asset tag from the office team.\n\nMonitors are ordered through the office team.\n' },
  ]

  test('a near-topic passage that lacks two key terms is not an answer, even at half the coverage', () => {
    const [result] = judged('Who approves laptop purchases for contractors?', PURCHASING)
    expect(result).toMatchObject({ relevant: false, reason: 'the passage does not cover “contractors”' })
  })

  test('key terms match across word forms: approval meets approves, contractor meets contractors', () => {
    const [result] = judged('Who approves laptop purchases for contractors?', [
      { name: 'purchasing.md', text: '# Purchasing\n\nLaptop purchases for a contractor need the approval of the team lead.\n' },
    ])
    expect(result?.relevant).toBe(true)
  })

  test('a two-word question needs both words: "retention" is not answered by a passage about invoices alone', () => {
    const results = judged('What is the badge retention?', [
      { name: 'records.md', text: '# Records\n\nInvoices are retained for seven years.\n\nBadges are collected on the last day.\n' },
    ])
    expect(results.filter((r) => r.relevant)).toEqual([])
  })
})

describe('judgeRelevance: honesty on near-topic passages (issue 41)', () => {
  const ROADMAP = [
    { name: 'roadmap-2026.md', text: '# Roadmap 2026\n\n## Q2 (April – June)\n\n- Shared templates\n- Public API v2 with webhooks\n' },
    { name: '2026-01-13-planning.md', text: '# Q1 planning\n\nQ4 closed with 1,840 paying workspaces, up from 1,510 in Q3.\n' },
  ]

  test('a question of two keywords needs both, however common one of them is', () => {
    expect(judged('What is on the roadmap for Q4?', ROADMAP).filter((r) => r.relevant)).toEqual([])
  })

  test('"how much" is answered only by a passage with a number ("v2" is a name, not a figure)', () => {
    const results = judged('How much will webhooks in API v2 cost?', ROADMAP)
    expect(results.filter((r) => r.relevant)).toEqual([])
    expect(results.find((r) => r.text.includes('webhooks'))?.reason).toBe('the passage gives no “cost” and no figure of one')
  })

  test('the question\'s own verb may be missing: "What is planned for Q2?" is the Q2 list', () => {
    expect(judged('What is planned for Q2?', ROADMAP).filter((r) => r.relevant).map((r) => r.text)).toContain('Shared templates Public API v2 with webhooks')
  })

  const MEETING = [
    {
      name: '2026-02-10-ops-review.md',
      text: '# Monthly ops review — February 2026\n\n## Numbers\n\n- Uptime in January: 99.93 %.\n\n## Action items\n\n- Ana: move the export.\n- Tomasz: add a load test before the March review.\n',
    },
  ]

  test('a dated meeting note answers for its own month: the March review is not the February one', () => {
    expect(judged('What are the action items from the March ops review?', MEETING).filter((r) => r.relevant)).toEqual([])
    expect(judged('What are the action items from the February ops review?', MEETING).some((r) => r.relevant)).toBe(true)
    expect(judged('What was the uptime in January?', MEETING).some((r) => r.relevant)).toBe(true)
  })

  test('a two-word phrase needs both words: a "probation period" is not a "notice period"', () => {
    const results = judged('What is the notice period during probation?', [
      { name: 'faq.md', text: '# FAQ\n\nCan I take leave during my probation period? Yes, once your manager approves.\n' },
    ])
    expect(results.filter((r) => r.relevant)).toEqual([])
  })

  test('a name the question asks about must be in the passage, not only elsewhere in the file', () => {
    const results = judged('What is the first response time for Business customers?', [
      { name: 'sla.md', text: '# Service levels\n\nFirst response times are measured to the first reply by a person.\n\nBusiness customers also get chat support during office hours.\n' },
    ])
    expect(results.find((r) => r.text.startsWith('First response'))).toMatchObject({ relevant: false, reason: 'the passage does not mention “business”' })
  })
})

describe('judgeRelevance: another kind of the thing asked about (issue 41)', () => {
  const BENEFITS = [
    { name: 'benefits.md', text: '# Benefits\n\n## Health insurance\n\nThe company pays the health insurance premium. Coverage starts on the first day of employment.\n\n## Pension\n\nThe company matches pension contributions up to 6 % of the salary.\n' },
    { name: 'leave.md', text: '# Leave\n\nContractors follow their own agreement.\n\n## Bereavement leave\n\nUp to 5 paid days can be taken after the death of a parent.\n\n## Parental leave\n\nThe other parent gets 10 weeks at full pay.\n' },
  ]

  test('a word that qualifies a word the passage has, missing from it, names another thing: dental insurance is not health insurance', () => {
    const results = judged('When does the dental insurance start?', BENEFITS)
    expect(results.filter((r) => r.relevant)).toEqual([])
    expect(results.find((r) => r.text.startsWith('The company pays'))?.reason).toBe('the passage is not about “dental insurance”')
    expect(judged('When does the health insurance start?', BENEFITS).find((r) => r.text.startsWith('The company pays'))?.relevant).toBe(true)
  })

  test('nor is it met by a heading that names another kind ("Bereavement leave" for paternity leave)', () => {
    const results = judged('How many days of paternity leave can be taken?', BENEFITS)
    expect(results.find((r) => r.text.startsWith('Up to 5'))).toMatchObject({ relevant: false, reason: 'the passage is not about “paternity leave”' })
  })

  test('a phrase that narrows the question ("for contractors") is never the one key term a passage may lack', () => {
    const results = judged('What is the pension match for contractors?', BENEFITS)
    expect(results.filter((r) => r.relevant)).toEqual([])
    expect(judged('What is the pension match for employees?', [
      { name: 'pension.md', text: '# Pension\n\nThe company matches pension contributions of employees up to 6 % of the salary.\n' },
    ]).some((r) => r.relevant)).toBe(true)
  })
})

describe('judgeRelevance: the kind of answer the question asks for', () => {
  const FINANCE = [
    { name: 'payments.md', text: '# Payments\n\nIf an invoice is wrong, tell AP within 10 business days.\n\nThe payment run is on Tuesdays and Thursdays; suppliers are paid on the next run.\n' },
    { name: 'contacts.md', text: '# Contacts\n\nIncident response retainer: Blackline Forensics, contract number BF-2291.\n' },
    { name: 'backups.csv', text: 'environment,days kept\nstaging,7\nproduction,35\n' },
  ]

  test('"which days" is answered by a day, not by a passage that counts days', () => {
    const results = judged('Which days are suppliers paid?', FINANCE)
    expect(results.filter((r) => r.relevant).map((r) => r.text)).toEqual(['The payment run is on Tuesdays and Thursdays; suppliers are paid on the next run.'])
    expect(results.find((r) => r.text.startsWith('If an invoice'))?.reason).toBe('the passage gives no day')
  })

  test('"how much … cost" needs an amount of money: a contract number is none', () => {
    expect(judged('How much does Blackline Forensics charge for the retainer?', FINANCE).find((r) => r.text.includes('BF-2291'))?.reason).toBe('the passage gives no amount of money')
  })

  test('"how long" is answered by a row whose header gives the unit', () => {
    expect(judged('How long are staging backups kept?', FINANCE).find((r) => r.text.startsWith('staging'))?.relevant).toBe(true)
  })
})

describe('judgeRelevance: numbers of the question', () => {
  const PLAN = [
    { name: 'plan.md', text: '# Plan\n\n## 4. When commission is paid\n\n- Commission is paid at the end of the month after it was earned.\n- Statements are in Spiff by the 10th of each month.\n\n## 5. Clawbacks\n\nCommission is clawed back if the customer cancels within the first 6 months.\n' },
  ]

  test('a number the question gives is never the key term a passage may lack, and a section number is no figure', () => {
    const results = judged('What happens to my commission if the customer cancels in month 4?', PLAN)
    expect(results.filter((r) => r.relevant)).toEqual([])
    expect(results.find((r) => r.text.startsWith('Commission is clawed'))?.reason).toBe('the passage does not cover “4”')
  })
})

describe('judgeRelevance: who', () => {
  test('"who" is answered by a person or a role other than the question\'s own words', () => {
    const DISCOUNTS = [
      { name: 'discounts.md', text: '# Discounts\n\nNon-profits get 25% off without further approval.\n\nA 25% discount needs the approval of the VP Sales.\n\nThe approver of a 25% discount may extend it.\n' },
    ]
    const results = judged('Who has to approve a 25% discount?', DISCOUNTS)
    expect(results.filter((r) => r.relevant).map((r) => r.text)).toEqual(['A 25% discount needs the approval of the VP Sales.'])
    expect(results.find((r) => r.text.startsWith('Non-profits'))?.reason).toBe('the passage gives no person or role')
    expect(results.find((r) => r.text.startsWith('The approver'))?.reason).toBe('the passage gives no person or role')
  })
})

describe('judgeRelevance: a whole table', () => {
  const CONVENTIONS = [
    { name: 'conventions.md', text: '# Conventions\n\n## Language specifics\n\n| Language | Formatter | Notes |\n|---|---|---|\n| Kotlin | Spotless | |\n| Python | Ruff | Line length 100 |\n' },
  ]

  test('answers a question about the table, not one about a row (the row answers that) nor one whose words are spread over several rows', () => {
    expect(judged('What are the language specifics?', CONVENTIONS).find((r) => r.text.startsWith('| Kotlin | Spotless | | | Python'))?.relevant).toBe(true)
    const spread = judged('What line length does Spotless enforce for Kotlin?', CONVENTIONS)
    expect(spread.filter((r) => r.relevant)).toEqual([])
    expect(spread.find((r) => r.text.startsWith('| Kotlin | Spotless | | | Python'))?.reason).toBe('the question is about a row of the table, not the table')
    expect(judged('Which formatter does Python use?', CONVENTIONS).filter((r) => r.relevant).map((r) => r.text)).toEqual(['| Python | Ruff | Line length 100 |'])
  })
})

describe('judgeRelevance: causes and bare phrases', () => {
  const POSTMORTEM = [
    { name: 'checkout-timeouts-postmortem.md', text: '# Postmortem: checkout timeouts\n\n| | |\n|---|---|\n| Checkout timeouts commander | Marcus Lee |\n\n## Root cause\n\nThe checkout timeouts came after the new driver renamed max_conns to pool_max_size, so the pool fell back to 10 connections.\n\n## Conventions\n\nKeep a pull request under 400 changed lines.\n' },
  ]

  test('"what caused" is answered by a cause (or a passage under a heading that announces one), not by a row of facts', () => {
    const results = judged('What caused the checkout timeouts?', POSTMORTEM)
    expect(results.find((r) => r.text.includes('Marcus Lee'))?.reason).toBe('the passage gives no cause')
    expect(results.find((r) => r.text.includes('max_conns'))?.relevant).toBe(true)
  })

  test('a bare phrase "max size of X" asks about X', () => {
    expect(analyseQuestion('max size of a pull request').focus.map((k) => k.text)).toEqual(['pull', 'request'])
    expect(analyseQuestion('tolerance on the three-way match').focus).toEqual([])
    expect(judged('max size of a pull request', POSTMORTEM).find((r) => r.text.includes('pool_max_size'))?.relevant).toBe(false)
  })
})


describe('judgeRelevance: a passage about a neighbour of what the question asks', () => {
  test('the thing a "which" or "who" question identifies, named only in general, is not identified', () => {
    const travel = [{ name: 'device-policy.md', text: '# Device policy\n\n## Travel\n\nTravelling to a country on the high-risk list (kept by IT Security) requires a loaner laptop.\n' }]
    expect(judged('Which countries are on the high-risk travel list?', travel)[0]).toMatchObject({ relevant: false, reason: 'the passage names “countries” only in general, not which' })
    const owners = [{ name: 'access-review.md', text: '# Access reviews\n\nThe review covers Okta, Google Workspace and Salesforce. Each system has a system owner, listed in the access register.\n' }]
    expect(judged('Who is the system owner for Salesforce?', owners)[0]).toMatchObject({ relevant: false, reason: 'the passage names “owner” only in general, not which' })
    const named = [{ name: 'access-review.md', text: '# Access reviews\n\nThe system owner for Salesforce is Dana Whitfield, the Sales Operations lead.\n' }]
    expect(judged('Who is the system owner for Salesforce?', named)[0]?.relevant).toBe(true)
  })

  test('a passage that shares only the figure the question gives ("every 90 days") is about something else', () => {
    const policy = [{ name: 'password-policy.md', text: '# Password policy\n\n## Exceptions\n\nExceptions are granted in writing by the CISO, for at most 90 days at a time.\n' }]
    expect(judged('Do we have to change our passwords every 90 days?', policy)[0]).toMatchObject({ relevant: false, reason: 'the passage shares only the figure “90 days” with the question' })
    const rotation = [{ name: 'password-policy.md', text: '# Password policy\n\n## Rotation\n\nPasswords are changed every 90 days.\n' }]
    expect(judged('Do we have to change our passwords every 90 days?', rotation)[0]?.relevant).toBe(true)
  })

  test('a rule for another party (suppliers) does not answer a question about customers', () => {
    const payments = [{ name: 'invoices.md', text: '# Invoices and payments\n\nWhen a supplier offers an early payment discount of at least 2% for paying invoices within 10 days, we take it.\n' }]
    expect(judged('Do we give customers a discount if they pay their invoices early?', payments)[0]).toMatchObject({ relevant: false, reason: 'the passage is about another party (“supplier”), not “customers”' })
    const customers = [{ name: 'invoices.md', text: '# Invoices and payments\n\nCustomers who pay their invoices early, within 10 days, get a 2% discount.\n' }]
    expect(judged('Do we give customers a discount if they pay their invoices early?', customers)[0]?.relevant).toBe(true)
  })
})

describe('judgeRelevance: "which X" over a list, and a phrase of the question missing whole', () => {
  const PROCUREMENT = [
    {
      name: 'procurement-policy.md',
      text: '# Procurement policy\n\n## Before you buy\n\n- Check the preferred supplier list first. If a preferred supplier can deliver, use it.\n- Every purchase above 1,000 USD needs a purchase order.\n- Only people listed in the signature register may sign on behalf of the company.\n',
    },
  ]

  test('a whole list does not answer "which companies" from the words of different items, nor an item without "preferred supplier"', () => {
    const results = judged('Which companies are on the preferred supplier list?', PROCUREMENT)
    expect(results.find((r) => r.text.startsWith('Check') && r.text.includes('company'))?.reason).toBe('the list has the question’s words only across several items')
    expect(results.find((r) => r.text.startsWith('Only people'))?.reason).toBe('the passage is not about “preferred supplier”')
    expect(results.filter((r) => r.relevant)).toEqual([])
  })

  test('a list item that names the companies answers', () => {
    const results = judged('Which companies are on the preferred supplier list?', [
      { name: 'procurement-policy.md', text: '# Procurement policy\n\n## Suppliers\n\n- The preferred supplier list has three companies: Dell, Staples and Iron Mountain.\n- Every purchase above 1,000 USD needs a purchase order.\n' },
    ])
    expect(results.find((r) => r.text.startsWith('The preferred'))?.relevant).toBe(true)
  })
})

describe('judgeRelevance: "how many" asks for a count', () => {
  test('a date, a year or a time of day is no count', () => {
    const results = judged('How many engineers joined the platform team?', [
      { name: 'platform-team.md', text: '# Platform team\n\nThe new engineers joined the platform team on 14 March 2026, at 09:30.\n\nFour engineers joined the platform team this year.\n' },
    ])
    expect(results.find((r) => r.text.includes('14 March'))).toMatchObject({ relevant: false, reason: 'the passage gives no count (only dates or names with numbers)' })
    expect(results.find((r) => r.text.startsWith('Four'))?.relevant).toBe(true)
  })
})

describe('judgeRelevance: a figure said of another subject', () => {
  test('asked what the helpdesk costs, the price of the module beside it is no answer', () => {
    const faq = (second: string) => [{ name: 'competitor-faq.md', text: `# Competitor FAQ\n\n## Brightdesk\n\nBrightdesk bundles its knowledge module with its helpdesk. ${second}\n` }]
    expect(judged("How much does Brightdesk's helpdesk cost per agent?", faq('The module alone costs 18 USD per agent per month.'))[0]).toMatchObject({
      relevant: false,
      reason: 'the figure is said of another thing, not of “helpdesk”',
    })
    expect(judged("How much does Brightdesk's helpdesk cost per agent?", faq('The bundle costs 18 USD per agent per month.'))[0]?.relevant).toBe(false)
    expect(judged("How much does Brightdesk's helpdesk cost per agent?", faq('It costs 18 USD per agent per month.'))[0]?.relevant).toBe(true)
  })
})

describe('judgeRelevance: a period relative to now', () => {
  test('"this quarter" is answered by a dated passage, not by the standing rule', () => {
    const documents = [
      { name: 'commission-plan.md', text: '# Commission plan\n\n## SPIFs\n\nShort-term incentives (SPIFs) are announced by the VP Sales with their rules and end date, from the quarterly budget.\n' },
      { name: '2026-03-09-pipeline-review.md', text: '# Pipeline review\n\n## Decisions\n\nLaunch a Q1 SPIF: 1,000 USD for every new deal this quarter.\n' },
    ]
    const results = judged('Is there a SPIF running this quarter?', documents)
    expect(results.find((r) => r.text.startsWith('Short-term'))).toMatchObject({ relevant: false, reason: 'the question asks about a period relative to now, and the passage is not dated' })
    expect(results.find((r) => r.text.startsWith('Launch'))?.relevant).toBe(true)
    expect(judged('How are SPIFs announced?', documents).find((r) => r.text.startsWith('Short-term'))?.relevant).toBe(true)
  })
})
