// `knowagent/testing`: model-based lifecycle testing for hosts that embed the machines. Paths of
// each machine's graph (per input profile), `replay` through the real machine with your actors and
// the contract checked, a coverage report, and the scripted model and provider the project uses.
// No test runner is imported: results are returned and violations thrown, for any runner.
export * from './paths.ts'
export * from './turn-paths.ts'
export * from './compile-job-paths.ts'
export * from './catalog-refresh-paths.ts'
export { type ActorRun, type ContractRule, ContractViolation } from './path-runner.ts'
export { replay, type ReplayOptions, type ReplayResult } from './replay.ts'
export { coverageOf, type CoverageReport, definedStateNodes, definedTransitions, formatCoverage, type Reached } from './coverage.ts'
export { createResourceTracker, type ResourceTracker } from './resources.ts'
export * from './scripted-model.ts'
export * from './scripted-provider.ts'
