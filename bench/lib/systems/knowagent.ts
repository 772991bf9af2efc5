// knowagent itself: the real express app (createApp) over a fresh in-memory PGlite, with one
// user, an API token, a small workspace (so the `ls` tool has something to list) and one model
// whose baseUrl is the bench provider. Streams go to POST /api/v1/knowledge-agent/stream.
import type { AddressInfo } from 'node:net'
import { createApiTokenFor, createUser } from '../../../src/effects/auth/users.ts'
import { loadConfig } from '../../../src/effects/config/app-config.ts'
import { openPostgres } from '../../../src/effects/db/database.ts'
import type { KyselyPlugin } from 'kysely'
import pg from 'pg'
import { migrateToLatest } from '../../../src/effects/db/migrate.ts'
import { makeModelRegistry } from '../../../src/effects/llm/model-registry.ts'
import { createLogger } from '../../../src/effects/logging/logger.ts'
import { makeDocumentParser } from '../../../src/effects/workspace/parse/document-parser.ts'
import { putFile } from '../../../src/effects/workspace/store.ts'
import { makeToolRegistry } from '../../../src/effects/tools/tool-registry.ts'
import { WORKSPACE_TOOLS } from '../../../src/effects/tools/workspace-tools.ts'
import type { AppContext } from '../../../src/http/app-context.ts'
import { createApp } from '../../../src/http/create-app.ts'
import { API_PREFIX } from '../../../src/http/knowledge-agent.routes.ts'
import { BENCH_MODEL, KNOWAGENT_MODEL_ID, type SystemServer } from '../protocol.ts'

const SECRET = 'bench-secret-0123456789abcdef'
export const BENCH_LOGIN = 'bench'

/**
 * `databaseUrl`: the admin URL of a PostgreSQL server, in which a fresh database is created for
 * this process; without it, an in-memory PGlite (the default deployment's embedded database).
 */
export async function startKnowagentServer({
  providerBaseUrl,
  databaseUrl,
}: {
  providerBaseUrl: string
  databaseUrl?: string | undefined
}): Promise<SystemServer & { readonly dbQueries: () => number }> {
  if (!databaseUrl) throw new Error('knowagent runs on PostgreSQL only: pass the admin URL of a PostgreSQL server')
  const database = await openPostgres({ url: await createDatabase(databaseUrl) })
  await migrateToLatest(database.db)
  const base = loadConfig({ env: { KNOWAGENT_DATA_DIR: '/nonexistent', KNOWAGENT_SECRET: SECRET }, cwd: '/' })
  const config = {
    ...base,
    streamsPerMinute: 1_000_000, // the per-user rate limit is not what is measured
    file: {
      ...base.file,
      models: [
        {
          id: KNOWAGENT_MODEL_ID,
          name: 'Bench provider',
          profile: 'bench',
          baseUrl: providerBaseUrl,
          model: BENCH_MODEL,
          contextWindow: 131_072,
          maxOutputTokens: 8192,
          supportsNativeToolCalling: true,
          maxRetries: 0,
        },
      ],
    },
  }
  const logger = createLogger({ level: 'warn', write: (line) => process.stderr.write(line + '\n') })
  const models = makeModelRegistry({ models: config.file.models, env: {} })
  // The app gets the same database through a plugin that only counts executed queries.
  let queries = 0
  const counting: KyselyPlugin = {
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      queries += 1
      return args.result
    },
  }
  const ctx: AppContext = {
    db: database.db.withPlugin(counting),
    ping: database.ping,
    config,
    secret: SECRET,
    logger,
    models,
    tools: makeToolRegistry(WORKSPACE_TOOLS),
    parser: makeDocumentParser(config.parsing), // no worker starts until a parse
    shutdownSignal: new AbortController().signal,
  }
  const user = await createUser(database.db, { login: BENCH_LOGIN, password: 'bench-password-0123' })
  const token = await createApiTokenFor(database.db, { secret: SECRET, login: BENCH_LOGIN })
  const note = 'Benchmark note: the workspace the `ls` tool lists.\n'
  await putFile(database.db, {
    owner: user,
    segments: ['notes', 'bench.md'],
    bytes: new TextEncoder().encode(note),
    parsed: { ok: true, mime: 'text/markdown', text: note },
  })
  const app = createApp(ctx)
  const server = await new Promise<import('node:http').Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening))
  })
  queries = 0
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${API_PREFIX}/stream`,
    headers: { authorization: `Bearer ${token}` },
    dbQueries: () => queries,
  }
}

async function createDatabase(adminUrl: string): Promise<string> {
  const name = `bench_${process.pid}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`drop database if exists ${name} with (force)`)
  await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}
