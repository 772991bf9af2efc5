import { describe, expect, test } from 'vitest'
import { figureOfAnotherSubject, namedOnlyInGeneral, otherPartyInstead, questionFigures } from './subject-checks.ts'
import { analyseQuestion, matchTerms, type Keyword } from './terms.ts'

const keyword = (keywords: ReadonlyArray<Keyword>, text: string): Keyword => keywords.find((k) => k.text === text)!

describe('namedOnlyInGeneral', () => {
  const { keywords } = analyseQuestion('Which solutions engineer is running the Kessler Bau proof of concept?')
  const engineer = keyword(keywords, 'engineer')

  test.each([
    ['assign a solutions engineer to the Kessler Bau proof of concept', true],
    ['Each proof of concept is run by an engineer from the EMEA team.', true],
    ['The solutions engineer on Kessler Bau is Ines Moreau.', false],
    ['Ines Moreau (solutions engineer) runs it; any engineer may join.', false],
    ['The proof of concept starts on Monday.', false],
  ])('%s → %s', (text, general) => {
    expect(namedOnlyInGeneral({ text, thing: engineer, keywords })).toBe(general)
  })

  test('a plural asked for meets its singular: "which countries" and "a country"', () => {
    const question = analyseQuestion('Which countries are on the high-risk travel list?')
    const countries = keyword(question.keywords, 'countries')
    expect(namedOnlyInGeneral({ text: 'Travelling to a country on the high-risk list needs a loaner laptop.', thing: countries, keywords: question.keywords })).toBe(true)
    expect(namedOnlyInGeneral({ text: 'The high-risk countries are listed below.', thing: countries, keywords: question.keywords })).toBe(false)
  })
})

describe('questionFigures', () => {
  test('a number of the question and the word after it', () => {
    expect([...questionFigures(analyseQuestion('Do we have to change our passwords every 90 days?').keywords)]).toEqual(['90', 'days'])
    expect([...questionFigures(analyseQuestion('Who approves a purchase of 30000 USD?').keywords)]).toEqual(['30000'])
    expect([...questionFigures(analyseQuestion('How often do we change passwords?').keywords)]).toEqual([])
  })
})

describe('otherPartyInstead', () => {
  const { keywords } = analyseQuestion('Do we give customers a discount if they pay their invoices early?')
  const check = (text: string) => {
    const terms = new Set(matchTerms(text))
    return otherPartyInstead({ keywords, matched: (k) => k.terms.some((t) => terms.has(t)), text: terms })
  }

  test('a passage naming another party than the one asked about', () => {
    expect(check('When a supplier offers an early payment discount of at least 2%, we take it.')).toMatchObject({ asked: { text: 'customers' }, named: 'supplier' })
  })

  test('the party asked about, or no party at all, is no other party', () => {
    expect(check('Customers who pay within 10 days get a 2% discount.')).toBeUndefined()
    expect(check('Invoices paid within 10 days get a 2% discount.')).toBeUndefined()
  })
})

describe('figureOfAnotherSubject', () => {
  const { keywords } = analyseQuestion("How much does Brightdesk's helpdesk cost per agent?")
  const required = keywords.filter((k) => ['helpdesk', 'cost', 'agent'].includes(k.text))
  const lacking = (sentences: string[], context: string[] = []) =>
    figureOfAnotherSubject({ sentences, figure: /\d/u, required, context: new Set(context), keywords }).map((k) => k.text)

  test('a figure in a sentence about a subject of its own is not the figure asked for', () => {
    expect(lacking(['Brightdesk bundles its knowledge module with its helpdesk.', 'The module alone costs 18 USD per agent per month.'])).toEqual(['helpdesk'])
  })

  test('a sentence without a subject of its own, or with the question\'s, continues the passage', () => {
    expect(lacking(['Brightdesk sells a helpdesk.', 'It costs 18 USD per agent per month.'])).toEqual([])
    expect(lacking(['Brightdesk sells a helpdesk.', 'Allow 18 USD per agent per month.'])).toEqual([])
    expect(lacking(['Brightdesk sells a helpdesk.', 'The helpdesk costs 18 USD per agent per month.'])).toEqual([])
    expect(lacking(['Brightdesk bundles a knowledge module.', 'The module alone costs 18 USD per agent per month.'], ['helpdesk'])).toEqual([])
  })

  test('one sentence, or none with a figure, lacks nothing here', () => {
    expect(lacking(['The module alone costs 18 USD per agent per month.'])).toEqual([])
    expect(lacking(['Brightdesk bundles its module with its helpdesk.', 'The module is popular with agents.'])).toEqual([])
  })
})
