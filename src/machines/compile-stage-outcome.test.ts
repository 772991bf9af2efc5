import { describe, expect, it } from 'vitest'
import type { ActorFailure, ParsedFile } from './compile-job-contract.ts'
import { classifyBegin, classifyParse, classifyPublish, classifyStep } from './compile-stage-outcome.ts'

const failure = (code: string): ActorFailure => ({ ok: false, code, message: `${code}!`, retryable: true })
const file = (name: string, readable: boolean): ParsedFile => ({ nodeId: name, uri: `kb://users/a/${name}`, name, readable })

describe('one classification of what a stage reported', () => {
  it.each([
    ['begin', classifyBegin({ ok: true }), { kind: 'begun' }],
    ['begin', classifyBegin(failure('cancelled')), { kind: 'cancelled' }],
    ['begin', classifyBegin(failure('claim_refused')), { kind: 'failed', failure: failure('claim_refused') }],
    ['publish', classifyPublish({ ok: true, artifacts: ['kb://users/a/.overview.md'] }), { kind: 'published', artifacts: ['kb://users/a/.overview.md'] }],
    ['publish', classifyPublish(failure('cancelled')), { kind: 'cancelled' }],
    ['publish', classifyPublish(failure('artifact_conflict')), { kind: 'failed', failure: failure('artifact_conflict') }],
  ])('%s: %j', (_, outcome, expected) => {
    expect(outcome).toEqual(expected)
  })

  it('parse: nothing readable (or no file at all) is its own kind; one readable file is enough', () => {
    expect(classifyParse({ ok: true, files: [file('a', false), file('b', true)] })).toEqual({ kind: 'parsed', files: [file('a', false), file('b', true)] })
    expect(classifyParse({ ok: true, files: [file('a', false)] })).toEqual({ kind: 'nothingReadable', files: [file('a', false)] })
    expect(classifyParse({ ok: true, files: [] })).toEqual({ kind: 'nothingReadable', files: [] })
    expect(classifyParse(failure('database'))).toEqual({ kind: 'failed', failure: failure('database') })
  })

  it('a model step: within the calls left it is written, past them over budget; a cached step costs none', () => {
    expect(classifyStep({ ok: true, text: 'S', calls: 1, cached: false }, 1)).toEqual({ kind: 'written', text: 'S', calls: 1 })
    expect(classifyStep({ ok: true, text: 'S', calls: 0, cached: true }, 0)).toEqual({ kind: 'written', text: 'S', calls: 0 })
    expect(classifyStep({ ok: true, text: 'S', calls: 2, cached: false }, 1)).toEqual({ kind: 'overBudget', calls: 2 })
    // a step cannot be cancelled by the row: only begin and publish read it
    expect(classifyStep(failure('cancelled'), 3)).toEqual({ kind: 'failed', failure: failure('cancelled') })
  })
})
