import { describe, expect, test } from 'vitest'
import { analyseQuestion, answerCue, extractKeywords, fileNameTerms, keywordTermsMatch, matchTerms, MAX_QUERY_KEYWORDS, pairTerms, stem } from './terms.ts'

const texts = (question: string) => extractKeywords(question).map((k) => k.text)

describe('extractKeywords', () => {
  test.each([
    ['How does the wiki compiler publish the overview?', ['wiki', 'compiler', 'publish', 'overview']],
    ["What's the API for kb_search in v2.1?", ['api', 'kb_search', 'v2.1']],
    ['Tell me about it, please.', []],
    ['What happened in the March 2026 incident?', ['march', '2026', 'incident']],
    ['ＦＵＬＬＷＩＤＴＨ text', ['fullwidth', 'text']],
    ['a b c 7', ['7']],
  ])('%j → %j', (question, keywords) => {
    expect(texts(question)).toEqual(keywords)
  })

  test.each([
    ['编译任务会生成什么？', ['编译', '任务', '生成']],
    ['每轮最多可以调用多少次工具？', ['每轮', '最多', '调用', '工具']],
    ['深圳办公室的停车费是多少？', ['深圳', '办公', '停车']],
  ])('Chinese through Intl.Segmenter: %j → %j (stop-words dropped, single characters joined up)', (question, keywords) => {
    expect(texts(question)).toEqual(keywords)
  })

  test('a mixed CJK and Latin question keeps both', () => {
    expect(texts('局域网页面里的消息 ID 怎么生成？')).toEqual(expect.arrayContaining(['消息', 'id', '生成']))
  })

  test('names: capitalised inside the question, acronyms, file names', () => {
    const proper = (question: string) => extractKeywords(question).filter((k) => k.proper).map((k) => k.text)
    expect(proper('What is the Wi-Fi password at the Berlin office?')).toEqual(['wi-fi', 'berlin'])
    expect(proper('How do I configure single sign-on with SAML?')).toEqual(['saml'])
    expect(proper('What are the key points of README.md?')).toEqual(['readme.md'])
    expect(proper('Where is the office?')).toEqual([])
  })

  test('duplicates are dropped and at most MAX_QUERY_KEYWORDS are kept', () => {
    const keywords = texts('alpha beta alpha gamma delta epsilon zeta eta theta iota kappa lambda')
    expect(keywords).toHaveLength(MAX_QUERY_KEYWORDS)
    expect(keywords.slice(0, 3)).toEqual(['alpha', 'beta', 'gamma'])
  })
})

describe('analyseQuestion', () => {
  const focus = (question: string) => analyseQuestion(question).focus.map((k) => k.text)

  test.each([
    ['What is the parental leave policy?', ['parental', 'leave']],
    ['What is the dress code at the office?', ['dress', 'code']],
    ['How many stock options do new engineers receive?', ['stock', 'options']],
    ['How much is the mileage allowance?', ['mileage']],
    ['How is the input limit computed?', ['input']],
    ['What is the budget for team dinners?', []],
    ['How do I book a company car?', ['book', 'company', 'car']],
    ['What is the maximum size of a file to parse?', ['file']],
    ['What is the default level of the ranking?', ['ranking']],
    ['值班补贴是多少？', ['值班', '补贴']],
    ['年假有多少天？', []],
    ['Which class may I book for a nine-hour flight?', ['class']],
    ['When is the next team hackathon?', ['next', 'team', 'hackathon']],
    ['深圳办公室的停车费是多少？', ['停车']],
    ['新员工的试用期多长？', ['试用']],
  ])('the phrase %j asks about: %j', (question, expected) => {
    expect(focus(question)).toEqual(expected)
  })

  test.each(['What should I do when the data directory is in use?', 'Why does the server never fall back to another model?', '上下文压缩时保留哪些信息？'])(
    'no phrase to focus on in %j',
    (question) => {
      expect(focus(question)).toEqual([])
    },
  )

  test('"How do I …" asks for an action on a thing: both must be there', () => {
    expect(analyseQuestion('How do I install knowagent on Windows?')).toMatchObject({ focusIsAction: true })
    expect(analyseQuestion('What is the dress code?')).toMatchObject({ focusIsAction: false })
  })

  test('a measure of a thing ("the maximum size of a file") asks for a figure; the thing itself does not', () => {
    expect(analyseQuestion('What is the maximum size of a file to parse?').asksForMeasure).toBe(true)
    expect(analyseQuestion('How many files may a job compile?').asksForMeasure).toBe(false)
    expect(analyseQuestion('What is the history of the project?').asksForMeasure).toBe(false)
    expect(analyseQuestion('What is the parental leave policy?').asksForMeasure).toBe(false)
  })

  test('"how many / much / long / often" asks for a number', () => {
    expect(analyseQuestion('How much will webhooks in API v2 cost?').wantsFigure).toBe(true)
    expect(analyseQuestion('多少天年假？').wantsFigure).toBe(true)
    expect(analyseQuestion('Who approves refunds?').wantsFigure).toBe(false)
  })

  test('the question\'s own verb after "what is" is known, and the phrase after it is what it asks about', () => {
    expect(analyseQuestion('What is planned for Q2?')).toMatchObject({ frameVerb: 'planned', focus: [{ text: 'q2' }] })
    expect(analyseQuestion('What was decided in the design review?')).toMatchObject({ frameVerb: 'decided' })
    expect(focus('What was decided in the design review?')).toEqual(['design', 'review'])
    expect(analyseQuestion('What is the planned date?').frameVerb).toBeUndefined()
  })

  test('a month that dates the subject: "the March ops review", not "the uptime in January"', () => {
    expect(analyseQuestion('What are the action items from the March ops review?').datedSubject).toEqual({ month: 'march', subject: ['ops', 'review'] })
    expect(analyseQuestion('What happened in the March 2026 incident?').datedSubject).toEqual({ month: 'march', subject: ['incid'] })
    expect(analyseQuestion('What was the uptime in January?').datedSubject).toBeUndefined()
  })

  test('"Which files mention X?" looks for X, not for files that mention', () => {
    expect(analyseQuestion('Which files mention the nightly export?').keywords.map((k) => k.text)).toEqual(['nightly', 'export'])
  })

  test('"the list of …" asks for the things listed, and no figure', () => {
    expect(analyseQuestion('Where is the list of all support macros?')).toMatchObject({ asksForMeasure: false })
    expect(focus('Where is the list of all support macros?')).toEqual(['support', 'macros'])
    expect(focus('When are annual bonuses paid?')).toEqual(['annual', 'bonuses'])
  })

  test('a request for key points or a summary is recognised', () => {
    expect(analyseQuestion('What are the key points of README.md?').wantsSummary).toBe(true)
    expect(analyseQuestion('总结一下这份笔记').wantsSummary).toBe(true)
    expect(analyseQuestion('What is the hotel cap?').wantsSummary).toBe(false)
  })
})

describe('matchTerms', () => {
  test('inflected forms meet (compile / compiled / compiling)', () => {
    expect(matchTerms('compiled')).toEqual(matchTerms('compiling'))
  })

  test('dotted and hyphenated tokens also match by their parts', () => {
    expect(matchTerms('cats.md')).toEqual(['cats.md', 'cat', 'md'])
    expect(matchTerms('wi-fi')).toEqual(['wi-fi', 'wifi', 'wi', 'fi'])
  })

  test('CJK text is matched by overlapping character pairs, whatever the segmentation', () => {
    expect(matchTerms('编译流程')).toEqual(['编译', '译流', '流程'])
    const keyword = extractKeywords('调用')[0]!
    expect(keywordTermsMatch(keyword, new Set(matchTerms('每次调用都会记录')))).toBe(true)
    expect(keywordTermsMatch(keyword, new Set(matchTerms('这里讲的是部署')))).toBe(false)
  })
})

test('pairTerms joins adjacent content words, so "fall back" meets "fallback"', () => {
  expect(pairTerms('the input limit is computed')).toEqual(['inputlimit', 'limitcomput'])
  expect(pairTerms('never falls back to another')).toEqual(['neverfall', 'fallback', 'backanoth'])
  expect(matchTerms('fallback')).toEqual(['fallback'])
})

test('fileNameTerms: the words of a name and the month of a YYYY-MM date in it', () => {
  expect(fileNameTerms('incident-2026-03-missing-done.md')).toEqual(
    expect.arrayContaining(['incid', '2026', '03', 'miss', 'md', 'march']),
  )
  expect(fileNameTerms('notes.txt')).not.toContain('march')
})

test('answerCue: a cause for why, a number for how many, a date for when', () => {
  expect(answerCue('Why did the failover take so long?')?.test('because the TTL was 300 s')).toBe(true)
  expect(answerCue('How many tool calls may a turn make?')?.test('at most 24 tool calls')).toBe(true)
  expect(answerCue('When is Republic Day?')?.test('2026-10-05')).toBe(true)
  expect(answerCue('What is the hotel cap?')).toBeUndefined()
})

describe('stem: word forms of one word meet', () => {
  test.each([
    ['retain', 'retention', 'retained', 'retaining', 'retains'],
    ['approve', 'approval', 'approved', 'approves'],
    ['reimburse', 'reimbursement', 'reimbursed', 'reimbursements'],
    ['policy', 'policies'],
    ['decide', 'decision', 'decisions'],
    ['keep', 'kept', 'keeping'],
    ['pay', 'paid', 'payment', 'pays', 'paying'],
    ['day', 'days', 'daily'],
    ['month', 'months', 'monthly'],
    ['renew', 'renewal', 'renewed', 'renewing'],
    ['expire', 'expiry', 'expires'],
  ])('%s', (...forms) => {
    expect(new Set(forms.map(stem)).size).toBe(1)
  })

  test('unrelated words stay apart, and numbers and names are kept', () => {
    expect(stem('retail')).not.toBe(stem('retain'))
    expect(stem('approximately')).not.toBe(stem('approve'))
    expect(stem('2026')).toBe('2026')
    expect(stem('sev1')).toBe('sev1')
  })

  test('a question in other words than the passage still matches it', () => {
    const keyword = extractKeywords('What is the retention period?').find((k) => k.text === 'retention')!
    expect(keywordTermsMatch(keyword, new Set(matchTerms('Invoices are retained for seven years.')))).toBe(true)
  })
})

describe('analyseQuestion: modifiers and qualifiers', () => {
  test.each([
    ['When does the dental insurance start?', [['dental', 'insurance']]],
    ['How many days of paternity leave can be carried over?', [['paternity', 'leave']]],
    ['Is a master\'s degree covered?', []],
    ['Which class may I book for a nine-hour flight?', []],
    ['Does the company pay the insurance for children?', []],
    ['Who approves laptop purchases?', []],
  ])('%j: modifiers %j', (question, modifiers) => {
    expect([...analyseQuestion(question).modifiers]).toEqual(modifiers)
  })

  test.each([
    ['What is the pension match for contractors?', ['contractors']],
    ['How many vacation days do interns get in their first year?', ['first', 'year']],
    ['What happens when a stream ends without a done event?', []],
    ['How many paying workspaces did we have at the end of Q4?', []],
    ['What is the mileage rate for a 200 km trip?', ['km', 'trip']],
  ])('%j: qualifiers %j', (question, qualifiers) => {
    expect([...analyseQuestion(question).qualifiers]).toEqual(qualifiers)
  })
})

describe('analyseQuestion: the kind of answer asked for', () => {
  test.each([
    ['How long are staging backups retained?', 'duration'],
    ['How often do we do access reviews?', 'frequency'],
    ['How long does my password need to be?', undefined],
    ['How much does the Team plan cost per month?', 'money'],
    ['How much RAM does the server have?', undefined],
    ['Which days do suppliers get paid?', 'day'],
    ['What day of the month is salary paid?', 'day'],
    ['When does the flash P&L go out?', 'date'],
    ['Who approves a refund?', 'person'],
    ['What is the refund policy?', undefined],
  ])('%j → %s', (question, type) => {
    expect(analyseQuestion(question).answerType).toBe(type)
  })

  test('"how long does it need to be" asks for a length: "long" is a keyword, and no duration is needed', () => {
    expect(analyseQuestion('How long does my password need to be?').keywords.map((k) => k.text)).toEqual(['password', 'long'])
    expect(analyseQuestion('How often do we do access reviews?').wantsFigure).toBe(false)
  })

  test('"which X" names what the answer is about', () => {
    expect(analyseQuestion('Which companies are on the preferred supplier list?').asksWhich).toBe('companies')
    expect(analyseQuestion('What rate is charged?').asksWhich).toBeUndefined()
    expect(analyseQuestion('What commission rate do sales managers get?').asksWhich).toBe('commission')
  })

  test('15,000 and 15k are one number, in questions and in texts', () => {
    expect(texts('How many quotes for a 15,000 dollar purchase?')).toEqual(['quotes', '15000', 'dollar', 'purchase'])
    expect(texts('Who signs a $30k contract?')).toEqual(['signs', '30000', 'contract'])
    expect(matchTerms('Purchases from 10,000 to 50,000 USD')).toEqual(['purchas', '10000', '50000', 'usd'])
  })

  test('identifiers and a number after a name are names', () => {
    const proper = (question: string) => extractKeywords(question).filter((k) => k.proper).map((k) => k.text)
    expect(proper("What's the p99 latency SLO?")).toEqual(['p99', 'slo'])
    expect(proper('When are we upgrading to PostgreSQL 17?')).toEqual(['postgresql', '17'])
    expect(proper('How many days are there in 2026?')).toEqual([])
  })
})

describe('word forms of ordinary writing', () => {
  test.each([
    ['capitalised', 'capitalized'],
    ['licence', 'license'],
    ['colour', 'color'],
    ['catalogue', 'catalog'],
    ['organisation', 'organization'],
  ])('British and American spellings meet: %s / %s', (british, american) => {
    expect(stem(british)).toBe(stem(american))
  })

  test('an acronym\'s plural is the acronym, a hyphenated word also its joined spelling, P&L one word', () => {
    expect(matchTerms('account executives (AEs)')).toContain('ae')
    expect(texts('What is the ramp for new AEs?')).toContain('ae')
    expect(matchTerms('Registered non-profit organisations')).toContain(stem('nonprofit'))
    expect(texts('When does the flash P&L go out?')).toEqual(['flash', 'p&l'])
  })

  test('contractions and framing verbs are no keywords', () => {
    expect(texts("Why didn't we go with DynamoDB?")).toEqual(['dynamodb'])
    expect(texts("What do I earn once I'm above quota?")).toEqual(['earn', 'quota'])
  })
})


describe('analyseQuestion: relativePeriod and asksCount', () => {
  test.each([
    ['Is there a SPIF running this quarter?', 'month'],
    ["How many people failed last month's phishing simulation?", 'month'],
    ['Which features are not planned this year?', 'year'],
    ['When is the next sprint review?', undefined],
    ['What is the quarterly budget?', undefined],
  ] as const)('%s → %s', (question, period) => {
    expect(analyseQuestion(question).relativePeriod).toBe(period)
  })

  test('"how many" asks for a count; "how much" and "how long" do not', () => {
    expect(analyseQuestion('How many engineers joined?').asksCount).toBe(true)
    expect(analyseQuestion('How much does it cost?').asksCount).toBe(false)
    expect(analyseQuestion('How long is the notice period?').asksCount).toBe(false)
  })
})
