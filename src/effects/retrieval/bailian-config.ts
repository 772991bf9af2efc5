// `retrieval.bailian` in the config file: the switch, where the service lives, behaviour, and the
// entry layer of the settings chain (workspace id and default services; never the API key).
// workspaceId, endpointHost, agentVersion and chatTimeoutMs are start-up values: an operator's
// `knowagent retrieval set` or Administration → Retrieval defaults overrides them at run time
// (retrieval-server-settings.ts).
import * as Schema from 'effect/Schema'
import { DEFAULT_ENDPOINT_HOST, isValidWorkspaceId } from './bailian-endpoint.ts'

const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))
const Id = Schema.String.check(Schema.isMaxLength(256))

export const BailianConfigSchema = Schema.Struct({
  /** Default true. False removes the kb_* tools, the catalog block and the settings page. */
  enabled: Schema.optional(Schema.Boolean),
  /** `{workspaceId}` is replaced by the workspace id; no scheme means https. */
  endpointHost: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(512))),
  workspaceId: Schema.optional(
    Id.check(
      Schema.makeFilter((value: string) =>
        value === '' || isValidWorkspaceId(value) ? undefined : 'expected a workspace id (letters, digits, "-" and "_")',
      ),
    ),
  ),
  defaultRetrieveAgentId: Schema.optional(Id),
  defaultChatAgentId: Schema.optional(Id),
  /** Time limit of one kb_chat call. Default 300000 (5 minutes: the service retrieves in several rounds). */
  chatTimeoutMs: Schema.optional(PositiveInt),
  /** `agent_version` sent on search and chat (e.g. "beta" for a draft); default: the published version. */
  agentVersion: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64))),
  /** Least time between two catalog fetches a `bl knowledge service …` command asks for, per workspace. Default 5000. */
  catalogMinIntervalMs: Schema.optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(600_000))),
})
export type BailianConfigFile = typeof BailianConfigSchema.Type

export const RetrievalConfigSchema = Schema.Struct({
  bailian: Schema.optional(BailianConfigSchema),
})

export const DEFAULT_CHAT_TIMEOUT_MS = 300_000
export const DEFAULT_CATALOG_MIN_INTERVAL_MS = 5_000

/** `retrieval.bailian` with its defaults applied. Entry-layer values are undefined when blank. */
export interface BailianConfig {
  readonly enabled: boolean
  readonly endpointHost: string
  readonly workspaceId: string | undefined
  readonly defaultRetrieveAgentId: string | undefined
  readonly defaultChatAgentId: string | undefined
  readonly chatTimeoutMs: number
  readonly agentVersion: string | undefined
  readonly catalogMinIntervalMs: number
}

export function resolveBailianConfig(file: BailianConfigFile | undefined): BailianConfig {
  const blank = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value.trim())
  return {
    enabled: file?.enabled ?? true,
    endpointHost: file?.endpointHost ?? DEFAULT_ENDPOINT_HOST,
    workspaceId: blank(file?.workspaceId),
    defaultRetrieveAgentId: blank(file?.defaultRetrieveAgentId),
    defaultChatAgentId: blank(file?.defaultChatAgentId),
    chatTimeoutMs: file?.chatTimeoutMs ?? DEFAULT_CHAT_TIMEOUT_MS,
    agentVersion: blank(file?.agentVersion),
    catalogMinIntervalMs: file?.catalogMinIntervalMs ?? DEFAULT_CATALOG_MIN_INTERVAL_MS,
  }
}
