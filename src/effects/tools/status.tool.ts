// `status {uri?, offset?}`: the caller's latest parse (body) and compile (semantic) job of a file;
// for a folder, a page of the files below it, each with its own latest jobs (SPEC §4).
import * as Effect from 'effect/Effect'
import * as Schema from 'effect/Schema'
import { sql } from 'kysely'
import type { WorkspaceNode } from '../workspace/store.ts'
import { formatKbUri, pathToSegments } from '../workspace/uri.ts'
import { tryWorkspace } from '../workspace/workspace-effect.ts'
import { ToolOffset, ToolUri } from './tool-arguments.ts'
import { defineTool, type ToolContext } from './tool-definition.ts'
import { resolveToolTarget } from './tool-scope.ts'
import { type DirectoryLayers, type DirectoryStatus, type FileStatus, type JobInfo, STATUS_FILES_PER_PAGE, type StatusResult } from './tool-types.ts'
import { folderLayers, isStale, MAX_LISTED_CHANGES } from '../compile/layer-freshness.ts'
import { layerPageInfo } from './ls.tool.ts'

export const StatusArgs = Schema.Struct({
  uri: Schema.optionalKey(ToolUri.annotate({ description: 'defaults to the selected node' })),
  offset: Schema.optionalKey(ToolOffset.annotate({ description: 'for a folder: the next page of its files (next_offset)' })),
})

interface JobRow {
  readonly kind: string
  readonly status: string
  readonly error: string | null
  readonly uri: string
  readonly created_at: Date
  readonly finished_at: Date | null
}

function toJobInfo(row: JobRow | undefined | null): JobInfo | null {
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

function latestJob(context: ToolContext, node: WorkspaceNode, kind: string) {
  return tryWorkspace(() => {
    let query = context.db
      .selectFrom('jobs')
      .select(['kind', 'status', 'error', 'uri', 'created_at', 'finished_at'])
      .where('owner_id', '=', context.caller.id)
      .where('kind', '=', kind)
    // A compile job covers the files of one directory: its row names the directory, its files are listed apart.
    query =
      kind === 'compile' && node.kind === 'file'
        ? query.where('id', 'in', context.db.selectFrom('compile_job_files').select('job_id').where('node_id', '=', node.id))
        : query.where('node_id', '=', node.id)
    return query.orderBy('created_at', 'desc').orderBy('id').limit(1).executeTakeFirst()
  })
}

const JOB_JSON = (alias: string) =>
  sql.raw(`json_build_object('kind', ${alias}.kind, 'status', ${alias}.status, 'error', ${alias}.error, 'uri', ${alias}.uri, 'created_at', ${alias}.created_at, 'finished_at', ${alias}.finished_at)`)

/** A person's own files below a folder (compiled pages are the `layers`, not files), by path, one page, each with its latest parse and compile job. */
function directoryStatus(context: ToolContext, node: WorkspaceNode, offset: number) {
  return tryWorkspace(async (): Promise<DirectoryStatus> => {
    const owner = context.caller.id
    const below = node.path === '' ? sql<boolean>`true` : sql<boolean>`starts_with(n.path, ${node.path + '/'})`
    const totalRow = await sql<{ total: string }>`select count(*) as total from nodes n where n.owner_id = ${owner} and n.kind = 'file' and n.generated is null and ${below}`.execute(context.db)
    const total = Number(totalRow.rows[0]?.total ?? 0)
    const rows = await sql<{ id: string; path: string; parse: JobRow | null; compile: JobRow | null }>`
      select n.id, n.path,
        (select ${JOB_JSON('j')} from jobs j
          where j.owner_id = ${owner} and j.kind = 'parse' and j.node_id = n.id
          order by j.created_at desc, j.id limit 1) as parse,
        (select ${JOB_JSON('j')} from jobs j
          where j.owner_id = ${owner} and j.kind = 'compile'
            and j.id in (select f.job_id from compile_job_files f where f.node_id = n.id)
          order by j.created_at desc, j.id limit 1) as compile
      from nodes n
      where n.owner_id = ${owner} and n.kind = 'file' and n.generated is null and ${below}
      order by n.path collate "C"
      limit ${STATUS_FILES_PER_PAGE} offset ${offset}`.execute(context.db)
    const files: FileStatus[] = rows.rows.map((row) => ({
      uri: formatKbUri({ login: context.caller.login, segments: pathToSegments(row.path), directory: false }),
      body: toJobInfo(row.parse),
      compile: toJobInfo(row.compile),
    }))
    const next = offset + files.length
    return { uri: node.uri, kind: 'directory', compile: null, layers: null, files, total, offset, next_offset: next < total ? next : null }
  })
}

/** When the folder was last compiled (its overview, else its abstract, was written) and what changed since (layer-freshness.ts). */
function directoryLayers(context: ToolContext, node: WorkspaceNode) {
  return tryWorkspace(async (): Promise<DirectoryLayers | null> => {
    const { overview, abstract } = await folderLayers(context.db, context.caller, node.id)
    const main = overview ?? abstract
    if (main === undefined) return null
    // The overview and abstract are built from the same sources: their changes are one list.
    const changes = new Map([...(overview?.freshness?.changes ?? []), ...(abstract?.freshness?.changes ?? [])].map((change) => [`${change.change} ${change.uri}`, change]))
    return {
      compiled_at: (main.freshness?.writtenAt ?? new Date(0)).toISOString(),
      overview: overview === undefined ? null : layerPageInfo(overview),
      abstract: abstract === undefined ? null : layerPageInfo(abstract),
      stale: isStale({ changes: [...changes.values()] }),
      changes: [...changes.values()].slice(0, MAX_LISTED_CHANGES),
      changes_total: changes.size,
    }
  })
}

export const statusTool = defineTool({
  name: 'status',
  description: 'The latest parse (text body) and compile (wiki) job of a file in scope; for a directory, a page of the files below it with their own latest jobs, and when the directory was last compiled and what changed since ("layers").',
  args: StatusArgs,
  command: true,
  run: (args, context) =>
    Effect.gen(function* () {
      const { node } = yield* resolveToolTarget(context, args.uri)
      if (node.kind === 'directory') {
        const compile = toJobInfo(yield* latestJob(context, node, 'compile'))
        const layers = yield* directoryLayers(context, node)
        return { ...(yield* directoryStatus(context, node, args.offset ?? 0)), compile, layers } satisfies StatusResult
      }
      const body = toJobInfo(yield* latestJob(context, node, 'parse'))
      const compile = toJobInfo(yield* latestJob(context, node, 'compile'))
      return { uri: node.uri, kind: 'file', body, compile } satisfies StatusResult
    }),
  summarise: (result: StatusResult) =>
    result.kind === 'directory'
      ? `${result.total} file${result.total === 1 ? '' : 's'} below ${result.uri}; ${result.files.length} shown from ${result.offset}; parse failed: ${result.files.filter((f) => f.body?.status === 'failed').length}; compile: ${result.compile?.status ?? 'none'}${result.layers === null ? '' : `; compiled ${result.layers.compiled_at}${result.layers.stale ? `, ${result.layers.changes_total} change${result.layers.changes_total === 1 ? '' : 's'} since` : ', fresh'}`}`
      : `parse: ${result.body?.status ?? 'none'}; compile: ${result.compile?.status ?? 'none'}`,
})
