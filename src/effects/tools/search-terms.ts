// Splits a search query into terms: the whole phrase first, then words (Latin) and CJK runs.

const WORD = /[\p{L}\p{N}_][\p{L}\p{N}_'.-]*/gu
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u

export function searchTerms(query: string): string[] {
  const phrase = query.trim().replace(/\s+/g, ' ')
  if (phrase === '') return []
  const terms = new Set<string>([phrase.toLowerCase()])
  for (const match of phrase.matchAll(WORD)) {
    const word = match[0].replace(/[.'-]+$/, '')
    if (CJK.test(word)) {
      for (const run of word.split(/(?<=[\p{Script=Han}])(?=[^\p{Script=Han}])|(?<=[^\p{Script=Han}])(?=[\p{Script=Han}])/u)) {
        if (run.length >= 2) terms.add(run.toLowerCase())
      }
    } else if (word.length >= 2) {
      terms.add(word.toLowerCase())
    }
  }
  return [...terms].slice(0, 16)
}
