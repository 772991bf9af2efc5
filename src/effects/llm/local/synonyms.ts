// Ordinary workplace English says one thing in several words: a question asks how long records
// are *kept*, the policy says they are *retained*; it asks who *signs off*, the runbook says who
// *approves*. The local model matches a question's keyword also by the words of its group here —
// a short, general thesaurus of policy, process and support vocabulary, not a list of any
// corpus's phrasings. A group holds words that can stand for each other in a question about a
// document; a word with several senses (hold, charge, cover) is left out or put where its
// workplace sense is the usual one. Multi-word entries ("annual leave") match when all their
// words are there.
import { stem } from './stem.ts'

const GROUPS: ReadonlyArray<string> = [
  'keep|retain|store|preserve|archive',
  'delete|remove|erase|destroy|purge',
  'approve|approval|authorise|authorize|sign-off|signoff|permission',
  'limit|cap|ceiling|maximum|max',
  'minimum|min|least|floor',
  'cost|price|fee|charge|pricing',
  'pay|paid|salary|wage|wages|compensation',
  'refund|reimburse|repay|reimbursement|money back',
  'vacation|holiday|annual leave|pto',
  'sick|ill|illness|sickness',
  'doctor|physician|gp',
  'maternity|parental leave|birth parent',
  'paternity|parental leave',
  'employee|staff|worker|personnel|colleague',
  'customer|client',
  'contractor|freelancer|consultant',
  'manager|supervisor|boss|line manager',
  'start|begin|commence|kick off|first day',
  'end|finish|expire|expiry',
  'die|dies|died|death|passes away|bereavement',
  'reply|respond|response|answer',
  'quick|fast|soon|speed',
  'ask|request|apply',
  'send|submit',
  'owner|responsible|accountable|in charge|owns',
  'fix|resolve|repair|remedy',
  'problem|issue|fault|error|bug',
  'wrong|incorrect|invalid|failed',
  'outage|downtime|incident',
  'meeting|sync',
  'decide|decision|agree|agreed|conclude',
  'deadline|due|cut-off|cutoff|by when',
  'target|goal|objective|slo',
  'receipt|invoice',
  'note|certificate',
  'laptop|computer|notebook',
  'laptop|device',
  'phone|device',
  'allow|allowed|permit|permitted|allowlist|allow-list',
  'travel|trip|journey',
  'flight|fly|plane',
  'hotel|accommodation|lodging',
  'meal|dinner',
  'meal|lunch',
  'meal|food',
  'car|vehicle',
  'remote|telework|work from home',
  'hire|recruit|onboard|joiner|new starter',
  'leave|absence',
  'notice|warning|in advance',
  'password|credential|login|sign-in|sign in',
  'log in|sign in|login|sign-in',
  'cancel|cancellation|terminate',
  'renew|renewal|extend',
  'upgrade|move up',
  'discount|reduction',
  'free|no charge|no cost|complimentary',
  'year|annual|yearly|annually',
]

/** Phrasal verbs and idioms of a question, read as the one word that names them ("sign off on" → approve). */
const QUESTION_PHRASES: ReadonlyArray<readonly [RegExp, string]> = [
  [/\bsign(?:s|ed|ing)?\s+off(?:\s+on)?\b/giu, 'approve'],
  [/\bhold(?:s|ing)?\s+on\s+to\b|\bheld\s+on\s+to\b/giu, 'keep'],
  [/\bhang(?:s|ing)?\s+on\s+to\b|\bhung\s+on\s+to\b/giu, 'keep'],
  [/\b(?:pay|pays|paid|paying)\s+(?:\w+\s+)?back\b/giu, 'reimburse'],
  [/\bget\s+(?:my|our|their|the)?\s*money\s+back\b/giu, 'refund'],
  [/\bkick(?:s|ed|ing)?\s+off\b/giu, 'start'],
  [/\bfind\s+out\b/giu, 'learn'],
  [/\bin\s+charge\s+of\b/giu, 'responsible for'],
  [/\bup\s+to\s+date\b/giu, 'current'],
]

/** Number words a question may spell out where a document writes digits. */
const NUMBER_WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve']

/** How terms.ts reads a text: its stemmed words, and its adjacent words joined pairwise. */
export interface TermReaders {
  readonly matchTerms: (text: string) => string[]
  readonly pairTerms: (text: string) => string[]
}

/**
 * The lookup of a one-term keyword's other ways of saying it (its stem → each other entry of its
 * groups, as the terms that must all be there), built on first use with terms.ts's readers (they
 * are passed in, so this file does not import terms.ts, which imports it).
 */
export function makeAlternatives({ matchTerms, pairTerms }: TermReaders): (term: string) => ReadonlyArray<ReadonlyArray<string>> {
  // An entry's terms: its one word's stem, or its words joined pairwise ("annual leave" → annualleav), as passages' pair terms are.
  const termsOf = (entry: string): string[] => {
    const words = matchTerms(entry.replace(/-/gu, ''))
    // "time off" without its stop-word is "time": an entry that loses a word says something else.
    if (words.length < entry.trim().split(/\s+/u).length) return []
    return words.length <= 1 ? words : pairTerms(entry)
  }
  let table: Map<string, Array<ReadonlyArray<string>>> | undefined
  const build = () => {
    const built = new Map<string, Array<ReadonlyArray<string>>>()
    for (const group of GROUPS) {
      const entries = group.split('|').map(termsOf).filter((terms) => terms.length > 0)
      for (const entry of entries) {
        if (entry.length !== 1) continue
        const key = entry[0]!
        const known = built.get(key) ?? []
        for (const other of entries) if (other.join(' ') !== key && !known.some((k) => k.join(' ') === other.join(' '))) known.push(other)
        built.set(key, known)
      }
    }
    NUMBER_WORDS.forEach((word, digit) => built.set(stem(word), [[String(digit)]]))
    return built
  }
  return (term) => (table ??= build()).get(term) ?? []
}

/** The question with its phrasal verbs read as one word ("Who signs off on …" → "Who approve …"). */
export function normaliseQuestionPhrases(question: string): string {
  return QUESTION_PHRASES.reduce((text, [pattern, word]) => text.replace(pattern, word), question)
}
