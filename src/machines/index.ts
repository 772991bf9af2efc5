// `knowagent/machines`: the turn machine and its pure helpers, for hosts that embed them.
export * from './turn-types.ts'
export * from './turn-contract.ts'
export * from './turn.machine.ts'
export * from './context-accounting.ts'
export * from './compaction-plan.ts'
export * from './tool-call-validation.ts'
export * from './turn-history.ts'
export * from './catalog-refresh.machine.ts'
