// The closing line CI reads counts a file that failed outside its tests (a beforeAll that threw
// leaves every test of the file skipped) as failed, not as "0 failed".
import { afterEach, expect, it, vi } from 'vitest'
import type { TestModule } from 'vitest/node'
import SummaryReporter from '../support/summary-reporter.ts'

type State = 'passed' | 'failed' | 'skipped'
const moduleOf = ({ tests, errors = 0, suiteErrors = 0, state }: { tests: State[]; errors?: number; suiteErrors?: number; state: 'passed' | 'failed' }) =>
  ({
    state: () => state,
    errors: () => Array.from({ length: errors }, () => ({ message: 'no chromium' })),
    children: {
      allTests: function* () {
        for (const test of tests) yield { result: () => ({ state: test }) }
      },
      allSuites: function* () {
        yield { errors: () => Array.from({ length: suiteErrors }, () => ({ message: 'hook failed' })) }
      },
    },
  }) as unknown as TestModule

const closingLine = (modules: TestModule[], unhandled: unknown[] = []) => {
  const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
  new SummaryReporter().onTestRunEnd(modules, unhandled)
  const lines = write.mock.calls.map(([text]) => String(text)).join('').trim().split('\n')
  return lines.at(-1)
}

afterEach(() => vi.restoreAllMocks())

it('counts the tests of each file', () => {
  expect(closingLine([moduleOf({ tests: ['passed', 'failed', 'skipped'], state: 'failed' })])).toBe('1 passed, 1 failed, 1 skipped')
})

it('a file whose beforeAll threw is a failure although none of its tests ran', () => {
  expect(closingLine([moduleOf({ tests: ['skipped', 'skipped'], errors: 1, state: 'failed' })])).toBe('0 passed, 1 failed, 2 skipped')
  expect(closingLine([moduleOf({ tests: ['skipped'], suiteErrors: 1, state: 'failed' })])).toBe('0 passed, 1 failed, 1 skipped')
  expect(closingLine([moduleOf({ tests: [], state: 'failed' })])).toBe('0 passed, 1 failed, 0 skipped')
})

it('an unhandled error is a failure', () => {
  expect(closingLine([moduleOf({ tests: ['passed'], state: 'passed' })], [new Error('late')])).toBe('1 passed, 1 failed, 0 skipped')
})
