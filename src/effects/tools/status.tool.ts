// `status {uri?}`: the caller's latest parse (body) and compile (semantic) job for a scope (SPEC §4).
import { Effect, Schema } from 'effect'
import { sql } from 'kysely'
import type { WorkspaceNode } from '../workspace/store.ts'
import { tryWorkspace } from '../workspace/workspace-effect.ts'
import { ToolUri } from './tool-arguments.ts'
import { defineTool, type ToolContext } from './tool-definition.ts'
import { resolveToolTarget } from './tool-scope.ts'
import type { JobInfo, StatusResult } from './tool-types.ts'

export const StatusArgs = Schema.Struct({ uri: Schema.optionalKey(ToolUri.annotate({ description: 'defaults to the selected node' })) })

interface JobRow {
  readonly kind: string
  readonly status: string
  readonly error: string | null
  readonly uri: string
  readonly created_at: Date
  readonly finished_at: Date | null
}

function toJobInfo(row: JobRow | undefined): JobInfo | null {
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
    if (node.kind === 'file' && kind === 'compile') {
      query = query.where('id', 'in', context.db.selectFrom('compile_job_files').select('job_id').where('node_id', '=', node.id))
    } else if (node.kind === 'file') query = query.where('node_id', '=', node.id)
    else if (node.path !== '') query = query.where(sql<boolean>`starts_with(uri, ${node.uri})`)
    return query.orderBy('created_at', 'desc').orderBy('id').limit(1).executeTakeFirst()
  })
}

export const statusTool = defineTool({
  name: 'status',
  description: 'The latest parse (text body) and compile (wiki) job for a file or directory in scope.',
  args: StatusArgs,
  command: true,
  run: (args, context) =>
    Effect.gen(function* () {
      const { node } = yield* resolveToolTarget(context, args.uri)
      const body = toJobInfo(yield* latestJob(context, node, 'parse'))
      const compile = toJobInfo(yield* latestJob(context, node, 'compile'))
      return { uri: node.uri, body, compile } satisfies StatusResult
    }),
  summarise: (result: StatusResult) => `parse: ${result.body?.status ?? 'none'}; compile: ${result.compile?.status ?? 'none'}`,
})
