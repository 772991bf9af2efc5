import { describe, expect, it } from 'vitest'
import { InvalidConnection, modelIdFor, parseHeaderLines } from './model-connections.ts'

describe('parseHeaderLines', () => {
  it('reads "Name: value" lines, skipping blank ones', () => {
    expect(parseHeaderLines('X-Title: knowagent\n\n  HTTP-Referer: https://example.org  \r\n')).toEqual({ 'X-Title': 'knowagent', 'HTTP-Referer': 'https://example.org' })
    expect(parseHeaderLines('')).toEqual({})
  })

  it.each([
    ['no colon', 'X-Title knowagent'],
    ['an empty value', 'X-Title:'],
    ['a bad name', 'X Title: a'],
    ['a header knowagent sets itself', 'Content-Type: text/plain'],
    ['too many', Array.from({ length: 21 }, (_, i) => `X-H${i}: v`).join('\n')],
  ])('refuses %s', (_name, text) => {
    expect(() => parseHeaderLines(text)).toThrow(InvalidConnection)
  })
})

describe('modelIdFor', () => {
  it.each([
    ['gpt-4o', 'gpt-4o'],
    ['llama3.1:8b', 'llama3.1:8b'],
    ['meta-llama/Llama-3.1-8B-Instruct', 'meta-llama/Llama-3.1-8B-Instruct'],
    ['my model (v2)', 'my-model--v2-'],
    ['--x', 'x'],
    ['***', 'model'],
  ])('%s → %s', (name, id) => {
    expect(modelIdFor(name)).toBe(id)
  })
})
