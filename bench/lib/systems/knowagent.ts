// knowagent itself, assembled as `knowagent serve` assembles it (src/server.ts): the composition
// root (startCoreRuntime: configuration, the embedded PostgreSQL of a fresh data dir — initdb,
// start, migrations — the document parser, the retrieval feature with its pre-step hook, the
// compile feature — pg-boss queue, LISTEN/NOTIFY, a worker — the model and tool registries), the
// server instance's registration and the express app. The embedded postmaster and its backends are this process's children, so they
// count in the tree's memory. One bench user with an API token and a small workspace (so the `ls`
// tool has something to list); one model whose baseUrl is the bench provider. Streams go to
// POST /api/v1/knowledge-agent/stream. Not done here (it is not on the stream path): the demo
// workspace import of a first start; `knowagent serve` itself is measured by serve-start.ts.
// The server's modules come from the server bundle when it matches the checkout, as `npm start`
// loads them (bin/server-bundle.mjs); `entryKind` says which ran.
import { mkdtempSync, rmSync } from 'node:fs'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { KyselyPlugin } from 'kysely'
import { serverEntry } from '../../../bin/server-bundle.mjs'
import type * as ServerEntry from '../../../src/server-entry.ts'
import { BENCH_MODEL, KNOWAGENT_MODEL_ID, type SystemServer } from '../protocol.ts'
import { createBenchDatabase } from '../bench-database.ts'

const SECRET = 'bench-secret-0123456789abcdef'
export const BENCH_LOGIN = 'bench'

/**
 * `databaseUrl`: the admin URL of an external PostgreSQL server, in which a fresh database is
 * created for this process; without it, the embedded default in a temporary data dir.
 */
export async function startKnowagentServer({
  providerBaseUrl,
  databaseUrl,
  observed = false,
}: {
  providerBaseUrl: string
  databaseUrl?: string | undefined
  /** Metrics on, and every span exported over OTLP/HTTP to the bench provider (which discards them). */
  observed?: boolean | undefined
}): Promise<SystemServer & { readonly dbQueries: () => number; readonly stop: () => Promise<void> }> {
  const entry = serverEntry()
  const { startCoreRuntime, createApiTokenFor, createUser, loadConfig, createLogger, registerInstance, putFile, createApp, API_PREFIX, appContextOf, startTracing } =
    (await import(entry.url)) as typeof ServerEntry
  const dataDir = mkdtempSync(join(tmpdir(), 'knowagent-bench-data-'))
  const removeDataDir = () => rmSync(dataDir, { recursive: true, force: true })
  const env = {
    KNOWAGENT_DATA_DIR: dataDir,
    KNOWAGENT_SECRET: SECRET,
    ...(databaseUrl ? { DATABASE_URL: (await createBenchDatabase(databaseUrl, `bench_${process.pid}`)).url } : {}),
  }
  const base = loadConfig({ env, cwd: '/' }) // cwd '/': no knowagent.config.json of the checkout is read
  const config = {
    ...base,
    streamsPerMinute: 1_000_000, // the per-user rate limit is not what is measured
    metrics: { enabled: observed, token: undefined },
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
  const tracing = observed ? startTracing({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: new URL(providerBaseUrl).origin }, serviceName: 'knowagent-bench' }) : undefined
  let runtime: Awaited<ReturnType<typeof startCoreRuntime>>
  try {
    // As serve: exclusive, migrated, retrieval and compile on (`blConfigPath: null`: no bl CLI
    // login of whoever runs the bench is imported).
    runtime = await startCoreRuntime({ config, logger, exclusiveDatabase: true, features: { retrieval: { blConfigPath: null }, compile: true } })
  } catch (error) {
    await tracing?.close()
    removeDataDir()
    throw error
  }
  const { services, dispose } = runtime
  const { db } = services.database
  const instance = await registerInstance({ db, connection: services.database.connection, logger })
  const shutdown = new AbortController()
  // The app gets the same database through a plugin that only counts executed queries.
  let queries = 0
  const counting: KyselyPlugin = {
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      queries += 1
      return args.result
    },
  }
  const app = createApp({ ...appContextOf(services, shutdown.signal), db: db.withPlugin(counting), instanceId: instance.instanceId })
  const user = await createUser(db, { login: BENCH_LOGIN, password: 'bench-password-0123' })
  const token = await createApiTokenFor(db, { secret: services.secret, login: BENCH_LOGIN })
  const note = 'Benchmark note: the workspace the `ls` tool lists.\n'
  await putFile(db, {
    owner: user,
    segments: ['notes', 'bench.md'],
    bytes: new TextEncoder().encode(note),
    parsed: { ok: true, mime: 'text/markdown', text: note },
  })
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening))
  })
  queries = 0
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${API_PREFIX}/stream`,
    headers: { authorization: `Bearer ${token}` },
    note: entry.kind === 'bundle' ? 'from the server bundle' : `from the sources (${entry.reason})`,
    dbQueries: () => queries,
    stop: async () => {
      shutdown.abort(new Error('bench stop'))
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await instance.release()
      await dispose() // compile attempts first, the embedded PostgreSQL last
      await tracing?.close()
      removeDataDir()
    },
  }
}
