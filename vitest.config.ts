import { defineConfig } from 'vitest/config'

export default defineConfig({
  // the project's own `knowagent/*` imports (docs/examples) load the sources, not dist/ (package.json `exports`)
  ssr: { resolve: { conditions: ['knowagent-source'] } },
  test: {
    reporters: ['default', './tests/support/summary-reporter.ts'],
    // Three workers on the two-core machine (vitest's default there is one): most files wait on
    // PostgreSQL, Chromium or a child process, and the others run meanwhile (measured: one worker
    // ~600 s, two ~305 s, three ~290 s; the longest files are split so that three can share them).
    maxWorkers: 3,
    // A worker keeps the modules it loaded from one test file to the next (the app's graph costs
    // ~1 s to import): files must leave no global state behind (timers, listeners, stubs).
    isolate: false,
    testTimeout: 20_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['src/**/*.test.ts', 'src/**/*.test.tsx', 'views/**/*.test.ts', 'views/**/*.test.tsx', 'tests/unit/**/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'model', include: ['tests/model/**/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'cli', include: ['tests/cli/**/*.test.ts'], testTimeout: 60_000 },
      },
      {
        extends: true,
        test: {
          name: 'db',
          include: ['tests/db/**/*.test.ts'],
          globalSetup: ['tests/support/postgres-global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'http',
          include: ['tests/http/**/*.test.ts'],
          globalSetup: ['tests/support/postgres-global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'faults',
          include: ['tests/faults/**/*.test.ts'],
          globalSetup: ['tests/support/postgres-global-setup.ts'],
          testTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'browser',
          include: ['tests/browser/**/*.test.ts'],
          globalSetup: ['tests/support/postgres-global-setup.ts'],
          testTimeout: 60_000,
        },
      },
    ],
  },
})
