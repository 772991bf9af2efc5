// The scoped workspace tools (SPEC §4): ls, read, search, status. Each call re-resolves its
// target for the caller and checks it lies within the selected scope; failures are tool
// errors (data for the model), never exceptions.
import { Effect, Schema } from 'effect'
import { sql } from 'kysely'
import type { Db, Owner, WorkspaceNode } from '../workspace/store.ts'
import { listChildren, listFilesUnder, readCurrent, readCurrentBodies } from '../workspace/store.ts'
import { resolveWithinScope } from '../workspace/resolve.ts'
import { formatKbUri, type WorkspacePath } from '../workspace/uri.ts'
import { findAll, pageText, snippetAround } from '../workspace/text-paging.ts'
import { searchTerms } from './search-terms.ts'
import {
  READ_DEFAULT_LIMIT,
  READ_MAX_LIMIT,
  SEARCH_FILES_PER_PAGE,
  type JobInfo,
  type LsResult,
  type ReadResult,
  type SearchHit,
  type SearchResult,
  type StatusResult,
} from './tool-types.ts'

export interface ToolScope {
  readonly db: Db
  readonly caller: Owner
  /** The selected node: every target must be it or lie below it. */
  readonly scope: WorkspacePath
}

export type ToolName = 'ls' | 'read' | 'search' | 'status'
export const TOOL_NAMES: ReadonlyArray<ToolName> = ['ls', 'read', 'search', 'status']

export interface ToolOutcome {
  readonly ok: boolean
  /** JSON text for the model (the `role: "tool"` message content). */
  readonly content: string
  /** One line for people (tool cards, logs). */
  readonly summary: string
  /** The structured result (also what `POST command` returns). */
  readonly result: unknown
}

const Offset = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const Uri = Schema.String.check(Schema.isMaxLength(4096))
export const LsArgs = Schema.Struct({
  uri: Schema.optional(Uri),
  offset: Schema.optional(Offset),
  limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 200 }))),
})
export const ReadArgs = Schema.Struct({
  uri: Uri,
  offset: Schema.optional(Offset),
  limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: READ_MAX_LIMIT }))),
})
export const SearchArgs = Schema.Struct({
  query: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)),
  uri: Schema.optional(Uri),
  offset: Schema.optional(Offset),
})
export const StatusArgs = Schema.Struct({ uri: Schema.optional(Uri) })

/** Static tool descriptions for the model (never carry dynamic content). */
export const WORKSPACE_TOOL_SCHEMAS = [
  {
    type: 'function' as const,
    function: {
      name: 'ls',
      description:
        'List the direct children (name, kind, uri, size, updated) of a directory in the selected scope. Paged: pass next_offset back as offset.',
      parameters: {
        type: 'object',
        properties: {
          uri: { type: 'string', description: 'kb:// URI of a directory in scope; defaults to the selected node' },
          offset: { type: 'integer', minimum: 0 },
          limit: { type: 'integer', minimum: 1, maximum: 200, description: 'default 50' },
        },
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: 'read',
      description: `Read one page of a file's extracted text. offset and limit count Unicode code points (default ${READ_DEFAULT_LIMIT}, at most ${READ_MAX_LIMIT}). Returns offset, next_offset and total; continue with offset=next_offset.`,
      parameters: {
        type: 'object',
        properties: {
          uri: { type: 'string', description: 'kb:// URI of a file in scope' },
          offset: { type: 'integer', minimum: 0 },
          limit: { type: 'integer', minimum: 1, maximum: READ_MAX_LIMIT },
        },
        required: ['uri'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: 'search',
      description: `Case-insensitive text search over files in scope. Scans at most ${SEARCH_FILES_PER_PAGE} files per call in a stable order; "complete" says whether the whole scope was scanned. If not, call again with offset=next_offset.`,
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string', description: 'words or a phrase' },
          uri: { type: 'string', description: 'kb:// URI of a directory or file in scope; defaults to the selected node' },
          offset: { type: 'integer', minimum: 0, description: 'file offset from a previous next_offset' },
        },
        required: ['query'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: 'status',
      description: 'The latest parse (text body) and compile (wiki) job for a file or directory in scope.',
      parameters: {
        type: 'object',
        properties: { uri: { type: 'string', description: 'defaults to the selected node' } },
        additionalProperties: false,
      },
    },
  },
]

class ToolFailure {
  readonly code: string
  readonly message: string
  constructor(code: string, message: string) {
    this.code = code
    this.message = message
  }
}

function toFailure(error: unknown): ToolFailure {
  const tagged = error as { _tag?: string; message?: string }
  if (error instanceof ToolFailure) return error
  switch (tagged?._tag) {
    case 'InvalidUri':
      return new ToolFailure('invalid_uri', String(tagged.message))
    case 'OutsideScope':
      return new ToolFailure('outside_scope', String(tagged.message))
    case 'NodeNotFound':
      return new ToolFailure('not_found', String(tagged.message))
    case 'NodeConflict':
      return new ToolFailure('conflict', String(tagged.message))
    default:
      return new ToolFailure('internal', 'the tool failed unexpectedly')
  }
}

const attempt = <A>(run: (signal: AbortSignal) => Promise<A>) =>
  Effect.tryPromise({ try: run, catch: toFailure })

function decodeArgs<S extends Schema.Top & { readonly DecodingServices: never }>(schema: S, args: unknown) {
  return Effect.try({
    try: () => Schema.decodeUnknownSync(schema as never)(args, { errors: 'all', onExcessProperty: 'error' }) as S['Type'],
    catch: (error) => new ToolFailure('invalid_arguments', `invalid arguments: ${(error as Error).message.replace(/\n\s*/g, ' ')}`),
  })
}

const scopeUri = (scope: ToolScope) => formatKbUri({ login: scope.scope.login, segments: scope.scope.segments, directory: false })

function resolveTarget(scope: ToolScope, uri: string | undefined) {
  return attempt(() => resolveWithinScope(scope.db, { caller: scope.caller, scope: scope.scope, uri: uri ?? scopeUri(scope) }))
}

export function runLs(scope: ToolScope, rawArgs: unknown) {
  return Effect.gen(function* () {
    const args = yield* decodeArgs(LsArgs, rawArgs)
    const { node } = yield* resolveTarget(scope, args.uri)
    const offset = args.offset ?? 0
    const limit = args.limit ?? 50
    const describe = (n: WorkspaceNode) => ({ name: n.name, kind: n.kind, uri: n.uri, size: n.size, updated: n.updatedAt.toISOString() })
    if (node.kind === 'file') {
      return { uri: node.uri, entries: [describe(node)], offset: 0, next_offset: null, total: 1 } satisfies LsResult
    }
    const page = yield* attempt(() => listChildren(scope.db, { owner: scope.caller, parent: node, offset, limit }))
    const end = offset + page.entries.length
    return {
      uri: node.uri,
      entries: page.entries.map(describe),
      offset,
      next_offset: end < page.total ? end : null,
      total: page.total,
    } satisfies LsResult
  })
}

export function runRead(scope: ToolScope, rawArgs: unknown) {
  return Effect.gen(function* () {
    const args = yield* decodeArgs(ReadArgs, rawArgs)
    const { node } = yield* resolveTarget(scope, args.uri)
    if (node.kind !== 'file') return yield* Effect.fail(new ToolFailure('is_directory', `${node.uri} is a directory; use ls to list it`))
    const content = yield* attempt(() => readCurrent(scope.db, scope.caller, node))
    if (content.parseStatus !== 'parsed' || content.body === null) {
      return {
        uri: node.uri,
        offset: 0,
        next_offset: null,
        total: 0,
        text: '',
        empty: true,
        note: `no text could be extracted from this file: ${content.parseError ?? 'unknown reason'}`,
      } satisfies ReadResult
    }
    const page = pageText({ text: content.body, offset: args.offset ?? 0, limit: args.limit ?? READ_DEFAULT_LIMIT })
    if (page.total === 0) {
      return { uri: node.uri, offset: 0, next_offset: null, total: 0, text: '', empty: true, note: 'the file is empty' } satisfies ReadResult
    }
    return { uri: node.uri, ...page } satisfies ReadResult
  })
}

const HITS_PER_FILE = 3
const MAX_HITS = 30

export function runSearch(scope: ToolScope, rawArgs: unknown) {
  return Effect.gen(function* () {
    const args = yield* decodeArgs(SearchArgs, rawArgs)
    const terms = searchTerms(args.query)
    if (terms.length === 0) return yield* Effect.fail(new ToolFailure('invalid_arguments', 'the query has no searchable words'))
    const { node } = yield* resolveTarget(scope, args.uri)
    const offset = args.offset ?? 0
    const files = yield* attempt(() =>
      listFilesUnder(scope.db, { owner: scope.caller, scope: node, offset, limit: SEARCH_FILES_PER_PAGE + 1 }),
    )
    const page = files.slice(0, SEARCH_FILES_PER_PAGE)
    const more = files.length > SEARCH_FILES_PER_PAGE
    const bodies = page.length ? yield* attempt(() => readCurrentBodies(scope.db, scope.caller, page)) : new Map<string, string | null>()
    const scored: Array<SearchHit & { score: number; order: number }> = []
    for (const [order, file] of page.entries()) {
      const body = bodies.get(file.id)
      if (!body) continue
      const matched = terms.map((term) => ({ term, offsets: findAll({ text: body, query: term, limit: HITS_PER_FILE }) })).filter((m) => m.offsets.length > 0)
      if (matched.length === 0) continue
      const phraseHit = matched[0]?.term === terms[0]
      const score = matched.length + (phraseHit ? terms.length : 0)
      const seen = new Set<number>()
      for (const { term, offsets } of matched) {
        for (const at of offsets) {
          if ([...seen].some((s) => Math.abs(s - at) < 120)) continue
          seen.add(at)
          if (seen.size > HITS_PER_FILE) break
          scored.push({ uri: file.uri, offset: at, snippet: snippetAround({ text: body, offset: at, length: [...term].length, radius: 100 }).replace(/\s+/g, ' ').trim(), score, order })
        }
      }
    }
    scored.sort((a, b) => b.score - a.score || a.order - b.order || a.offset - b.offset)
    const nextOffset = more ? offset + page.length : null
    return {
      query: args.query,
      uri: node.uri,
      hits: scored.slice(0, MAX_HITS).map(({ uri, offset: at, snippet }) => ({ uri, offset: at, snippet })),
      files_scanned: page.length,
      offset,
      next_offset: nextOffset,
      complete: offset === 0 && nextOffset === null,
      ...(nextOffset !== null
        ? { note: `scanned files ${offset + 1}–${offset + page.length} only; call search again with offset=${nextOffset} to continue` }
        : offset > 0
          ? { note: `scanned files ${offset + 1}–${offset + page.length}, the last page; earlier pages were scanned by earlier calls` }
          : {}),
    } satisfies SearchResult & { note?: string }
  })
}

function toJobInfo(row: { kind: string; status: string; error: string | null; uri: string; created_at: Date; finished_at: Date | null } | undefined): JobInfo | null {
  if (!row) return null
  return {
    kind: row.kind,
    status: row.status,
    error: row.error,
    uri: row.uri,
    created_at: new Date(row.created_at).toISOString(),
    finished_at: row.finished_at ? new Date(row.finished_at).toISOString() : null,
  }
}

export function runStatus(scope: ToolScope, rawArgs: unknown) {
  return Effect.gen(function* () {
    const args = yield* decodeArgs(StatusArgs, rawArgs)
    const { node } = yield* resolveTarget(scope, args.uri)
    const latest = (kind: string) =>
      attempt(() => {
        let query = scope.db
          .selectFrom('jobs')
          .select(['kind', 'status', 'error', 'uri', 'created_at', 'finished_at'])
          .where('owner_id', '=', scope.caller.id)
          .where('kind', '=', kind)
        query =
          node.kind === 'file'
            ? query.where('node_id', '=', node.id)
            : node.path === ''
              ? query
              : query.where(sql<boolean>`starts_with(uri, ${node.uri})`)
        return query.orderBy('created_at', 'desc').orderBy('id').limit(1).executeTakeFirst()
      })
    const body = toJobInfo(yield* latest('parse'))
    const compile = toJobInfo(yield* latest('compile'))
    return { uri: node.uri, body, compile } satisfies StatusResult
  })
}

function summarise(name: ToolName, result: unknown): string {
  const r = result as Record<string, unknown>
  switch (name) {
    case 'ls':
      return `${(r.entries as unknown[]).length} of ${r.total} entries in ${r.uri}`
    case 'read':
      return r.empty ? `${r.uri}: ${r.note}` : `read ${r.uri} [${r.offset}–${r.next_offset ?? r.total}) of ${r.total}`
    case 'search':
      return `${(r.hits as unknown[]).length} hits in ${r.files_scanned} files${r.complete ? '' : ' (scan not complete)'}`
    case 'status': {
      const body = r.body as JobInfo | null
      return `parse: ${body ? body.status : 'none'}; compile: ${(r.compile as JobInfo | null)?.status ?? 'none'}`
    }
  }
}

const RUNNERS = { ls: runLs, read: runRead, search: runSearch, status: runStatus } as const

/** Runs one tool. Never fails: errors are `ok: false` outcomes whose content tells the model what went wrong. */
export function runWorkspaceTool({ scope, name, args }: { scope: ToolScope; name: string; args: unknown }): Effect.Effect<ToolOutcome> {
  if (!(TOOL_NAMES as ReadonlyArray<string>).includes(name)) {
    const failure = { error: { code: 'unknown_tool', message: `unknown tool "${name}"; available: ${TOOL_NAMES.join(', ')}` } }
    return Effect.succeed({ ok: false, content: JSON.stringify(failure), summary: failure.error.message, result: failure })
  }
  const tool = name as ToolName
  const run = RUNNERS[tool] as (scope: ToolScope, args: unknown) => Effect.Effect<unknown, ToolFailure>
  return run(scope, args).pipe(
    Effect.map((result): ToolOutcome => ({ ok: true, content: JSON.stringify(result), summary: summarise(tool, result), result })),
    Effect.catch((failure: ToolFailure) => {
      const body = { error: { code: failure.code, message: failure.message } }
      return Effect.succeed<ToolOutcome>({ ok: false, content: JSON.stringify(body), summary: `${failure.code}: ${failure.message}`, result: body })
    }),
  )
}
