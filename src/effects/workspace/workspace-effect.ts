// The Effect edge of the promise-based workspace repositories: workspace failures (bad URI, out of
// scope, not found, conflict) stay typed; anything else (the database is down, a bug) is a defect.
import * as Effect from 'effect/Effect'
import { isWorkspaceError, type WorkspaceError } from './workspace-errors.ts'

export function tryWorkspace<A>(run: (signal: AbortSignal) => PromiseLike<A>): Effect.Effect<A, WorkspaceError> {
  return Effect.tryPromise({ try: run, catch: (error) => error }).pipe(
    Effect.catch((error) => (isWorkspaceError(error) ? Effect.fail(error) : Effect.die(error))),
  )
}
