// Extractive summaries for compile jobs and the local model: the leading sentence plus the
// sentences whose terms are most frequent in the whole text (Luhn-style), in document order,
// within a character budget. Deterministic: same text and budget, same summary. Never writes a
// word that is not in the source except "…" where a sentence had to be cut.
import { matchTerms, splitSentences, type Sentence } from './text-relevance.ts'

export function summariseExtractively({ text, maxChars }: { readonly text: string; readonly maxChars: number }): string {
  const budget = Math.max(1, Math.floor(maxChars))
  const normalised = text.replace(/\r\n?/g, '\n').trim()
  if (codePointLength(normalised) <= budget) return normalised
  const sentences = splitSentences(normalised)
  const [leading] = sentences
  if (leading === undefined) return ''
  if (codePointLength(leading.text) >= budget) return cutToBudget(leading.text, budget)

  const frequencies = termFrequencies(sentences)
  const ranked = sentences
    .slice(1)
    .map((sentence, i) => ({ sentence, position: i + 1, score: scoreSentence(sentence, frequencies) }))
    .filter((candidate) => candidate.score > 0)
    .sort((a, b) => b.score - a.score || a.position - b.position)

  const chosen = new Set<number>([0])
  let used = codePointLength(leading.text)
  for (const candidate of ranked) {
    const cost = codePointLength(candidate.sentence.text) + 1 // +1 for the joining space
    if (used + cost > budget) continue
    chosen.add(candidate.position)
    used += cost
  }
  return sentences
    .filter((_, position) => chosen.has(position))
    .map((sentence) => sentence.text)
    .join(' ')
}

function termFrequencies(sentences: ReadonlyArray<Sentence>): Map<string, number> {
  const frequencies = new Map<string, number>()
  for (const sentence of sentences) {
    for (const term of new Set(matchTerms(sentence.text))) frequencies.set(term, (frequencies.get(term) ?? 0) + 1)
  }
  return frequencies
}

/** Mean document frequency of the sentence's distinct terms seen more than once. */
function scoreSentence(sentence: Sentence, frequencies: ReadonlyMap<string, number>): number {
  const terms = [...new Set(matchTerms(sentence.text))]
  if (terms.length === 0) return 0
  const weight = terms.reduce((sum, term) => sum + Math.max(0, (frequencies.get(term) ?? 0) - 1), 0)
  return weight / Math.sqrt(terms.length)
}

function cutToBudget(text: string, budget: number): string {
  const chars = Array.from(text)
  return chars.length <= budget ? text : chars.slice(0, Math.max(0, budget - 1)).join('') + '…'
}

function codePointLength(text: string): number {
  let count = 0
  for (const _ of text) count += 1
  return count
}
