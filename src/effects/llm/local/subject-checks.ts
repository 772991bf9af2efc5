// Whether a passage that shares the question's words is about what the question asks, not about a
// neighbour of it. Each check is a reason that holds for any corpus (judgeRelevance in ranking.ts
// applies them): the thing asked for named only in general, only the question's own figure
// shared, a figure said of another subject, another party than the one asked about.
import { isGenericNoun, PARTIES } from './word-lists.ts'
import { keywordTermsMatch, matchTerms, pairTerms, type Keyword } from './terms.ts'

/** Words that introduce a thing in general, not a particular one: "*a* solutions engineer", "*each* system", "*any* country". */
const INDEFINITE = new Set(['a', 'an', 'any', 'each', 'every', 'some', 'no', 'another', 'one', 'either', 'neither'])
const WORD = /[\p{L}\p{N}]+(?:[-'’][\p{L}\p{N}]+)*/gu

const termsOf = (text: string): Set<string> => new Set([...matchTerms(text), ...pairTerms(text)])

/**
 * Whether the text names the thing a question asks to identify ("*Which countries* …", "Who is
 * the system *owner* …") only in general: every time after "a", "any", "each" … — "a country on
 * the high-risk list" does not say which countries are on it, "each system has a system owner"
 * not who owns Salesforce. Words of the question between the determiner and the thing ("a
 * *solutions* engineer") are passed over. False when the text does not name it at all.
 */
export function namedOnlyInGeneral({ text, thing, keywords }: { readonly text: string; readonly thing: Keyword; readonly keywords: ReadonlyArray<Keyword> }): boolean {
  const words = [...text.matchAll(WORD)].map((match) => match[0].toLowerCase())
  const terms = words.map(termsOf) // each word's terms once
  const isKeyword = (at: number) => terms[at]!.size > 0 && keywords.some((k) => keywordTermsMatch(k, terms[at]!))
  let mentions = 0
  for (const i of words.keys()) {
    if (!keywordTermsMatch(thing, terms[i]!)) continue
    mentions += 1
    let before = i - 1
    while (before >= 0 && before >= i - 3 && isKeyword(before)) before -= 1
    if (before < 0 || !INDEFINITE.has(words[before]!)) return false
  }
  return mentions > 0
}

/** A sentence that opens with a subject of its own: a determiner and a noun ("*The module* alone costs …"). */
const OWN_SUBJECT = /^\W*(?:the|this|that|these|those|our|its|their)\s+(?:(?:other|same|new|old|first|last|next|whole|main|only)\s+)?([\p{L}-]+)/iu

/**
 * The question's key terms (`required`) missing from a sentence that gives a figure about a subject
 * of its own: it opens with a determiner and a noun the question does not use. "Brightdesk bundles
 * its knowledge module with its helpdesk. The module alone costs 18 USD per agent per month."
 * holds *helpdesk* and a price, but the price is the module's. A figure's sentence without a
 * subject of its own ("Allow 5 business days …", "On the 25th …", "It costs …") continues the
 * passage's subject; headings and the file name (`context`) count for every sentence. Empty when
 * a figure's sentence lacks nothing, or no sentence gives a figure.
 */
export function figureOfAnotherSubject({
  sentences,
  figure,
  required,
  context,
  keywords,
}: {
  readonly sentences: ReadonlyArray<string>
  readonly figure: RegExp
  readonly required: ReadonlyArray<Keyword>
  readonly context: ReadonlySet<string>
  readonly keywords: ReadonlyArray<Keyword>
}): Keyword[] {
  if (sentences.length < 2 || required.length === 0) return []
  let fewest: Keyword[] | undefined
  for (const sentence of sentences) {
    if (!figure.test(sentence)) continue
    const noun = OWN_SUBJECT.exec(sentence)?.[1]
    const nounTerms = termsOf(noun ?? '')
    const ownSubject = noun !== undefined && nounTerms.size > 0 && !isGenericNoun(noun.toLowerCase()) && !keywords.some((k) => keywordTermsMatch(k, nounTerms))
    if (!ownSubject) return []
    const terms = termsOf(sentence)
    const lacking = required.filter((k) => !keywordTermsMatch(k, terms) && !keywordTermsMatch(k, context))
    if (fewest === undefined || lacking.length < fewest.length) fewest = lacking
  }
  return fewest ?? []
}

/**
 * The figures the question gives, with their units: each keyword that is a number and the one
 * right after it ("every *90 days*", "over *10 %*").
 */
export function questionFigures(keywords: ReadonlyArray<Keyword>): Set<string> {
  const figures = new Set<string>()
  keywords.forEach((keyword, i) => {
    if (!/^\p{N}+(?:[.,]\p{N}+)?$/u.test(keyword.text)) return
    figures.add(keyword.text)
    const unit = keywords[i + 1]
    if (unit !== undefined && !unit.proper) figures.add(unit.text)
  })
  return figures
}

/** The parties a rule is for: a document about what suppliers get does not say what customers get. */
const isParty = (keyword: Keyword): boolean => keyword.terms.length === 1 && PARTIES.has(keyword.terms[0]!)

/**
 * A party the question asks about (customers, contractors, suppliers …) that the passage does not
 * name, while it names another one: "When a supplier offers an early payment discount …" is no
 * answer to whether customers get a discount for paying early. The party asked about, or undefined.
 */
export function otherPartyInstead({
  keywords,
  matched,
  text,
}: {
  readonly keywords: ReadonlyArray<Keyword>
  readonly matched: (keyword: Keyword) => boolean
  readonly text: ReadonlySet<string>
}): { readonly asked: Keyword; readonly named: string } | undefined {
  const asked = keywords.find((k) => isParty(k) && !matched(k))
  if (asked === undefined) return undefined
  const ownTerms = new Set(keywords.flatMap((k) => [...k.terms, ...(k.alternatives ?? []).flat()]))
  const named = [...text].find((term) => PARTIES.has(term) && !ownTerms.has(term))
  return named === undefined ? undefined : { asked, named }
}
