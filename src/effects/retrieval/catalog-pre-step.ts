// The pre-step hook that keeps the retrieval-service catalog in front of the model (SPEC §9). Before
// every model step it reads the caller's settings and the cached document and sets the
// `retrieval-catalog` block only when its content changed or it is no longer visible (a new turn,
// or the block was removed); otherwise it asks for nothing. Around that it schedules refreshes,
// never waiting for one: a stale or missing document, changed credentials or workspace, and a tool
// that ran `bl knowledge service create|deploy|delete|copy` since the last look. It never fails:
// anything unexpected becomes a warning and leaves the context as it was. A step that offers
// neither kb_search nor kb_chat (a model without native tool calling) gets no catalog at all: the
// block tells the model to call those tools, and the UI already says what such a model cannot do.
import * as Cause from 'effect/Cause'
import * as Effect from 'effect/Effect'
import type { ContextBlockChange, PreStepOutput } from '../../machines/index.ts'
import type { Logger } from '../logging/logger.ts'
import type { PreStepHook } from '../turn/pre-step-hooks.ts'
import { type BailianSettings, findConnection } from './bailian-settings.ts'
import { scanForServiceChanges } from './bl-command-scan.ts'
import type { CatalogCache } from './catalog-cache.ts'
import { buildCatalogMessage, CATALOG_SOURCE } from './catalog-message.ts'
import type { CatalogRefresher } from './catalog-refresher.ts'

const MAX_TRACKED_TURNS = 512
const CATALOG_TOOLS: ReadonlySet<string> = new Set(['kb_search', 'kb_chat'])

/** Whether the step's model can call a retrieval tool, and so has any use for the catalog. */
export function offersRetrievalTools(toolNames: ReadonlyArray<string>): boolean {
  return toolNames.some((name) => CATALOG_TOOLS.has(name))
}

interface TurnState {
  readonly seenCalls: Set<string>
  looked: boolean
  reportedFailureSeq: number
}

/** What the hook wants placed, given what is visible: nothing when they already agree. */
export function decideCatalogBlock({ desired, visible }: { readonly desired: string | undefined; readonly visible: string | undefined }): ContextBlockChange[] {
  if (desired === visible) return []
  return [{ source: CATALOG_SOURCE, content: desired ?? null }]
}

export function makeCatalogPreStepHook({
  settings,
  cache,
  refresher,
  logger,
}: {
  readonly settings: BailianSettings
  readonly cache: CatalogCache
  readonly refresher: CatalogRefresher
  readonly logger: Logger
}): PreStepHook {
  const turns = new Map<string, TurnState>()
  const lastConnection = new Map<string, string>()

  const turnState = (turnId: string): TurnState => {
    let state = turns.get(turnId)
    if (state === undefined) {
      state = { seenCalls: new Set(), looked: false, reportedFailureSeq: 0 }
      turns.set(turnId, state)
      if (turns.size > MAX_TRACKED_TURNS) turns.delete(turns.keys().next().value!)
    }
    return state
  }

  const background = (what: string, promise: Promise<unknown>): void => {
    promise.catch((error: unknown) => logger.error(`retrieval catalog: ${what} failed`, { error }))
  }

  const hook: PreStepHook = ({ caller, turnId, input }) =>
    Effect.promise(async (): Promise<PreStepOutput> => {
      const visible = input.visibleBlocks.find((block) => block.source === CATALOG_SOURCE)?.content
      if (!offersRetrievalTools(input.toolNames)) return { blocks: decideCatalogBlock({ desired: undefined, visible }) }
      const snapshot = await settings.resolve(caller.id)
      const connection = findConnection(snapshot)
      if (typeof connection === 'string') return { blocks: decideCatalogBlock({ desired: undefined, visible }) }
      const { workspaceId } = connection
      const fingerprint = cache.fingerprint(connection.apiKey)

      const signature = `${workspaceId}\u0000${connection.endpointHost}\u0000${fingerprint}`
      const previous = lastConnection.get(caller.id)
      lastConnection.set(caller.id, signature)
      if (previous !== undefined && previous !== signature) {
        background('refresh after a settings change', refresher.refresh({ userId: caller.id, workspaceId, reason: 'credentials-changed' }))
      }

      const turn = turnState(turnId)
      const scan = scanForServiceChanges({ messages: input.messages, seen: turn.seenCalls })
      for (const id of scan.finishedCallIds) turn.seenCalls.add(id)
      // The first look of a turn only learns what is there: earlier turns looked at their own calls.
      if (turn.looked && scan.changed) {
        background('refresh after a bl command', refresher.refresh({ userId: caller.id, workspaceId, reason: 'bl-command' }))
      }
      turn.looked = true

      const status = await cache.read(workspaceId)
      const document = status.document !== undefined && status.readers.has(fingerprint) ? status.document : undefined
      // Not waited for: a slow list request never delays the step.
      refresher.check({ userId: caller.id, workspaceId, fetchedAt: document?.fetchedAt })

      const desired = buildCatalogMessage(document, {
        defaultRetrieveAgentId: snapshot.settings.defaultRetrieveAgentId.value,
        defaultChatAgentId: snapshot.settings.defaultChatAgentId.value,
      })
      const warnings: string[] = []
      const failure = refresher.lastFailure(workspaceId, caller.id)
      if (failure !== undefined && failure.seq > turn.reportedFailureSeq) {
        turn.reportedFailureSeq = failure.seq
        warnings.push(
          `The list of retrieval services could not be refreshed (${failure.message}); ` +
            (document === undefined ? 'the model does not see the list for now.' : 'the model keeps seeing the previous list.'),
        )
      }
      return { blocks: decideCatalogBlock({ desired, visible }), ...(warnings.length > 0 ? { warnings } : {}) }
    }).pipe(
      Effect.map((output): PreStepOutput => (output.blocks?.length === 0 ? { ...(output.warnings ? { warnings: output.warnings } : {}) } : output)),
      Effect.catchCause((cause) => {
        logger.error('retrieval catalog pre-step failed', { error: Cause.pretty(cause) })
        return Effect.succeed<PreStepOutput>({ warnings: ['The list of retrieval services could not be prepared for this step.'] })
      }),
    )

  return hook
}
