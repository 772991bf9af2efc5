// Keyword extraction, sentence splitting and relevance scoring for the built-in local model.
// Deterministic, dependency-free, English plus basic CJK handling (stop-word split runs for
// queries, overlapping character bigrams for matching). Offsets are Unicode code points, like
// the `read` and `search` tools.

const CJK_CHAR = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u
const TOKEN =
  /([\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]+)|((?:(?![\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}])[\p{L}\p{N}])+(?:[._'’-](?:(?![\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}])[\p{L}\p{N}])+)*)/gu

const ENGLISH_STOP_WORDS = new Set(
  (
    'a about above after again against all also am an and any are aren as at be because been before being below ' +
    'between both but by can cannot could couldn did didn do does doesn doing don down during each either else ' +
    'etc ever every few for from further get gets got had hadn has hasn have haven having he her here hers herself ' +
    'him himself his how however i if in into is isn it its itself just let lets like may me might more most much ' +
    'must mustn my myself need no nor not now of off on once one only or other ought our ours ourselves out over own ' +
    'please same shall shan she should shouldn so some such tell than that thats the their theirs them themselves ' +
    'then there these they this those through thus to too under until up upon us very via was wasn we were weren what ' +
    'whats when where whether which while who whom whose why will with won would wouldn yes yet you your yours ' +
    'yourself yourselves explain describe show give find know want s t d ll m re ve'
  ).split(' '),
)

/** Longest first, so 为什么 is cut before 什么. */
const CHINESE_STOP_WORDS = [
  '为什么', '是什么', '有哪些', '怎么样', '请问', '什么', '怎么', '怎样', '如何', '哪些', '哪个', '哪里', '是否',
  '可以', '能否', '一下', '告诉', '我们', '你们', '他们', '这个', '那个', '这些', '那些', '关于', '有关', '以及',
  '还有', '介绍', '说说', '讲讲',
  // Only single characters that rarely start or end a content word; no dictionary here.
  '的', '了', '吗', '呢', '吧', '啊', '是', '和', '与', '及', '或', '在', '我', '你', '请',
].sort((a, b) => b.length - a.length)

export const MAX_QUERY_KEYWORDS = 8

/** Search keywords of a question: stop-words dropped, CJK runs cut at stop-words. */
export function extractKeywords(question: string): string[] {
  const keywords: string[] = []
  for (const match of question.normalize('NFKC').toLowerCase().matchAll(TOKEN)) {
    if (match[1] !== undefined) keywords.push(...cjkQueryTerms(match[1]))
    else if (match[2] !== undefined && isContentWord(match[2])) keywords.push(match[2].replace(/’/g, "'"))
  }
  return [...new Set(keywords)].slice(0, MAX_QUERY_KEYWORDS)
}

function isContentWord(word: string): boolean {
  if (ENGLISH_STOP_WORDS.has(word.replace(/['’]/gu, ''))) return false
  return word.length >= 2 || /^\p{N}$/u.test(word)
}

/** A CJK run cut at stop-words; pieces up to 4 characters stay whole, longer ones are cut in pairs. */
function cjkQueryTerms(run: string): string[] {
  const pieces = cutAtStopWords(run)
  const terms = pieces.flatMap((piece) => (Array.from(piece).length <= 4 ? [piece] : pairsOf(piece)))
  const substantial = terms.filter((term) => Array.from(term).length >= 2)
  return substantial.length > 0 ? substantial : terms
}

function cutAtStopWords(run: string): string[] {
  const pieces: string[] = []
  let current = ''
  let position = 0
  while (position < run.length) {
    const stopWord = CHINESE_STOP_WORDS.find((word) => run.startsWith(word, position))
    if (stopWord !== undefined) {
      if (current !== '') pieces.push(current)
      current = ''
      position += stopWord.length
    } else {
      const char = String.fromCodePoint(run.codePointAt(position) as number)
      current += char
      position += char.length
    }
  }
  if (current !== '') pieces.push(current)
  return pieces
}

/** 编译流程说明 → 编译 流程 说明; an odd last character joins the last pair. */
function pairsOf(piece: string): string[] {
  const chars = Array.from(piece)
  const pairs: string[] = []
  for (let i = 0; i + 1 < chars.length; i += 2) pairs.push(chars[i]! + chars[i + 1]!)
  if (chars.length % 2 === 1) pairs[pairs.length - 1] += chars[chars.length - 1]!
  return pairs
}

// ---------------------------------------------------------------------------------------------
// Matching

/** Terms of a text for matching: stemmed content words and overlapping CJK bigrams. */
export function matchTerms(text: string): string[] {
  const terms: string[] = []
  for (const match of text.normalize('NFKC').toLowerCase().matchAll(TOKEN)) {
    if (match[1] !== undefined) terms.push(...cjkBigrams(match[1]))
    else if (match[2] !== undefined) terms.push(...latinMatchTerms(match[2]))
  }
  return terms
}

/** "cats.md" also matches "cats", "node.js" also "node": the whole token and its parts. */
function latinMatchTerms(token: string): string[] {
  const parts = token.split(/[._'’-]/u).filter((part) => part !== '' && isContentWord(part))
  const whole = isContentWord(token) ? [stem(token)] : []
  return parts.length > 1 ? [...whole, ...parts.map(stem)] : whole
}

function cjkBigrams(run: string): string[] {
  const chars = Array.from(run)
  if (chars.length === 1) return chars
  const bigrams: string[] = []
  for (let i = 0; i + 1 < chars.length; i += 1) bigrams.push(chars[i]! + chars[i + 1]!)
  return bigrams
}

/** A crude suffix stripper: compile / compiled / compiling / compiles meet at "compil". */
function stem(word: string): string {
  if (word.length <= 3) return word
  for (const suffix of ['ations', 'ation', 'ings', 'ing', 'ers', 'ies', 'ied', 'es', 'ed', 'er', 'ly', 's', 'e']) {
    if (word.endsWith(suffix) && word.length - suffix.length >= 3) return word.slice(0, -suffix.length)
  }
  return word
}

export interface KeywordMatcher {
  /** 0 when the text matches no keyword; grows with the number of distinct keywords matched. */
  readonly score: (text: string) => number
  readonly isEmpty: boolean
}

/** Scores texts against keywords: each keyword counts by the share of its terms found. */
export function createKeywordMatcher(keywords: ReadonlyArray<string>): KeywordMatcher {
  const keywordTerms = keywords.map((keyword) => [...new Set(matchTerms(keyword))]).filter((terms) => terms.length > 0)
  const score = (text: string): number => {
    if (keywordTerms.length === 0) return 0
    const counts = new Map<string, number>()
    for (const term of matchTerms(text)) counts.set(term, (counts.get(term) ?? 0) + 1)
    let total = 0
    for (const terms of keywordTerms) {
      const found = terms.filter((term) => counts.has(term)).length
      const share = found / terms.length
      if (share >= 0.5) {
        const repeats = Math.min(3, Math.max(...terms.map((term) => counts.get(term) ?? 0)) - 1)
        total += share + 0.1 * repeats
      }
    }
    return total
  }
  return { score, isEmpty: keywordTerms.length === 0 }
}

export function containsCjk(text: string): boolean {
  return CJK_CHAR.test(text)
}

// ---------------------------------------------------------------------------------------------
// Sentences

export interface Sentence {
  readonly text: string
  /** Code-point offset of the sentence's first character within the split text. */
  readonly offset: number
}

const SENTENCE_END = new Set(['。', '！', '？', '!', '?', '；'])
/** Longer sentences are cut (with "…") so a quote stays a quote, not a page. */
export const MAX_SENTENCE_CHARS = 400

/** Splits at line breaks and sentence punctuation; offsets are code points. */
export function splitSentences(text: string): Sentence[] {
  const chars = Array.from(text)
  const sentences: Sentence[] = []
  let start = -1
  const close = (endExclusive: number): void => {
    if (start === -1) return
    const body = chars.slice(start, endExclusive).join('').trimEnd()
    if (body !== '') sentences.push({ text: clip(body), offset: start })
    start = -1
  }
  for (let i = 0; i < chars.length; i += 1) {
    const char = chars[i]!
    if (char === '\n' || char === '\r') {
      close(i)
      continue
    }
    if (start === -1 && /\s/u.test(char)) continue
    if (start === -1) start = i
    const next = chars[i + 1]
    const endsSentence =
      SENTENCE_END.has(char) || (char === '.' && (next === undefined || /\s/u.test(next)) && !/\d/u.test(chars[i - 1] ?? ''))
    if (endsSentence) close(i + 1)
  }
  close(chars.length)
  return sentences
}

function clip(sentence: string): string {
  const chars = Array.from(sentence)
  return chars.length <= MAX_SENTENCE_CHARS ? sentence : chars.slice(0, MAX_SENTENCE_CHARS - 1).join('') + '…'
}
