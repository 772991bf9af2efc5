// Table interfaces for kysely; Selectable/Insertable types are derived from these.
import type { ColumnType, Generated, Insertable, Kysely, Selectable, Transaction } from 'kysely'

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>
/** bigint columns arrive as strings from pg; we convert at the repository edge. */
type BigIntColumn = ColumnType<string | number, number | string, number | string>

export type UserRole = 'admin' | 'member'
export interface UsersTable {
  id: string
  login: string
  password_hash: string | null
  created_at: Timestamp
  role: ColumnType<UserRole, UserRole | undefined, UserRole>
  disabled_at: NullableTimestamp
  last_sign_in_at: NullableTimestamp
}
export interface ApiTokensTable {
  id: string
  user_id: string
  token_hash: string
  label: string | null
  created_at: Timestamp
  last_used_at: NullableTimestamp
  revoked_at: NullableTimestamp
  /** The settings form's one-time value that created it (a form sent twice makes one token); null otherwise. */
  form_nonce: ColumnType<string | null, string | null | undefined, string | null>
}
/** A form's one-time value, used up by the change it made (src/effects/auth/form-nonces.ts). */
export interface FormNoncesTable {
  user_id: string
  nonce: string
  used_at: Generated<Timestamp>
}
export interface SessionsTable {
  id_hash: string
  user_id: string
  csrf_token: string
  created_at: Timestamp
  expires_at: Timestamp
}
export type NodeKind = 'directory' | 'file'
export interface NodesTable {
  id: string
  owner_id: string
  parent_id: string | null
  name: string
  path: string
  kind: NodeKind
  current_version_id: string | null
  created_at: Timestamp
  updated_at: Timestamp
  /** Set on files a compile job wrote (never compile inputs); null for people's own files. */
  generated: ColumnType<GeneratedKind | null, GeneratedKind | null | undefined, GeneratedKind | null>
  /** A summary page's source file (its node id; the node may be gone since); null otherwise and for pages written before it was kept. */
  generated_from: ColumnType<string | null, string | null | undefined, string | null>
  /** Always null here: `nodes` is the view of the live rows (migrations/20261208100000_trash.ts). Named by ON CONFLICT's index predicate. */
  trash_id: ColumnType<null, never, never>
}
/** Every node, trashed ones included: only the Trash (src/effects/workspace/trash.ts) and what counts storage read it. */
export interface AllNodesTable extends Omit<NodesTable, 'trash_id'> {
  /** The trash item the node is in; null for a live node. */
  trash_id: ColumnType<string | null, string | null | undefined, string | null>
}
/** A deleted file or folder, kept until `purge_at` (the Trash). Its nodes are the rows of `all_nodes` with its id. */
export interface TrashItemsTable {
  id: string
  owner_id: string
  /** The deleted node itself (its descendants and the summaries taken along carry the item's id too). */
  node_id: string
  name: string
  kind: NodeKind
  /** Where it was: the node's path when it was deleted. */
  path: string
  files: number
  directories: number
  /** Summaries of its files that lived elsewhere, taken along. */
  summaries: Generated<number>
  /** Every version of every file in it. */
  bytes: ColumnType<string | number, number | string | undefined, number | string>
  deleted_at: Timestamp
  purge_at: Timestamp
}
export type GeneratedKind = 'summary' | 'overview' | 'abstract'
export interface FileVersionsTable {
  id: string
  node_id: string
  version_no: number
  raw: Uint8Array
  body: string | null
  mime: string
  size: BigIntColumn
  content_hash: string
  parse_status: 'parsed' | 'failed'
  parse_error: string | null
  created_at: Timestamp
  /** How the version came to be; null for versions written before it was recorded (and where no writer says). */
  origin: ColumnType<VersionOrigin | null, VersionOrigin | null | undefined, VersionOrigin | null>
}
export type VersionOrigin = 'upload' | 'import' | 'compile' | 'restore'
export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled'
export interface JobsTable {
  id: string
  owner_id: string
  node_id: string | null
  version_id: string | null
  uri: string
  kind: string
  status: JobStatus
  stage: string | null
  error: string | null
  configuration_json: ColumnType<unknown | null, string | null | undefined, string | null>
  attempts: Generated<number>
  lease_owner: string | null
  lease_expires_at: NullableTimestamp
  created_at: Timestamp
  started_at: NullableTimestamp
  finished_at: NullableTimestamp
  updated_at: Timestamp
  /** Compile jobs: stage, files done/total, model calls used/budget. */
  progress: ColumnType<unknown | null, string | null | undefined, string | null>
  /** Compile jobs: the last structured failure (stage, code, message, attempt, …). */
  failure: ColumnType<unknown | null, string | null | undefined, string | null>
  /** Compile jobs: artifacts written, files skipped. */
  result: ColumnType<unknown | null, string | null | undefined, string | null>
  max_attempts: number | null
  /** The queue's (pg-boss) job that runs the current attempts; a retry makes a new one. */
  queue_job_id: string | null
  queue_attempt: number | null
  dead_lettered_at: NullableTimestamp
}
export interface CompileJobFilesTable {
  job_id: string
  position: number
  owner_id: string
  node_id: string | null
  uri: string
  active: Generated<boolean>
}
export interface CompileCacheTable {
  owner_id: string
  fingerprint: string
  output: string
  created_at: Timestamp
}

/** The words of one passage of a current file version, for the workspace-wide search (search-index.ts). */
export interface SearchPassagesTable {
  version_id: string
  owner_id: string
  node_id: string
  /** Code-point offset of the passage in the version's body. */
  start: number
  /** Length in code points. */
  length: number
  words: string
}

export type TurnStatusColumn = 'running' | 'done' | 'failed' | 'cancelled'
export interface TurnsTable {
  id: string
  user_id: string
  uri: string
  model_id: string
  status: TurnStatusColumn
  finish_reason: string | null
  error_code: string | null
  error_message: string | null
  counters: ColumnType<unknown | null, string | null | undefined, string | null>
  usage: ColumnType<unknown | null, string | null | undefined, string | null>
  created_at: Timestamp
  finished_at: NullableTimestamp
  /** The server process running the turn (null: recorded before instances existed, or embedded use). */
  instance_id: ColumnType<string | null, string | null | undefined, string | null>
}

export interface RateLimitHitsTable {
  key: string
  hits: ColumnType<Date[], Date[], Date[]>
}
/** A file an MCP client connection follows (migrations/20261208400000_mcp_subscriptions.ts). */
export interface McpSubscriptionsTable {
  /** A hash of the connection's token and session id (running-calls.ts `sessionKey`). */
  session_key: string
  user_id: string
  node_id: string
  /** The file's URI as it was subscribed (what the notification names). */
  uri: string
  /** When the subscription was made or its connection's stream last opened; stale ones are dropped. */
  touched_at: Timestamp
}
export interface SignInThrottlesTable {
  key: string
  failures: Generated<number>
  blocked_until: NullableTimestamp
  last_attempt_at: Timestamp
}
export interface SignInUnlocksTable {
  token_hash: string
  user_id: string
  created_at: Generated<Timestamp>
  expires_at: Timestamp
}
/** What a generated page was built from (compile/layer-freshness.ts). */
export interface LayerSourcesTable {
  page_id: string
  source_id: string
  source_version_id: string | null
  source_path: string
}
export interface InstancesTable {
  id: string
  lock_key: Generated<number>
  host: string
  pid: number
  started_at: Generated<Date>
  /** Refreshed every third of the lease; an instance whose heartbeat is older than its lease is dead. */
  heartbeat_at: Generated<Date>
  lease_seconds: Generated<number>
}

/** A turn's SSE events as one process stored them, a batch per flush (migrations/20261208300000_turn_events.ts). */
export interface TurnEventBatchesTable {
  turn_id: string
  first_seq: number
  last_seq: number
  /** The events' SSE frames (`id: n`, `event:`, `data:`), numbered first_seq..last_seq. */
  events: string
  bytes: number
  terminal: Generated<boolean>
  created_at: Generated<Date>
}

// Retrieval services (migrations/20261201040000_retrieval.ts)
export interface RetrievalSettingsTable {
  user_id: string
  workspace_id: string | null
  default_retrieve_agent_id: string | null
  default_chat_agent_id: string | null
  seeded_fields: ColumnType<string[], string[] | undefined, string[]>
  updated_at: Timestamp
}
/** One row (id 1): the server-wide Bailian connection settings, a JSON document decoded on read (retrieval-server-settings.ts). */
export interface RetrievalServerSettingsTable {
  id: Generated<number>
  document: ColumnType<unknown, string | undefined, string>
  updated_at: ColumnType<Date, Date | undefined, Date>
}
export interface UserCredentialsTable {
  user_id: string
  name: string
  ciphertext: string
  updated_at: Timestamp
}
export interface RetrievalCatalogsTable {
  workspace_id: string
  endpoint_host: string
  fetched_at: NullableTimestamp
  revision: ColumnType<string | number, number | string | undefined, number | string>
  search_total: Generated<number>
  chat_total: Generated<number>
  search_truncated: Generated<boolean>
  chat_truncated: Generated<boolean>
  last_attempt_at: NullableTimestamp
  last_error: string | null
  last_error_at: NullableTimestamp
}
export interface RetrievalCatalogServicesTable {
  workspace_id: string
  scene: 'search' | 'chat'
  agent_id: string
  position: number
  agent_name: string
  status: string
  modify_time: string | null
  description: string | null
}
export interface RetrievalCatalogReadersTable {
  workspace_id: string
  key_fingerprint: string
  verified_at: Timestamp
}

// Model connections (migrations/20261206140000_model_connections.ts)
export interface ModelConnectionsTable {
  id: string
  name: string
  base_url: string
  /** credential-cipher.ts, associated with the connection id: never the key in clear. */
  api_key_ciphertext: string | null
  api_key_env: string | null
  /** The extra headers as JSON, encrypted like the key. */
  headers_ciphertext: string | null
  created_at: Timestamp
  updated_at: Timestamp
}
export interface ConnectionModelsTable {
  connection_id: string
  provider_model: string
  model_id: string
  display_name: string
  context_window: number
  max_output_tokens: number
  supports_tools: boolean
  enabled: Generated<boolean>
  /** Listed by the provider's GET /models at the last Test (else added by hand). */
  reported: Generated<boolean>
  position: Generated<number>
}
export interface ModelSettingsTable {
  id: Generated<number>
  default_model_id: string | null
  updated_at: Timestamp
}

/** One scheduled backup (src/effects/backup/scheduled-backups.ts). */
export interface BackupRunsTable {
  id: string
  started_at: Generated<Date>
  finished_at: Date | null
  status: 'running' | 'succeeded' | 'failed'
  file: string
  bytes: BigIntColumn | null
  duration_ms: number | null
  pruned: number | null
  error: string | null
}

export interface DB {
  backup_runs: BackupRunsTable
  model_connections: ModelConnectionsTable
  connection_models: ConnectionModelsTable
  model_settings: ModelSettingsTable
  retrieval_settings: RetrievalSettingsTable
  retrieval_server_settings: RetrievalServerSettingsTable
  user_credentials: UserCredentialsTable
  retrieval_catalogs: RetrievalCatalogsTable
  retrieval_catalog_services: RetrievalCatalogServicesTable
  retrieval_catalog_readers: RetrievalCatalogReadersTable
  turns: TurnsTable
  users: UsersTable
  api_tokens: ApiTokensTable
  sessions: SessionsTable
  form_nonces: FormNoncesTable
  nodes: NodesTable
  all_nodes: AllNodesTable
  trash_items: TrashItemsTable
  file_versions: FileVersionsTable
  jobs: JobsTable
  search_passages: SearchPassagesTable
  mcp_subscriptions: McpSubscriptionsTable
  rate_limit_hits: RateLimitHitsTable
  sign_in_throttles: SignInThrottlesTable
  sign_in_unlocks: SignInUnlocksTable
  layer_sources: LayerSourcesTable
  instances: InstancesTable
  turn_event_batches: TurnEventBatchesTable
  compile_job_files: CompileJobFilesTable
  compile_cache: CompileCacheTable
}

export type UserRow = Selectable<UsersTable>
export type NodeRow = Selectable<NodesTable>
export type FileVersionRow = Selectable<FileVersionsTable>
export type JobRow = Selectable<JobsTable>
export type NewJob = Insertable<JobsTable>

/** What repositories take: the database or a transaction on it. */
export type Db = Kysely<DB> | Transaction<DB>

/** The owner of a workspace row: a user as the store needs them. */
export interface Owner {
  readonly id: string
  readonly login: string
}
