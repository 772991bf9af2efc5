// Terms of the built-in local model's text logic: what a question asks for (its keywords, and
// which of them it is about), and the terms a text is matched and ranked by. Deterministic and
// dictionary-free: Latin words are stemmed (Porter, with a short table of derived words); CJK runs are cut into words by
// `Intl.Segmenter` for queries and matched by overlapping character pairs, so a word the
// segmenter cuts differently in the question and in the text still matches.

import { stem } from './stem.ts'
import { makeAlternatives, normaliseQuestionPhrases } from './synonyms.ts'
import { CHINESE_STOP_WORDS, ENGLISH_STOP_WORDS, isFrameVerb, isGenericNoun, KIND_NOUNS } from './word-lists.ts'

export { stem }
export { isFrameVerb, isGenericNoun }

const CJK_CLASS = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}'
const CJK_CHAR = new RegExp(`[${CJK_CLASS}]`, 'u')
const LATIN = `(?:(?![${CJK_CLASS}])[\\p{L}\\p{N}])`
const TOKEN = new RegExp(`([${CJK_CLASS}]+)|(${LATIN}+(?:[._'’&-]${LATIN}+)*)`, 'gu')
const WORD_SEGMENTER = new Intl.Segmenter('zh', { granularity: 'word' })

/** Words that ask for a summary of a document rather than name a subject. */
const SUMMARY_INTENT = /\b(summar(y|ise|ize)|key points?|main points?|gist|tl;?dr|overview of)\b|要点|总结|概要|摘要|主要内容/iu

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december']

export function containsCjk(text: string): boolean {
  return CJK_CHAR.test(text)
}

function normalise(text: string): string {
  return normaliseNumbers(singularAcronyms(text.normalize('NFKC')).toLowerCase())
}

/** "AEs", "SDRs", "ADRs": an acronym's plural is the acronym. */
function singularAcronyms(text: string): string {
  return text.replace(/(?<![\p{L}\p{N}])(\p{Lu}{2,})s(?![\p{L}\p{N}])/gu, '$1')
}

/** "15,000" and "15k" are the number 15000 (a question and a document may write it either way). */
function normaliseNumbers(text: string): string {
  return text
    .replace(/(?<![\p{L}\p{N}.,])\d{1,3}(?:,\d{3})+(?![\p{N}]|,\d)/gu, (number) => number.replace(/,/gu, ''))
    .replace(/(?<![\p{L}\p{N}.,])(\d{1,3})k\b/giu, '$1000')
}

function isContentWord(word: string): boolean {
  if (ENGLISH_STOP_WORDS.has(word.replace(/['’]/gu, ''))) return false
  return word.length >= 2 || /^\p{N}$/u.test(word)
}

// ---------------------------------------------------------------------------------------------
// Matching terms

/** "cats.md" also matches "cats", "node.js" also "node": the whole token and its parts. */
function latinTerms(possessive: string): string[] {
  // "the doctor's certificate" is about a doctor.
  const token = possessive.replace(/['’]s$/u, '')
  const parts = token.split(/[._'’-]/u).filter((part) => part !== '' && isContentWord(part))
  const whole = isContentWord(token) ? [stem(token)] : []
  // "non-profit" is also "nonprofit", "e-mail" "email".
  const joined = /^[\p{L}]+(?:-[\p{L}]+)+$/u.test(token) ? [stem(token.replace(/-/gu, ''))] : []
  return parts.length > 1 ? [...whole, ...joined, ...parts.map(stem)] : whole
}

function cjkPairs(run: string): string[] {
  const chars = Array.from(run)
  if (chars.length === 1) return chars
  const pairs: string[] = []
  for (let i = 0; i + 1 < chars.length; i += 1) pairs.push(chars[i]! + chars[i + 1]!)
  return pairs
}

const MEMO_MAX_ENTRIES = 4096
const MEMO_MAX_CHARS = 4096
const memo = new Map<string, ReadonlyArray<string>>()

/** Terms of a text for matching and ranking: stemmed content words and overlapping CJK pairs. */
export function matchTerms(text: string): string[] {
  // The planner re-reads the same tool results at every step: short texts are remembered.
  if (text.length > MEMO_MAX_CHARS) return computeMatchTerms(text)
  let terms = memo.get(text)
  if (terms === undefined) {
    if (memo.size >= MEMO_MAX_ENTRIES) memo.clear()
    terms = computeMatchTerms(text)
    memo.set(text, terms)
  }
  return [...terms]
}

function computeMatchTerms(text: string): string[] {
  const terms: string[] = []
  for (const match of normalise(text).matchAll(TOKEN)) {
    if (match[1] !== undefined) terms.push(...cjkPairs(match[1]))
    else if (match[2] !== undefined) terms.push(...latinTerms(match[2]))
  }
  return terms
}

/**
 * Adjacent content words joined ("input limit" → `inputlimit`, "fall back" → `fallback`), so that
 * a phrase of the question ranks the passage that has it together, and a compound written as one
 * word or two meets itself.
 */
export function pairTerms(text: string): string[] {
  const pairs: string[] = []
  let previous: string | undefined
  for (const match of normalise(text).matchAll(TOKEN)) {
    if (match[1] !== undefined) {
      previous = undefined
      continue
    }
    const word = match[2]!.replace(/['’]/gu, '')
    if (!isContentWord(word)) continue
    const current = stem(word.replace(/[._-]/gu, ''))
    if (previous !== undefined) pairs.push(previous + current)
    previous = current
  }
  return pairs
}

/** What an answer to the question looks like: a cause for "why", a number for "how many", a date for "when". */
export function answerCue(question: string): RegExp | undefined {
  const text = question.normalize('NFKC').trim()
  if (/^(why\b|what\s+(?:caused|causes|led\s+to)\b|为什么|为何)/iu.test(text)) return /\b(because|reason|so that|since|due to|cause[sd]?|why)\b|因为|原因|由于|所以/iu
  if (FIGURE_QUESTION.test(text)) return NUMBER_IN_TEXT
  if (/^(when\b|by when\b)|什么时候|何时/iu.test(text)) return /\d|\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|september|october|november|december|daily|weekly|monthly)\b|[日月周]/iu
  return undefined
}

/**
 * Terms of a file name: its words, plus the month of a `YYYY-MM` date in it, so that "the March
 * 2026 incident" finds `incident-2026-03-….md`.
 */
export function fileNameTerms(name: string): string[] {
  return [...matchTerms(name.replace(/\.[a-z0-9]{1,5}$/iu, ' $&')), ...fileNameMonths(name)]
}

/** The stemmed month of each `YYYY-MM` date in a file name. */
export function fileNameMonths(name: string): string[] {
  return [...name.matchAll(/(?<!\d)(\d{4})[-_.](\d{2})(?!\d)/gu)].flatMap((match) => {
    const month = MONTHS[Number(match[2]) - 1]
    return month === undefined ? [] : [stem(month)]
  })
}

// ---------------------------------------------------------------------------------------------
// Keywords of a question

export interface Keyword {
  /** As sent to the `search` tool. */
  readonly text: string
  /** Its matching terms (one for a Latin word, the character pairs of a CJK word). */
  readonly terms: ReadonlyArray<string>
  /** A name the answer must mention (capitalised in the question, an acronym, a file name). */
  readonly proper: boolean
  /** Other ways of saying a one-term keyword (synonyms.ts), each the terms that must all be there. */
  readonly alternatives?: ReadonlyArray<ReadonlyArray<string>> | undefined
}

export interface QuestionTerms {
  readonly keywords: ReadonlyArray<Keyword>
  /**
   * The keywords of the phrase the question asks about, its head last ("parental leave" of "What
   * is the parental leave policy?", 停车 of 深圳办公室的停车费是多少), without generic nouns such as
   * "policy"; empty when the question's form shows no such phrase.
   */
  readonly focus: ReadonlyArray<Keyword>
  /** The phrase is an action on a thing ("How do I *install knowagent*"): its first word must match too. */
  readonly focusIsAction: boolean
  /** The question asks for a measure of the thing ("the maximum size of *a file*"): the answer gives a figure. */
  readonly asksForMeasure: boolean
  /** The question asks for the gist of a document ("key points of README.md"). */
  readonly wantsSummary: boolean
  /** "How many / how much / how long / how often": the answer holds a number. */
  readonly wantsFigure: boolean
  /** "How many …": the answer holds a count, not only a date or a year. */
  readonly asksCount: boolean
  /**
   * The question's own verb, a participle after "what is" ("What is *planned* for Q2?", "What was
   * *decided* in …"): a passage may lack it, and then lacks no other key term.
   */
  readonly frameVerb: string | undefined
  /**
   * Keywords that qualify the keyword right after them inside a noun phrase ("the *dental*
   * insurance", "days of *paternity* leave"): each mapped to the keyword it qualifies.
   */
  readonly modifiers: ReadonlyMap<string, string>
  /** The kind of answer the question's form asks for (`answerTypeOf`): the passage must hold one. */
  readonly answerType: AnswerType | undefined
  /** The noun of "which X" / "what X" ("*Which companies* are …"): what the answer names, so a passage must have it. */
  readonly asksWhich: string | undefined
  /** Keywords of a phrase that narrows the question ("the pension match *for contractors*", "*in Germany*"). */
  readonly qualifiers: ReadonlySet<string>
  /** A month that dates what the question asks about ("the *March* ops review"): its terms, and the month. */
  readonly datedSubject: { readonly month: string; readonly subject: ReadonlyArray<string> } | undefined
  /** The question asks about a period relative to now ("*this quarter*", "*last month*", "*next year*"): which kind of period; its answer is dated as finely. */
  readonly relativePeriod: 'year' | 'month' | undefined
}

export const MAX_QUERY_KEYWORDS = 8

/** A one-term keyword's synonyms (synonyms.ts), read the way texts are read here. */
export const alternativesOf = makeAlternatives({ matchTerms, pairTerms })

/** "Which files mention X?": the words that ask which files hold a subject, not the subject. */
const FILES_THAT = /^\s*(?:which|what)\s+(?:files?|documents?|docs|pages?|notes)\s+(?:mention|mentions|talk about|talks about|refer to|refers to|discuss|discusses|cover|covers|contain|contains|say anything about|are about|is about)\s+/iu

export function analyseQuestion(asked: string): QuestionTerms {
  const question = normaliseQuestionPhrases(asked)
  const text = question.normalize('NFKC')
  const extracted = extractKeywords(text.replace(FILES_THAT, ''))
  // "How long does my password need to be?" asks for a length: "long" is what its answer says ("14 characters long").
  const keywords = LENGTH_QUESTION.test(text.trim()) && extracted.length < MAX_QUERY_KEYWORDS ? [...extracted, ...extractKeywords('length').map((k) => ({ ...k, text: 'long', terms: ['long', 'length'] }))] : extracted
  const frameVerb = keywords.find((k) => k.text === PARTICIPLE_FRAME.exec(text)?.[1]?.toLowerCase())?.text
  const phrase = focusPhrase(question)
  const answerType = answerTypeOf(text, keywords)
  const focusTexts = new Set(phrase.text === undefined ? [] : extractKeywords(phrase.text).map((k) => k.text).filter((word) => word !== frameVerb))
  return {
    keywords,
    focusIsAction: phrase.action,
    asksForMeasure: phrase.measure,
    // "Which days …" is answered by "Tuesdays": the answer's kind is no word the passage must have.
    focus: keywords.filter((keyword) => focusTexts.has(keyword.text) && !isGenericNoun(keyword.text) && !(answerType === 'day' && DAY_WORDS.has(keyword.text))),
    wantsSummary: SUMMARY_INTENT.test(question),
    // "How often" is answered by "every quarter" as well as by "twice a year".
    wantsFigure: FIGURE_QUESTION.test(text.trim()) && answerType !== 'frequency',
    asksCount: /^how\s+many\b/iu.test(text.trim()),
    frameVerb,
    modifiers: modifiersOf(text, keywords),
    qualifiers: qualifiersOf(text, keywords),
    answerType,
    asksWhich: answerType === 'day' ? undefined : asksWhichOf(text, keywords),
    datedSubject: datedSubjectOf(question),
    relativePeriod: relativePeriodOf(question),
  }
}

/** See `QuestionTerms.qualifiers`: the keywords of the noun phrase after a preposition that narrows to a group, a place or a case. */
function qualifiersOf(question: string, keywords: ReadonlyArray<Keyword>): Set<string> {
  const texts = new Set(keywords.map((k) => k.text))
  const qualifiers = new Set<string>()
  for (const match of question.matchAll(/\b(?:for|in|during|under|outside)\s+(?:(?:the|a|an|my|our|your|their|all|each|every|new|other)\s+)*/giu)) {
    const rest = question.slice((match.index ?? 0) + match[0].length)
    for (const keyword of extractKeywords(phraseAt(rest))) if (texts.has(keyword.text) && !isGenericNoun(keyword.text) && !NUMBER_IN_TEXT.test(keyword.text)) qualifiers.add(keyword.text)
  }
  return qualifiers
}

const LENGTH_QUESTION = /^how\s+long\b.*\bbe\s*[?？.!]*\s*$/iu

export type AnswerType = 'cause' | 'duration' | 'frequency' | 'money' | 'day' | 'date' | 'person'

const DAY_WORDS = new Set(['day', 'days', 'weekday', 'weekdays'])
const MONEY_WORDS = new Set('cost costs charge charges price prices fee fees spend spent earn earns pay paid worth budget salary'.split(' '))

/**
 * What the question's form asks for: a duration ("how long"), an amount of money ("how much …
 * cost"), a day ("which days", "what day of the month"), a date or time ("when"), a person or a
 * role ("who"). Undefined for other questions.
 */
function answerTypeOf(question: string, keywords: ReadonlyArray<Keyword>): AnswerType | undefined {
  const text = question.trim()
  if (/^(?:why\b|what\s+(?:caused|causes|led\s+to)\b)/iu.test(text)) return 'cause'
  // "How long does my password need to be?" asks for a length, not a time.
  if (/^how\s+long\b/iu.test(text) && !LENGTH_QUESTION.test(text)) return 'duration'
  if (/^how\s+often\b/iu.test(text)) return 'frequency'
  if (/^how\s+much\b/iu.test(text) && keywords.some((k) => MONEY_WORDS.has(k.text))) return 'money'
  if (/^(?:which|what)\s+(?:days?|weekdays?)\b|^on\s+(?:which|what)\s+days?\b|\bwhat\s+day\s+of\s+the\b/iu.test(text)) return 'day'
  if (/^(?:when|by\s+when|what\s+time)\b/iu.test(text)) return 'date'
  if (/^who(?:m|se)?\b/iu.test(text)) return 'person'
  return undefined
}

/** See `QuestionTerms.asksWhich`: the keyword after a leading which/what ("which *companies* are", "what *commission* rate do"), when it is not a generic noun. */
function asksWhichOf(question: string, keywords: ReadonlyArray<Keyword>): string | undefined {
  const match = /^\s*(?:which|what)\s+([\p{L}-]+)(?:\s+([\p{L}-]+))?\s+(?:is|are|was|were|do|does|did|can|may|should|must|will|has|have)\b/iu.exec(question)
  const nouns = [match?.[1], match?.[2]].flatMap((noun) => (noun === undefined ? [] : [noun.toLowerCase()]))
  return nouns.find((noun) => !isGenericNoun(noun) && keywords.some((k) => k.text === noun))
}

/** Adjectives that say which one or how big, not what kind: "a *different* bank account" is still a bank account. */
const PLAIN_ADJECTIVES = new Set('new old different same other another current next last first previous small large big whole full main single extra additional existing specific certain own usual normal standard regular'.split(' '))

/** Words after which a noun phrase starts: "the dental insurance", "days of paternity leave", "how many vacation days". */
const NOUN_PHRASE_START = /^(?:the|a|an|of|for|my|our|your|their|his|her|its|many|much|any|each|every|per|on|in|at|to|from|with|about|this|that|these|those|no)$/iu

/** See `QuestionTerms.modifiers`: the first word of two adjacent keywords after a determiner or a preposition. */
function modifiersOf(question: string, keywords: ReadonlyArray<Keyword>): Map<string, string> {
  const byText = new Map(keywords.map((k) => [k.text, k]))
  const tokens = [...question.matchAll(TOKEN)].map((m) => ({ text: m[0].toLowerCase().replace(/’/gu, "'"), start: m.index ?? 0, end: (m.index ?? 0) + m[0].length, latin: m[2] !== undefined }))
  const modifiers = new Map<string, string>()
  for (let i = 1; i + 1 < tokens.length; i += 1) {
    const [before, word, next, after] = [tokens[i - 1]!, tokens[i]!, tokens[i + 1]!, tokens[i + 2]]
    if (!word.latin || !next.latin || !NOUN_PHRASE_START.test(before.text) || /\S/u.test(question.slice(word.end, next.start))) continue
    // Not a kind of the next word: an owner ("a master's degree"), a measure ("a nine-hour flight"),
    // or a subject whose verb is next ("does the company pay the …").
    if (/['’]s$/u.test(word.text) || NUMBER_IN_TEXT.test(word.text) || PLAIN_ADJECTIVES.has(word.text) || (after !== undefined && NOUN_PHRASE_START.test(after.text) && !/^of$/iu.test(after.text))) continue
    const [modifier, head] = [byText.get(word.text), byText.get(next.text)]
    if (modifier !== undefined && head !== undefined && !modifier.proper) modifiers.set(modifier.text, head.text)
  }
  return modifiers
}

/** "this quarter", "last month's …", "next year": the period a question names relative to now (a quarter is dated by its month). */
function relativePeriodOf(question: string): QuestionTerms['relativePeriod'] {
  const period = /\b(?:this|next|last|previous|coming|current)\s+(month|quarter|year)(?:['’]s)?\b/iu.exec(question)?.[1]?.toLowerCase()
  return period === undefined ? undefined : period === 'year' ? 'year' : 'month'
}

/** "the March ops review", "the February 2026 meeting": a month and the words it dates. */
function datedSubjectOf(question: string): QuestionTerms['datedSubject'] {
  const match = /\b(january|february|march|april|june|july|august|september|october|november|december)\s+(?:\d{4}\s+)?((?:[\p{L}-]+\s*){1,3})/iu.exec(question.normalize('NFKC'))
  if (match === null) return undefined
  const subject = matchTerms(phraseAt(match[2]!))
  return subject.length === 0 ? undefined : { month: match[1]!.toLowerCase(), subject }
}

const FIGURE_QUESTION = /^how (?:many|much|long|often)\b|多少|几[个次天周年]|多长|多久/iu
const PARTICIPLE_FRAME = /^\s*(?:what|which\s+\p{L}+)\s+(?:is|are|was|were|has been|have been|will be)\s+(\p{L}+ed)\s+(?:for|in|at|on|by|during|about)\b/iu

/** A number in the text, in digits or words (一 … 十 too). */
export const NUMBER_IN_TEXT = /(?<![\p{L}_])\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|hundred|half|once|twice)\b|[一二三四五六七八九十百千半两]/iu

/** Search keywords of a question: stop-words dropped, CJK runs cut into words. */
export function extractKeywords(question: string): Keyword[] {
  const keywords = new Map<string, Keyword>()
  const add = (text: string, proper: boolean) => {
    const terms = [...new Set(matchTerms(text))]
    if (terms.length === 0) return
    const existing = keywords.get(text)
    const isProper = proper || (existing?.proper ?? false)
    const alternatives = terms.length === 1 && !isProper ? alternativesOf(terms[0]!) : []
    keywords.set(text, { text, terms, proper: isProper, ...(alternatives.length > 0 ? { alternatives } : {}) })
  }
  const original = normaliseNumbers(singularAcronyms(question.normalize('NFKC')))
  let previousProper = false
  for (const match of original.matchAll(TOKEN)) {
    if (match[1] !== undefined) for (const word of cjkWords(match[1])) add(word.toLowerCase(), false)
    else if (match[2] !== undefined && isContentWord(match[2].toLowerCase())) {
      // A number right after a name is part of it ("PostgreSQL 17" is not PostgreSQL 12).
      const proper: boolean = isProperName(match[2], match.index ?? 0, original) || (previousProper && /^\p{N}+(?:\.\p{N}+)*$/u.test(match[2]))
      add(match[2].toLowerCase().replace(/’/gu, "'"), proper)
      previousProper = proper
      continue
    }
    previousProper = false
  }
  return [...keywords.values()].slice(0, MAX_QUERY_KEYWORDS)
}

/** Capitalised other than at the start of the question, an acronym (SAML, SEV1), or a file name. */
function isProperName(word: string, index: number, question: string): boolean {
  if (/\.[a-z0-9]{1,5}$/iu.test(word) && /[a-z]/iu.test(word)) return true
  // An identifier of letters and digits: p99, v2, fy2026.
  if (/^(?=.*\p{L})(?=.*\p{N})[\p{L}\p{N}]+$/u.test(word) && !/^\p{N}+(?:st|nd|rd|th|s)$/iu.test(word)) return true
  if (/^\p{Lu}[\p{Lu}\p{N}]+$/u.test(word)) return true
  const atStart = /^[\s"'“‘(¿¡]*$/u.test(question.slice(0, index))
  return !atStart && /^\p{Lu}/u.test(word)
}

/** Segmenter words of a CJK run without stop-words; neighbouring single characters join up. */
function cjkWords(run: string): string[] {
  const words: string[] = []
  let singles = ''
  const flushSingles = () => {
    if (Array.from(singles).length >= 2) words.push(singles)
    singles = ''
  }
  for (const { segment } of WORD_SEGMENTER.segment(run)) {
    if (CHINESE_STOP_WORDS.has(segment)) flushSingles()
    else if (Array.from(segment).length === 1) singles += segment
    else {
      flushSingles()
      words.push(segment)
    }
  }
  flushSingles()
  return words
}

const QUESTION_FRAME =
  /^\s*(?:(?:what|which|who|where)(?:\s+(?:is|are|was|were|does|do|did)|['’]s)?|when\s+(?:is|are|was|were)|how\s+(?:many|much)(?:\s+(?:is|are|was|were))?|how\s+(?:do|does|can|should)\s+(?:i|we|you))\s+(?:the\s+|a\s+|an\s+)?/iu
const PHRASE_END = /\s(?:at|in|on|for|of|to|from|with|by|during|when|if|after|before|per|do|does|did|is|are|can|may|must|should|will|would|be|being|that|which|while)\b|[?？!.,;:]/iu
/** "How is the input limit computed?" asks about "input limit". */
const PASSIVE_FRAME = /^\s*(?:how(?:\s+(?:long|often|soon|quickly|fast))?|when|where)\s+(?:is|are|was|were)\s+(?:the\s+|a\s+|an\s+)?(.+?)\s+\p{L}+(?:ed|en|id|lt|pt|nt|wn|ne)\s*[?？.!]*\s*$/iu
/** 值班补贴是多少？: the question words at the end follow the subject asked about. */
const CHINESE_ASKS_ABOUT_SUBJECT = /(?:是什么|是多少|是哪些|有哪些|有多少|是多久|有多长)[？?。]*$/u
const CHINESE_QUESTION_TAIL = /(?:是什么|是多少|是哪些|有哪些|有多少|多少|多长|多久|怎么样|怎么|如何|吗|呢|[？?。])+.*$/u

/** The noun phrase a question asks about, when its form shows one (see `QuestionTerms.focus`). */
function focusPhrase(question: string): { readonly text: string | undefined; readonly action: boolean; readonly measure: boolean } {
  const none = { text: undefined, action: false, measure: false }
  const text = question.normalize('NFKC').trim()
  if (containsCjk(text)) {
    // 深圳办公室的停车费是多少 → 停车费; 值班补贴是多少 → 值班补贴 (the subject before the question words).
    if (!text.includes('的')) {
      const asked = CHINESE_ASKS_ABOUT_SUBJECT.exec(text)
      return asked === null || asked.index === 0 ? none : { text: text.slice(0, asked.index), action: false, measure: false }
    }
    const subject = text.slice(text.lastIndexOf('的') + 1)
    const tail = CHINESE_QUESTION_TAIL.exec(subject)
    const head = tail === null ? subject : subject.slice(0, tail.index)
    return head.trim() === '' ? none : { text: head, action: false, measure: false }
  }
  const passive = PASSIVE_FRAME.exec(text)
  if (passive !== null) return { text: passive[1]!, action: false, measure: false }
  // A bare phrase ("max size of a pull request") is its own subject.
  const bare = /^(?:how|what|which|who|whom|whose|where|when|why|is|are|was|were|do|does|did|can|could|should|would|will|may|must|has|have|had|tell|show|give|list|explain|describe|find|i|we|my|our|please)\b/iu.test(text) ? null : ([''] as unknown as RegExpExecArray)
  const frame = QUESTION_FRAME.exec(text) ?? bare
  if (frame === null) return none
  const framed = frame !== bare
  // "What was decided in the design review?": the phrase after the question's verb.
  const participle = PARTICIPLE_FRAME.exec(text)
  const rest = participle === null ? text.slice(frame[0].length) : text.slice(participle[0].length).replace(/^\s*(?:the|a|an)\s+/iu, '')
  const phrase = phraseAt(rest)
  if (phrase.trim() === '') return none
  // "the maximum size of a file": a measure of a thing asks about the thing, and for a figure.
  const of = /^\s+of\s+(?:the\s+|a\s+|an\s+)?/iu.exec(rest.slice(phrase.length))
  const phraseKeywords = extractKeywords(phrase)
  if (of !== null && phraseKeywords.length > 0 && phraseKeywords.every((k) => isGenericNoun(k.text))) {
    const thing = phraseAt(rest.slice(phrase.length + of[0].length))
    // "the maximum size of a file" asks for a figure; "the list of support macros" for the macros.
    if (thing.trim() !== '') return { text: thing, action: false, measure: !phraseKeywords.every((k) => KIND_NOUNS.has(k.text)) }
  }
  // A bare phrase names its subject only as a measure of a thing; else its words are all keywords alike.
  if (!framed) return none
  return { text: phrase, action: /^\s*how\s/iu.test(frame[0]) && /\s(?:i|we|you)\s+$/iu.test(frame[0]), measure: false }
}

/** The words of `text` up to the first preposition, verb or punctuation that ends a noun phrase. */
function phraseAt(text: string): string {
  const end = PHRASE_END.exec(` ${text}`)
  return end === null ? text : text.slice(0, Math.max(0, end.index - 1))
}

/** Whether a set of terms holds a keyword: at least half of its terms (all of a one-term keyword). */
export function keywordTermsMatch(keyword: Keyword, terms: ReadonlySet<string>): boolean {
  const found = keyword.terms.filter((term) => terms.has(term)).length
  if (found >= Math.ceil(keyword.terms.length / 2)) return true
  return keyword.alternatives?.some((alternative) => alternative.every((term) => terms.has(term))) ?? false
}
