// The pre-step slot on the host side: features that keep material in front of the model (the
// retrieval-service catalog) register a hook in the composition root; the turn runs them all
// before every model step. A hook sees the caller, so it can read that user's settings.
import * as Cause from 'effect/Cause'
import * as Effect from 'effect/Effect'
import type { ContextBlockChange, PreStepInput, PreStepOutput } from '../../machines/index.ts'
import type { Owner } from '../db/schema.ts'

export type PreStepHook = (args: { readonly caller: Owner; readonly turnId: string; readonly input: PreStepInput }) => Effect.Effect<PreStepOutput>

export const noPreStep: PreStepHook = () => Effect.succeed({})

/**
 * Runs the hooks in order and merges what they ask for. One hook's crash becomes a warning and
 * does not keep the others from running (the machine would otherwise drop every hook's blocks).
 */
export function composePreStepHooks(hooks: ReadonlyArray<PreStepHook>): PreStepHook {
  if (hooks.length === 0) return noPreStep
  return (args) =>
    Effect.forEach(hooks, (hook, index) =>
      hook(args).pipe(
        Effect.catchCause((cause) =>
          Effect.succeed<PreStepOutput>({ warnings: [`pre-step hook ${index + 1} failed (${Cause.squash(cause)}); continuing without it`] }),
        ),
      ),
    ).pipe(
      Effect.map((outputs): PreStepOutput => {
        const blocks: ContextBlockChange[] = outputs.flatMap((output) => output.blocks ?? [])
        const warnings = outputs.flatMap((output) => output.warnings ?? [])
        return { ...(blocks.length > 0 ? { blocks } : {}), ...(warnings.length > 0 ? { warnings } : {}) }
      }),
    )
}
