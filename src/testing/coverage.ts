// Which state nodes and transitions of a machine's definition a set of replays reached, so a CI
// can require all of them.
import { getStateNodes as getAllStateNodes } from '@xstate/graph'
import { type AnyStateMachine, type AnyStateNode, type AnyTransitionDefinition, getStateNodes, type StateValue } from 'xstate'

/** What one replay reached: state node ids and transition keys (`source —event#index`). */
export interface Reached {
  readonly stateNodes: ReadonlySet<string>
  readonly transitions: ReadonlySet<string>
}

export interface CoverageReport {
  readonly machine: string
  readonly stateNodes: { readonly total: number; readonly reached: number; readonly missing: ReadonlyArray<string> }
  readonly transitions: { readonly total: number; readonly reached: number; readonly missing: ReadonlyArray<string> }
  /** Every state node and every transition reached. */
  readonly complete: boolean
}

function transitionKey({ source, eventType, index }: { source: AnyStateNode; eventType: string; index: number }): string {
  return `${source.id} —${eventType || '(always)'}#${index}`
}

/** The key of a transition xstate reports as taken (inspection `@xstate.microstep`). */
export function keyOfTaken(transition: AnyTransitionDefinition): string {
  const source = transition.source
  const list = transition.eventType === '' ? (source.always ?? []) : (source.transitions.get(transition.eventType) ?? [])
  return transitionKey({ source, eventType: transition.eventType, index: list.indexOf(transition) })
}

function allNodes(machine: AnyStateMachine): AnyStateNode[] {
  return [machine.root, ...getAllStateNodes(machine.root)]
}

export function definedStateNodes(machine: AnyStateMachine): string[] {
  return allNodes(machine).map((node) => node.id)
}

export function definedTransitions(machine: AnyStateMachine): string[] {
  return allNodes(machine).flatMap((source) => [
    ...[...source.transitions.entries()].flatMap(([eventType, list]) => list.map((_, index) => transitionKey({ source, eventType, index }))),
    ...(source.always ?? []).map((_, index) => transitionKey({ source, eventType: '', index })),
  ])
}

/** The ids of the state nodes active in `value` (ancestors included). */
export function activeStateNodes(machine: AnyStateMachine, value: StateValue): string[] {
  return getStateNodes(machine.root, value).map((node) => node.id)
}

/** The ids of the actors the active state nodes of `value` invoke. */
export function invokedIn(machine: AnyStateMachine, value: StateValue): string[] {
  return getStateNodes(machine.root, value).flatMap((node) => node.invoke.map((invoke) => invoke.id))
}

/** What `reached` (the results of `replay`) covered of `machine`'s definition. */
export function coverageOf(machine: AnyStateMachine, reached: Iterable<Reached>): CoverageReport {
  const stateNodes = new Set<string>()
  const transitions = new Set<string>()
  for (const one of reached) {
    for (const id of one.stateNodes) stateNodes.add(id)
    for (const key of one.transitions) transitions.add(key)
  }
  const definedNodes = definedStateNodes(machine)
  const defined = definedTransitions(machine)
  const missingNodes = definedNodes.filter((id) => !stateNodes.has(id))
  const missingTransitions = defined.filter((key) => !transitions.has(key))
  return {
    machine: machine.id,
    stateNodes: { total: definedNodes.length, reached: definedNodes.length - missingNodes.length, missing: missingNodes },
    transitions: { total: defined.length, reached: defined.length - missingTransitions.length, missing: missingTransitions },
    complete: missingNodes.length === 0 && missingTransitions.length === 0,
  }
}

/** e.g. `turn: 21/21 state nodes, 48/48 transitions` and what is missing, one per line. */
export function formatCoverage(report: CoverageReport): string {
  return [
    `${report.machine}: ${report.stateNodes.reached}/${report.stateNodes.total} state nodes, ${report.transitions.reached}/${report.transitions.total} transitions`,
    ...report.stateNodes.missing.map((id) => `  state node not reached: ${id}`),
    ...report.transitions.missing.map((key) => `  transition not taken: ${key}`),
  ].join('\n')
}
