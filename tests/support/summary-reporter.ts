// Prints each project's wall time (first file started → last file ended; projects overlap, so they
// do not add up to the run) and the busy time of its files, then one plain closing line
// ("N passed, N failed, N skipped") that CI reads; a file that failed outside its tests counts as failed. The suite's budget is in README.md.
import type { Reporter, TestModule } from 'vitest/node'

interface Span {
  start: number
  end: number
  files: number
  busyMs: number
}

export default class SummaryReporter implements Reporter {
  private readonly started = performance.now()
  private readonly spans = new Map<string, Span>()

  onTestModuleStart(module: TestModule) {
    const name = module.project.name
    const span = this.spans.get(name) ?? { start: performance.now(), end: performance.now(), files: 0, busyMs: 0 }
    this.spans.set(name, span)
  }

  onTestModuleEnd(module: TestModule) {
    const span = this.spans.get(module.project.name)
    if (!span) return
    const diagnostic = module.diagnostic()
    span.end = performance.now()
    span.files += 1
    span.busyMs += diagnostic.prepareDuration + diagnostic.collectDuration + diagnostic.setupDuration + diagnostic.duration
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>) {
    let passed = 0
    let failed = 0
    let skipped = 0
    for (const module of testModules) {
      let failedHere = 0
      for (const test of module.children.allTests()) {
        const state = test.result().state
        if (state === 'passed') passed++
        else if (state === 'failed') failedHere++
        else skipped++
      }
      // A file or a suite that failed outside its tests (a syntax error, a beforeAll that threw, e.g.
      // no Chromium) leaves its tests skipped: each such error is a failure of its own.
      for (const suite of [module, ...module.children.allSuites()]) failedHere += suite.errors().length
      if (failedHere === 0 && module.state() === 'failed') failedHere = 1
      failed += failedHere
    }
    failed += unhandledErrors.length
    const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
    const rows = [...this.spans].sort(([, a], [, b]) => a.start - b.start)
    if (rows.length > 0) {
      process.stdout.write('\nproject   files   wall (first start → last end)   busy (sum of its files)\n')
      for (const [name, span] of rows) {
        process.stdout.write(`${name.padEnd(9)} ${String(span.files).padStart(5)}   ${seconds(span.end - span.start).padStart(8)} (${seconds(span.start - this.started)} → ${seconds(span.end - this.started)})   ${seconds(span.busyMs).padStart(8)}\n`)
      }
      process.stdout.write(`whole run ${seconds(performance.now() - this.started)}\n`)
    }
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`)
  }
}
