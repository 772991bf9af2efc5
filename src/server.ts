// `knowagent serve`: open the database, migrate, bootstrap the demo on an empty embedded
// database, listen, and shut down gracefully (stop accepting, end streams, close the database).
import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import { loadConfig, type AppConfig } from './effects/config/app-config.ts'
import { resolveSecret } from './effects/config/secret.ts'
import { openDatabase, type DatabaseHandle } from './effects/db/database.ts'
import { migrateToLatest } from './effects/db/migrate.ts'
import { createLogger, type Logger } from './effects/logging/logger.ts'
import { bootstrapDemo } from './effects/workspace/bootstrap-demo.ts'
import { createApp } from './http/create-app.ts'
import { makeModelRegistry } from './effects/llm/model-registry.ts'
import { registerInstance, type InstanceRegistration } from './effects/turn/instance-registry.ts'
import { failAllRunningTurns } from './effects/turn/turn-records.ts'

export interface RunningServer {
  readonly url: string
  readonly server: Server
  readonly database: DatabaseHandle
  readonly shutdown: (reason?: string) => Promise<void>
}

export async function startServer({
  config = loadConfig(),
  logger = createLogger({ level: config.logLevel }),
  announce = (line: string) => process.stderr.write(line + '\n'),
}: { config?: AppConfig; logger?: Logger; announce?: (line: string) => void } = {}): Promise<RunningServer> {
  const secret = resolveSecret({ secretFromEnv: config.secretFromEnv, dataDir: config.dataDir })
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
  let server: Server | undefined
  let instance: InstanceRegistration | undefined
  try {
    const { applied } = await migrateToLatest(database.db)
    if (applied.length > 0) logger.info('migrations applied', { applied })
    // Several processes may share a PostgreSQL: close only dead instances' turns. The embedded
    // database has one process at a time, so every running turn there is orphaned.
    if (config.databaseUrl) instance = await registerInstance({ db: database.db, connectionString: config.databaseUrl, logger })
    else {
      const orphaned = await failAllRunningTurns(database.db)
      if (orphaned > 0) logger.warn('closed turns left running by a stopped process', { turns: orphaned })
    }
    const demo = await bootstrapDemo(database.db, { demoPassword: config.demoPassword, maxFileBytes: config.maxFileBytes })
    if (demo.created) logger.info('demo workspace created', { imported: demo.report?.added.length ?? 0, failed: demo.report?.failed.length ?? 0 })

    const shutdownController = new AbortController()
    const models = makeModelRegistry({ models: config.file.models ?? [], env: config.env })
    const app = createApp({ db: database.db, ping: database.ping, config, secret, logger, models, shutdownSignal: shutdownController.signal, instanceId: instance?.instanceId })
    const sockets = new Set<Socket>()
    server = await new Promise<Server>((resolve, reject) => {
      const listening = app.listen(config.port, config.host, (error?: Error) => (error ? reject(error) : resolve(listening)))
      listening.on('error', reject)
    })
    server.on('connection', (socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
    })
    const address = server.address()
    const port = typeof address === 'object' && address ? address.port : config.port
    const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`
    logger.info('listening', { url, database: database.kind })

    announce(`knowagent is running at ${url}`)
    if (demo.created) {
      announce(
        demo.generatedPassword
          ? `Sign in as "demo" with password: ${demo.generatedPassword}   (shown once; set KNOWAGENT_DEMO_PASSWORD to choose it)`
          : 'Sign in as "demo" with the password from KNOWAGENT_DEMO_PASSWORD.',
      )
    } else {
      announce('Sign in with your account (the demo password was printed at first start; reset it with `knowagent user passwd demo`).')
    }

    let closing: Promise<void> | undefined
    const runningServer = server
    const shutdown = (reason = 'shutdown') =>
      (closing ??= (async () => {
        logger.info('shutting down', { reason })
        shutdownController.abort(new Error(reason)) // ends SSE streams and running turns
        await new Promise<void>((resolve) => {
          runningServer.close(() => resolve())
          runningServer.closeIdleConnections()
          // Give in-flight requests a moment, then cut what is left.
          setTimeout(() => {
            for (const socket of sockets) socket.destroy()
          }, 2000).unref()
        })
        await instance?.release()
        await database.close()
        logger.info('stopped')
      })())
    return { url, server, database, shutdown }
  } catch (error) {
    server?.close()
    await instance?.release()
    await database.close()
    throw error
  }
}
