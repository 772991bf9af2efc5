import { describe, expect, test } from 'vitest'
import { normaliseQuestionPhrases } from './synonyms.ts'
import { alternativesOf, analyseQuestion, keywordTermsMatch, matchTerms, pairTerms } from './terms.ts'

/** Whether the question's keyword `word` is found in the text (by its word forms or the words of its group), as passages are matched: words and pairs of words. */
function keywordFound(question: string, word: string, text: string): boolean {
  const keyword = analyseQuestion(question).keywords.find((k) => k.text === word)
  if (keyword === undefined) throw new Error(`no keyword ${word} in ${question}`)
  return keywordTermsMatch(keyword, new Set([...matchTerms(text), ...pairTerms(text)]))
}

describe('synonyms', () => {
  test.each([
    ['How long are payroll records kept?', 'kept', 'Payroll records are retained for 10 years.'],
    ['What is the cap on the pension match?', 'cap', 'Matching up to a maximum of 6 %.'],
    ['How many vacation days do I get?', 'vacation', 'You get 27 days of annual leave.'],
    ['Do clients get a discount?', 'clients', 'Customers on annual plans get 10 % off.'],
    ['How many days can I carry over?', 'days', 'Five days can be carried over.'],
    ['Can five days be carried over?', 'five', 'Up to 5 unused days can be carried over.'],
    ['When do I need a note from the doctor?', 'doctor', "A doctor's certificate is needed from the fourth day."],
  ])('%j: “%s” is found in %j', (question, word, text) => {
    expect(keywordFound(question, word, text)).toBe(true)
  })

  test.each([
    ['How long are payroll records kept?', 'payroll', 'Tax records are retained for 10 years.'],
    ['When does the dental insurance start?', 'dental', 'Health insurance starts on the first day.'],
    ['How much does a laptop cost?', 'laptop', 'A monitor costs 200 EUR.'],
  ])('%j: “%s” is not found in %j (a word of another meaning is no synonym)', (question, word, text) => {
    expect(keywordFound(question, word, text)).toBe(false)
  })

  test('a multi-word alternative needs all its words', () => {
    expect(keywordFound('How many vacation days?', 'vacation', 'Annual planning happens in May.')).toBe(false)
  })

  test('phrasal verbs of a question are read as the word they stand for, and sent to search as it', () => {
    expect(normaliseQuestionPhrases('Who signs off on a refund?')).toBe('Who approve a refund?')
    expect(normaliseQuestionPhrases('How long do we hold on to invoices?')).toBe('How long do we keep invoices?')
    expect(analyseQuestion('Who has to sign off on expenses?').keywords.map((k) => k.text)).toEqual(['approve', 'expenses'])
    expect(keywordFound('Who has to sign off on expenses?', 'approve', 'Your manager gives approval.')).toBe(true)
  })

  test('names (capitalised, acronyms) get no alternatives', () => {
    expect(analyseQuestion('What does Client Connect cost?').keywords.find((k) => k.text === 'client')?.alternatives).toBeUndefined()
    expect(alternativesOf('client')).not.toEqual([])
  })
})
