// Shared by the parser tests: fixture files, and assertions that name what was expected.
import { readFileSync } from 'node:fs'
import { expect } from 'vitest'
import type { ParseErrorCode, ParseOutcome } from '../../src/effects/workspace/parse/index.ts'

export const FIXTURES = new URL('../fixtures/documents/', import.meta.url)
export const SAMPLES = new URL('../../samples/', import.meta.url)

export const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(new URL(name, FIXTURES)))
export const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text)

export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

export const expectText = (outcome: ParseOutcome): string => {
  if (!outcome.ok) throw new Error(`expected a parsed text, got ${outcome.code}: ${outcome.error}`)
  return outcome.text
}

export const expectFailure = (outcome: ParseOutcome, code: ParseErrorCode): string => {
  if (outcome.ok) throw new Error(`expected ${code}, got text ${JSON.stringify(outcome.text.slice(0, 80))}`)
  expect(outcome.code).toBe(code)
  return outcome.error
}
