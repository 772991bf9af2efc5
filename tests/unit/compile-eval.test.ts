// The local model's compile pages over the development corpora of `npm run eval:compile`
// (tests/eval/compile/): the structural properties a person relies on, not the tuned fact scores.
// Regression (issue 35): the overview listed first sentences ("Present: …") and the abstract
// strung those lines together twice.
import { describe, expect, test } from 'vitest'
import { abstractSentencesOk, compileFolder, DEV_CORPORA_DIR, loadExpectations, repeatedLines, sentencesOf } from '../eval/compile/evaluate.ts'
import { join } from 'node:path'

const corpora = loadExpectations(DEV_CORPORA_DIR)

describe.each(corpora.map((corpus) => [corpus.folder, corpus] as const))('the local compile pages of %s', (folder, corpus) => {
  const compiled = compileFolder({ dir: join(DEV_CORPORA_DIR, folder), folder })

  test('the overview names every file', async () => {
    const { overview } = await compiled
    for (const file of corpus.files ?? []) expect(overview.toLowerCase()).toContain(file.toLowerCase())
  })

  test('no line of the overview or the abstract, and no sentence of the abstract, comes twice', async () => {
    const { overview, abstract } = await compiled
    expect(repeatedLines(overview)).toEqual([])
    expect(repeatedLines(abstract, { sentences: true })).toEqual([])
  })

  test('the abstract is three to five sentences, without form lines', async () => {
    const { abstract } = await compiled
    expect(abstractSentencesOk(sentencesOf(abstract).length), abstract).toBe(true)
    expect(abstract).not.toMatch(/\b(?:Present|Attendees|Apologies):/u)
  })
})
