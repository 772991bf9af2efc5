// Passage ranking for the local model: BM25 (MiniSearch) over the passages of the pages it has
// read, with the file name and the headings above a passage as strong fields, and the judgement
// whether the best passage answers the question at all — below it, the answer is an honest
// "nothing covers this", not the least bad quote.
import MiniSearch from 'minisearch'
import { splitBlocks, type Block, type Page } from './blocks.ts'
import { isEvidence, passagesOf, type Passage } from './passages.ts'
import { ANSWER_TYPES, givesCount, isDated, measureWithoutUnit, namesPersonOrRole } from './answer-kinds.ts'
import { figureOfAnotherSubject, namedOnlyInGeneral, otherPartyInstead, questionFigures } from './subject-checks.ts'
import { fileNameMonths, fileNameTerms, isFrameVerb, isGenericNoun, keywordTermsMatch, matchTerms, NUMBER_IN_TEXT, pairTerms, stem, type Keyword, type QuestionTerms } from './terms.ts'

export interface ReadDocument {
  readonly uri: string
  /** Set for a compiled page (a summary, an overview, an abstract): the sources are quoted before it. */
  readonly layer?: { readonly kind: string; readonly of: string | null } | undefined
  readonly page: Page
  readonly blocks: ReadonlyArray<Block>
  readonly passages: ReadonlyArray<Passage>
  /** Terms of the file name (with the month of a YYYY-MM date in it). */
  readonly nameTerms: ReadonlySet<string>
  /** The (stemmed) month of each YYYY-MM date in the file name: a dated record, such as meeting notes. */
  readonly nameMonths: ReadonlySet<string>
  /** Terms of the document's first heading (its title), when the page starts the file. */
  readonly titleTerms: ReadonlySet<string>
  /** Terms of all the text read of the document, headings included. */
  readonly terms: ReadonlySet<string>
  /** Per passage (same order): the terms of its text, and of its text, headings and file name. */
  readonly passageTerms: ReadonlyArray<{
    readonly text: ReadonlySet<string>
    readonly context: ReadonlySet<string>
    readonly around: ReadonlySet<string>
  }>
}

export function readDocument({ uri, page, layer }: { readonly uri: string; readonly page: Page; readonly layer?: ReadDocument['layer'] }): ReadDocument {
  const blocks = splitBlocks(page)
  const headings = new Set(blocks.flatMap((block) => block.headings))
  const passages = passagesOf(blocks)
  const nameTerms = fileNameTerms(page.name)
  const terms = new Set(nameTerms)
  for (const text of [...headings, ...blocks.map((block) => block.text)]) for (const term of matchTerms(text)) terms.add(term)
  return {
    uri,
    ...(layer === undefined ? {} : { layer }),
    page,
    blocks,
    passages,
    nameTerms: new Set(nameTerms),
    nameMonths: new Set(fileNameMonths(page.name)),
    titleTerms: new Set(page.atStart ? matchTerms(blocks.find((block) => block.headings.length > 0)?.headings[0] ?? '') : []),
    terms,
    passageTerms: passages.map((passage) => {
      // With its pairs of adjacent words, so that "parental leave" is matched as a phrase.
      const own = passage.label === undefined ? passage.text : `${withoutSectionNumbers(passage.label)} ${passage.text}`
      const text = [...matchTerms(own), ...pairTerms(own)]
      const headings = withoutSectionNumbers(passage.context)
      const context = [...matchTerms(headings), ...pairTerms(headings)]
      return { text: new Set(text), context: new Set(context), around: new Set([...text, ...context, ...nameTerms]) }
    }),
  }
}

/** A heading's section number ("## 4. Payout", "3.2 Refunds") is no figure of the text; a version ("## 4.3.0 — …") is kept. */
function withoutSectionNumbers(headings: string): string {
  return headings.replace(/(^|\n)\s*\d{1,2}(?:\.\d{1,2})?\.?\s+(?=\p{L})/gu, '$1')
}

export function fileNameOf(uri: string): string {
  return decodeURIComponent(uri.replace(/\/+$/u, '').split('/').at(-1) ?? '')
}

export interface RankedPassage {
  readonly document: ReadDocument
  readonly passage: Passage
  /** Index of the passage in its document's passages. */
  readonly passageIndex: number
  readonly score: number
}

/** Weights of the name and heading fields against the passage's own text. */
const FIELD_BOOST = { text: 1, context: 1.5, name: 2, pairs: 1 }
/** A passage that looks like the kind of answer asked for (a cause for "why") ranks this much higher. */
const CUE_BOOST = 1.25

/** A table or CSV row whose first cell is a keyword ("Business" of "| Business | 4 hours |") is the row asked about. */
const ROW_KEY_BOOST = 1.5

function rowKeyMatches(block: Block, keywords: ReadonlyArray<Keyword>): boolean {
  if (block.kind !== 'row') return false
  const cell = block.text.replace(/^\s*\|/u, '').split(block.delimited ? /[,\t|]/u : /\|/u)[0] ?? ''
  const terms = new Set(matchTerms(cell))
  return terms.size > 0 && keywords.some((k) => keywordTermsMatch(k, terms))
}

/** Every evidence passage of the documents that matches a keyword, best first (ties: document order, then position). */
export function rankPassages({
  documents,
  keywords,
  cue,
}: {
  readonly documents: ReadonlyArray<ReadDocument>
  readonly keywords: ReadonlyArray<Keyword>
  /** What an answer looks like (`answerCue`). */
  readonly cue?: RegExp | undefined
}): RankedPassage[] {
  const unigrams = keywords.flatMap((keyword) => [...keyword.terms, ...(keyword.alternatives ?? []).flat()])
  const pairs = pairTerms(keywords.filter((k) => k.terms.length === 1).map((k) => k.text).join(' '))
  const queryTerms = new Set([...unigrams, ...pairs])
  // Only passages that share a term with the question (in text, headings or file name) are ranked: the rest score 0 anyway.
  const entries = documents.flatMap((document, documentIndex) =>
    document.passages.flatMap((passage, passageIndex) => {
      const terms = document.passageTerms[passageIndex]!
      const shares = [...queryTerms].some((term) => terms.around.has(term))
      return shares && isEvidence(document.blocks[passage.block]!) ? [{ document, documentIndex, passage, passageIndex }] : []
    }),
  )
  if (entries.length === 0 || keywords.length === 0) return []
  const index = new MiniSearch<{ id: number; text: string; context: string; name: string; pairs: string }>({
    fields: ['text', 'context', 'name', 'pairs'],
    // Fields arrive as terms already (matchTerms, remembered per passage).
    tokenize: (text) => (text === '' ? [] : text.split(' ')),
    processTerm: (term) => term,
    searchOptions: { boost: FIELD_BOOST, combineWith: 'OR' },
  })
  index.addAll(
    entries.map((entry, id) => ({
      id,
      text: matchTerms(entry.passage.label === undefined ? entry.passage.text : `${entry.passage.label} ${entry.passage.text}`).join(' '),
      context: matchTerms(entry.passage.context).join(' '),
      name: [...entry.document.nameTerms].join(' '),
      pairs: [...pairTerms(entry.passage.label ?? ''), ...pairTerms(entry.passage.text)].join(' '),
    })),
  )
  const query = [...queryTerms].join(' ')
  return index
    .search(query)
    .map((result) => {
      const entry = entries[result.id as number]!
      const looksLikeAnswer = cue !== undefined && cue.test(`${entry.document.blocks[entry.passage.block]!.headings.at(-1) ?? ''}\n${entry.passage.text}`)
      const boost = (looksLikeAnswer ? CUE_BOOST : 1) * (rowKeyMatches(entry.document.blocks[entry.passage.block]!, keywords) ? ROW_KEY_BOOST : 1)
      return { ...entry, score: result.score * boost }
    })
    .sort(
      (a, b) =>
        b.score - a.score || a.documentIndex - b.documentIndex || a.passage.start - b.passage.start,
    )
    .map(({ document, passage, passageIndex, score }) => ({ document, passage, passageIndex, score }))
}

// ---------------------------------------------------------------------------------------------
// Relevance

/** Keywords met as one word: "fall back" in the question, "fallback" in the text. */
function keywordsMetAsCompound(keywords: ReadonlyArray<Keyword>, terms: ReadonlySet<string>): Set<string> {
  const met = new Set<string>()
  for (let i = 0; i + 1 < keywords.length; i += 1) {
    const [a, b] = [keywords[i]!, keywords[i + 1]!]
    if (a.terms.length === 1 && b.terms.length === 1 && terms.has(stem(`${a.text}${b.text}`.replace(/[._'’-]/gu, '')))) {
      met.add(a.text)
      met.add(b.text)
    }
  }
  return met
}

/** Share of the question's keyword weight a passage must cover (calibrated on the evaluation set, docs/models.md). */
export const MIN_COVERAGE = 0.5
/** The same, for a passage that holds the whole phrase the question asks about. */
export const MIN_COVERAGE_WITH_FOCUS = 0.35

export interface Relevance {
  readonly relevant: boolean
  /** Share of the keywords' weight matched by the passage, its headings or its file name. */
  readonly coverage: number
  readonly reason: string
}

/**
 * Keyword weights: inverse document frequency over the passages read (a keyword found in few
 * passages tells more than one found everywhere); a keyword found nowhere weighs as much as the
 * rarest one found.
 */
export function keywordWeights({
  documents,
  keywords,
}: {
  readonly documents: ReadonlyArray<ReadDocument>
  readonly keywords: ReadonlyArray<Keyword>
}): Map<string, number> {
  const passageTerms = documents.flatMap((document) => document.passageTerms.map((terms) => terms.around))
  const n = Math.max(1, passageTerms.length)
  const idf = (df: number) => Math.log(1 + (n - df + 0.5) / (df + 0.5))
  const frequencies = keywords.map((keyword) => passageTerms.filter((terms) => keywordTermsMatch(keyword, terms)).length)
  const rarestFound = Math.min(...frequencies.filter((df) => df > 0), n)
  return new Map(keywords.map((keyword, i) => [keyword.text, idf(frequencies[i]! > 0 ? frequencies[i]! : rarestFound)]))
}

/** A keyword weighing less than this share of the question's heaviest one is too common to be a key term. */
const KEY_TERM_SHARE = 0.5

/**
 * The question's key terms a passage lacks: its content words other than generic nouns
 * ("policy", "allowance") and words far commoner than its rarest one, matched across word forms
 * (`stem`). A passage may lack one of them when the question has three keywords or more (a
 * verb of the question: "write", "use"), none otherwise — a near-topic passage is not an answer.
 */
export function missingKeyTerms({
  keywords,
  weights,
  matched,
}: {
  readonly keywords: ReadonlyArray<Keyword>
  readonly weights: ReadonlyMap<string, number>
  readonly matched: (keyword: Keyword) => boolean
}): Keyword[] {
  const heaviest = Math.max(0, ...keywords.map((k) => weights.get(k.text) ?? 0))
  // Of two keywords, both are key ("the roadmap for Q4": a passage about Q4 alone is not about the roadmap).
  const common = (k: Keyword) => keywords.length >= 3 && (weights.get(k.text) ?? 0) < KEY_TERM_SHARE * heaviest
  return keywords.filter((k) => !isGenericNoun(k.text) && !isFrameVerb(k.text) && !common(k) && !matched(k))
}

/** Whether a whole list (`Passage.lastBlock`) has two or more of `words` only in different items. */
function listFactsSpread({ document, passageIndex, words }: { document: ReadDocument; passageIndex: number; words: ReadonlyArray<Keyword> }): boolean {
  const passage = document.passages[passageIndex]!
  if (passage.lastBlock === undefined || words.length < 2) return false
  const items = document.blocks.slice(passage.block, passage.lastBlock + 1).map((block) => new Set([...matchTerms(block.text), ...pairTerms(block.text)]))
  return !items.some((terms) => words.every((k) => keywordTermsMatch(k, terms)))
}

/** The question's keywords a whole list or table has in its items only, not in its heading, section or file name. */
function wordsOnlyInItems({ document, passageIndex, keywords }: { document: ReadDocument; passageIndex: number; keywords: ReadonlyArray<Keyword> }): Keyword[] {
  const passage = document.passages[passageIndex]!
  const { text, context } = document.passageTerms[passageIndex]!
  const label = new Set([...matchTerms(passage.label ?? ''), ...pairTerms(passage.label ?? ''), ...context, ...document.nameTerms])
  return keywords.filter((k) => keywordTermsMatch(k, text) && !keywordTermsMatch(k, label))
}

/** Terms of a passage's own text, its nearest heading and its lead-in (a table's header row), not of the document's title above them. */
function nearTerms({ document, passageIndex }: { document: ReadDocument; passageIndex: number }): Set<string> {
  const passage = document.passages[passageIndex]!
  const block = document.blocks[passage.block]!
  const near = withoutSectionNumbers([block.headings.length > 1 ? block.headings.at(-1)! : '', block.lead ?? ''].join('\n'))
  return new Set([...document.passageTerms[passageIndex]!.text, ...matchTerms(near), ...pairTerms(near)])
}

/** Whether two keywords stand next to each other in the question's keyword order (a verb in -ing or -ed does not make a phrase with its neighbour). */
function adjacentInQuestion(keywords: ReadonlyArray<Keyword>, a: Keyword, b: Keyword): boolean {
  return Math.abs(keywords.indexOf(a) - keywords.indexOf(b)) === 1
}

/** A number standing as a figure ("50 MB", "6000"), not inside a name ("L2", "D1", "utf8"). */
const FIGURE = /(?<![\p{L}\p{N}_])\p{N}+/u

/**
 * Whether a passage answers the question: it covers at least `MIN_COVERAGE` of the keyword
 * weight (in its text, headings or file name), its own text matches a keyword (or its file's
 * name holds half the question: incident-2025-11-db-failover.md is about that failover), it holds
 * the head and at least half of the phrase the question asks about ("company car": a car, not
 * just the company), and its document mentions every name the question mentions (Berlin, SAML,
 * README.md).
 */
export function judgeRelevance({
  passageIndex,
  document,
  question,
  weights,
}: {
  readonly passageIndex: number
  readonly document: ReadDocument
  readonly question: QuestionTerms
  readonly weights: ReadonlyMap<string, number>
}): Relevance {
  const { text: textTerms, around } = document.passageTerms[passageIndex]!
  const { keywords, focus } = question
  const joined = keywordsMetAsCompound(keywords, textTerms)
  const matches = (k: Keyword, terms: ReadonlySet<string>) => keywordTermsMatch(k, terms) || joined.has(k.text)
  // Asked for a measure, the passage gives a figure (checked below) in its own words: "too large
  // … 50 MB" answers "the maximum size", so the measure words it lacks do not count against it.
  // The question's own verb ("What is *planned* for Q2?") counts only where the passage has it.
  const counted = keywords.filter(
    (k) => (!(question.asksForMeasure && isGenericNoun(k.text)) && k.text !== question.frameVerb) || matches(k, around),
  )
  const total = counted.reduce((sum, k) => sum + (weights.get(k.text) ?? 0), 0)
  const covered = counted.filter((k) => matches(k, around)).reduce((sum, k) => sum + (weights.get(k.text) ?? 0), 0)
  const coverage = total === 0 ? 0 : covered / total
  const missingName = keywords.find((k) => k.proper && !keywordTermsMatch(k, document.terms) && !keywordTermsMatch(k, document.nameTerms))
  if (missingName !== undefined) return { relevant: false, coverage, reason: `${document.uri} never mentions “${missingName.text}”` }
  // A name the question asks about is in the passage, its headings or its file's name, not only elsewhere in the file.
  const nameElsewhere = keywords.find((k) => k.proper && !matches(k, around))
  if (nameElsewhere !== undefined) return { relevant: false, coverage, reason: `the passage does not mention “${nameElsewhere.text}”` }
  // "The March ops review" is not the February one: a dated file named after what the month qualifies answers for its own month.
  const dated = question.datedSubject
  const otherMonth =
    dated !== undefined && document.nameMonths.size > 0 && !document.nameMonths.has(stem(dated.month)) && dated.subject.some((term) => document.nameTerms.has(term) || document.titleTerms.has(term))
      ? keywords.find((k) => k.text === dated.month)
      : undefined
  if (otherMonth !== undefined) return { relevant: false, coverage, reason: `${document.uri} is dated in another month than “${otherMonth.text}”` }
  // Asked for a figure or "which X", a whole list under a heading does not piece the question's words together from several items: the figure of one item is not the answer to the words of another.
  // A whole table answers only a question about the table (its heading, section, file): a question about a row is answered by the row.
  const wholeTable = document.blocks[document.passages[passageIndex]!.block]!.kind === 'row'
  const inItems = document.passages[passageIndex]!.lastBlock === undefined ? [] : wordsOnlyInItems({ document, passageIndex, keywords })
  if (wholeTable && inItems.length > 0) return { relevant: false, coverage, reason: 'the question is about a row of the table, not the table' }
  if ((question.wantsFigure || question.asksWhich !== undefined) && listFactsSpread({ document, passageIndex, words: inItems })) {
    return { relevant: false, coverage, reason: 'the list has the question’s words only across several items' }
  }
  // A passage must say something about the question itself — unless its file is named after it.
  const named = keywords.filter((k) => keywordTermsMatch(k, document.nameTerms)).reduce((sum, k) => sum + (weights.get(k.text) ?? 0), 0)
  if (!keywords.some((k) => matches(k, textTerms)) && named * 2 < total) return { relevant: false, coverage, reason: 'no keyword in the passage itself' }
  const focusFound = focus.filter((k) => matches(k, around)).length
  const head = focus.at(-1)
  const action = question.focusIsAction && focus.length > 1 ? focus[0] : undefined
  const missing = (k: Keyword | undefined) => k !== undefined && !matches(k, around)
  // Of a two-word phrase both words ("notice period" is not "probation period"), of a longer one half.
  const focusNeeded = focus.length <= 2 ? focus.length : Math.ceil(focus.length / 2)
  if (head !== undefined && (missing(head) || missing(action) || focusFound < focusNeeded)) {
    return { relevant: false, coverage, reason: `the passage is not about “${focus.map((k) => k.text).join(' ')}”` }
  }
  if (question.asksForMeasure && !FIGURE.test(document.passages[passageIndex]!.text)) {
    return { relevant: false, coverage, reason: 'the passage gives no figure' }
  }
  const unitless = measureWithoutUnit({ keywords, text: document.passages[passageIndex]!.text, matched: (k) => matches(k, around) })
  if (unitless !== undefined) return { relevant: false, coverage, reason: `the passage gives no “${unitless.text}” and no figure of one` }
  if (question.wantsFigure && !NUMBER_IN_TEXT.test(document.passages[passageIndex]!.text)) {
    return { relevant: false, coverage, reason: 'the passage gives no number' }
  }
  if (question.asksCount && !givesCount(document.passages[passageIndex]!.text, NUMBER_IN_TEXT)) {
    return { relevant: false, coverage, reason: 'the passage gives no count (only dates or names with numbers)' }
  }
  const answerType = question.answerType === undefined ? undefined : ANSWER_TYPES[question.answerType]
  const passage = document.passages[passageIndex]!
  // A table or CSV row gives its unit in the header row ("| environment | days kept |", "price_eur_per_seat").
  const rowWithUnit = (type: { readonly header?: RegExp | undefined }) =>
    document.blocks[passage.block]!.kind === 'row' && type.header !== undefined && type.header.test(passage.context) && /\d/u.test(passage.text)
  // A cause may be announced by the heading above it ("## Root cause").
  const typedText = `${question.answerType === 'cause' ? (document.blocks[passage.block]!.headings.at(-1) ?? '') : ''}\n${passage.label ?? ''}\n${passage.text}`
  const typed = question.answerType === 'person' ? namesPersonOrRole(typedText, keywords) : answerType?.pattern.test(typedText)
  if (answerType !== undefined && typed !== true && !rowWithUnit(answerType)) {
    return { relevant: false, coverage, reason: `the passage gives no ${answerType.name}` }
  }
  const threshold = focus.length > 0 && focusFound === focus.length ? MIN_COVERAGE_WITH_FOCUS : MIN_COVERAGE
  if (coverage < threshold) return { relevant: false, coverage, reason: `coverage ${coverage.toFixed(2)} below ${threshold}` }
  const joinedAround = keywordsMetAsCompound(keywords, around)
  const uncovered = missingKeyTerms({ keywords, weights, matched: (k) => matches(k, around) || joinedAround.has(k.text) || k.text === question.frameVerb })
  // "The dental insurance" is not the health insurance: a missing word that qualifies a word the passage has names another thing.
  // The word qualified is in the passage's text, or in a heading that names another kind of it ("## Bereavement leave").
  let contextPairs: string[] | undefined
  const headHere = (head: Keyword) =>
    matches(head, textTerms) ||
    (matches(head, around) && head.terms.length === 1 && (contextPairs ??= pairTerms(document.passages[passageIndex]!.context)).some((pair) => pair.endsWith(head.terms[0]!) && pair !== head.terms[0]))
  const otherKind = keywords.find(
    (k) => question.modifiers.has(k.text) && !matches(k, around) && !joinedAround.has(k.text) && keywords.some((h) => h.text === question.modifiers.get(k.text) && headHere(h)),
  )
  if (otherKind !== undefined) return { relevant: false, coverage, reason: `the passage is not about “${otherKind.text} ${question.modifiers.get(otherKind.text)}”` }
  // Both words of such a phrase missing ("the *preferred supplier* list"), the thing it names is missing.
  const phraseAbsent = uncovered.find((k) => keywords.some((h) => h.text === question.modifiers.get(k.text) && !matches(h, around) && !joinedAround.has(h.text)))
  if (phraseAbsent !== undefined) return { relevant: false, coverage, reason: `the passage is not about “${phraseAbsent.text} ${question.modifiers.get(phraseAbsent.text)}”` }
  // A phrase that narrows the question ("for contractors") is not the verb a passage may lack.
  // Nor is the thing a "which …" question asks for ("Which companies are on the list?").
  // A number the question gives ("above 125 %") is not a verb either.
  const narrowed =
    uncovered.find((k) => question.qualifiers.has(k.text) || /^\p{N}+$/u.test(k.text)) ??
    keywords.find((k) => k.text === question.asksWhich && !matches(k, nearTerms({ document, passageIndex })) && !joinedAround.has(k.text))
  if (narrowed !== undefined) return { relevant: false, coverage, reason: `the passage does not cover “${narrowed.text}”` }
  // Two key terms side by side in the question ("a different *bank account*") are one thing: both missing, the thing is.
  const phraseMissing = uncovered.find((k, i) => uncovered.slice(i + 1).some((other) => adjacentInQuestion(keywords, k, other) && ![k, other].some((w) => /(?:ing|ed)$/u.test(w.text))))
  if (phraseMissing !== undefined && uncovered.length >= 2) return { relevant: false, coverage, reason: `the passage does not cover ${uncovered.map((k) => `“${k.text}”`).join(', ')}` }
  // One key term may be missing from a question of three or more: its verb ("write", "use") — unless the verb is known.
  const allowed = question.frameVerb !== undefined ? 0 : keywords.length >= 6 ? 2 : keywords.length >= 3 ? 1 : 0
  // "Summarise what these files are about": the words asking for a summary are no subject.
  if (!question.wantsSummary && uncovered.length > allowed) {
    return { relevant: false, coverage, reason: `the passage does not cover ${uncovered.map((k) => `“${k.text}”`).join(', ')}` }
  }
  const apart = subjectApart({ document, passageIndex, question, weights, matches })
  if (apart !== undefined) return { relevant: false, coverage, reason: apart }
  return { relevant: true, coverage, reason: `coverage ${coverage.toFixed(2)}` }
}

/**
 * Why a passage with the question's words is about something else than what it asks
 * (subject-checks.ts), or undefined: the thing to identify named only in general, only the
 * question's own figure shared, a figure said of another subject, an undated passage for "this
 * quarter" or "last month", another party than the one asked about.
 */
function subjectApart({
  document,
  passageIndex,
  question,
  weights,
  matches,
}: {
  readonly document: ReadDocument
  readonly passageIndex: number
  readonly question: QuestionTerms
  readonly weights: ReadonlyMap<string, number>
  readonly matches: (k: Keyword, terms: ReadonlySet<string>) => boolean
}): string | undefined {
  const { keywords } = question
  const passage = document.passages[passageIndex]!
  const { text, context, around } = document.passageTerms[passageIndex]!
  const keyTerms = missingKeyTerms({ keywords, weights, matched: () => false }).filter((k) => k.text !== question.frameVerb)
  const nameAndHeadings = new Set([...context, ...document.nameTerms])
  const thing = keywords.find((k) => k.text === question.asksWhich) ?? (question.answerType === 'person' ? question.focus.at(-1) : undefined)
  if (thing !== undefined && !matches(thing, nameAndHeadings) && namedOnlyInGeneral({ text: passage.text, thing, keywords })) {
    return `the passage names “${thing.text}” only in general, not which`
  }
  const figures = questionFigures(keywords)
  const inText = keywords.filter((k) => matches(k, text))
  if (inText.length > 0 && inText.every((k) => figures.has(k.text)) && keyTerms.some((k) => !figures.has(k.text) && !matches(k, around))) {
    return `the passage shares only the figure “${inText.map((k) => k.text).join(' ')}” with the question`
  }
  const asksFigure = question.wantsFigure || question.asksForMeasure || question.answerType === 'money' || question.answerType === 'duration'
  const block = document.blocks[passage.block]!
  if (asksFigure && block.kind !== 'row' && passage.lastBlock === undefined) {
    const sentences = passage.sentences.map((sentence) => sentence.text)
    const lacking = figureOfAnotherSubject({ sentences, figure: /\d/u, required: keyTerms.filter((k) => matches(k, text)), context: nameAndHeadings, keywords })
    if (lacking.length > 0) return `the figure is said of another thing, not of ${lacking.map((k) => `“${k.text}”`).join(', ')}`
  }
  if (question.relativePeriod !== undefined && !isDated(`${document.page.name}\n${passage.context}\n${passage.label ?? ''}\n${passage.text}`, question.relativePeriod)) {
    return 'the question asks about a period relative to now, and the passage is not dated'
  }
  const party = otherPartyInstead({ keywords, matched: (k) => matches(k, around), text })
  if (party !== undefined) return `the passage is about another party (“${party.named}”), not “${party.asked.text}”`
  return undefined
}
