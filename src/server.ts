// `knowagent serve`: build the services from the composition root (src/effects/app-layer.ts) —
// which opens the database (the embedded PostgreSQL unless DATABASE_URL is set) and migrates it —
// bootstrap the demo on an empty database, listen, and shut down gracefully: drain (no new turn,
// /readyz 503, running turns finish for up to `shutdown.drainSeconds`, the rest are cancelled),
// end the other streams, stop accepting, then release every service in reverse order (the
// embedded PostgreSQL stops with it).
import { createTokenMemo } from './effects/auth/token-memo.ts'
import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import { startCoreRuntime, type CoreServiceValues } from './effects/app-layer.ts'
import { loadConfig, type AppConfig } from './effects/config/app-config.ts'
import type { DatabaseHandle } from './effects/db/database.ts'
import { createLogger, type Logger } from './effects/logging/logger.ts'
import { startTracing } from './effects/observability/tracing.ts'
import { registerInstance, type InstanceRegistration } from './effects/turn/instance-registry.ts'
import { bootstrapDemo } from './effects/workspace/bootstrap-demo.ts'
import type { AppContext } from './http/app-context.ts'
import { createApp } from './http/create-app.ts'

export interface RunningServer {
  readonly url: string
  readonly server: Server
  readonly database: DatabaseHandle
  readonly shutdown: (reason?: string) => Promise<void>
  /**
   * Ends the drain of a shutdown under way (its running turns are cancelled now) and cuts the
   * connections it is still waiting for, instead of after its grace period (a second Ctrl-C); the
   * rest of the shutdown, the database's stop included, goes on.
   */
  readonly hurry: () => void
}

/** The routes' context from the runtime's services. */
export function appContextOf(services: CoreServiceValues, shutdownSignal: AbortSignal): AppContext {
  const { config, logger, metrics, secret, database, feed, models, modelConnections, tools, preStep, parser, retrieval, compile, turns } = services
  return { db: database.db, ping: database.ping, config, secret, logger, metrics, models, modelConnections, tools, preStep, parser, retrieval, compile: compile?.feature, feed, shutdownSignal, turns, tokenMemo: createTokenMemo() }
}

function listen(app: ReturnType<typeof createApp>, config: AppConfig): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const listening = app.listen(config.port, config.host, (error?: Error) => (error ? reject(error) : resolve(listening)))
    listening.on('error', reject)
  })
}

export async function startServer({
  config = loadConfig(),
  logger = createLogger({ level: config.logLevel }),
  announce = (line: string) => process.stderr.write(line + '\n'),
}: { config?: AppConfig; logger?: Logger; announce?: (line: string) => void } = {}): Promise<RunningServer> {
  // Traces over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set; nothing is created otherwise.
  const tracing = startTracing({ env: config.env, serviceName: 'knowagent' })
  const { services, dispose } = await startCoreRuntime({ config, logger, exclusiveDatabase: true, features: { retrieval: true, compile: true, modelConnections: true, backups: true } }).catch(async (error: unknown) => {
    await tracing?.close()
    throw error
  })
  const { database } = services
  let server: Server | undefined
  let instance: InstanceRegistration | undefined
  try {
    // Closes the turns that dead processes left running (ours stay ours while we live).
    instance = await registerInstance({
      db: database.db,
      connection: database.connection,
      logger,
      leaseSeconds: config.turns.leaseSeconds,
      onInterrupted: (models) => models.forEach((model) => services.metrics.turnInterrupted(model)),
      onLapsed: async () => {
        const ended = await services.turns.endClosedElsewhere()
        if (ended > 0) logger.warn('turns closed by another instance while this one was unresponsive ended with their stored terminal', { turns: ended })
      },
    })
    const demo = await bootstrapDemo(database.db, { demoPassword: config.demoPassword, maxFileBytes: config.maxFileBytes, parser: services.parser })
    if (demo.created) logger.info('demo workspace created', { imported: demo.report?.added.length ?? 0, failed: demo.report?.failed.length ?? 0 })

    const shutdownController = new AbortController()
    const app = createApp({ ...appContextOf(services, shutdownController.signal), instanceId: instance.instanceId })
    const sockets = new Set<Socket>()
    server = await listen(app, config)
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
    const { turns } = services
    const drainCut = new AbortController()
    const cutConnections = () => {
      for (const socket of sockets) socket.destroy()
    }
    const shutdown = (reason = 'shutdown') =>
      (closing ??= (async () => {
        // Drain: no new turn (503 draining, /readyz 503; /healthz stays ok), running ones finish.
        turns.drain()
        logger.info('shutting down', { reason, runningTurns: turns.running(), drainSeconds: config.drainSeconds })
        if (turns.running() > 0 && config.drainSeconds > 0) {
          const deadline = AbortSignal.any([AbortSignal.timeout(config.drainSeconds * 1000), drainCut.signal])
          await Promise.race([turns.idle(), new Promise<void>((resolve) => deadline.addEventListener('abort', () => resolve(), { once: true }))])
        }
        if (turns.running() > 0) logger.info('drain over: cancelling the turns still running', { turns: turns.running() })
        await turns.stopAll('shutdown') // each ends with its terminal event (cancelled, the server stopped), stored
        shutdownController.abort(new Error(reason)) // ends the other streams (job streams, resumed turn streams: their clients resume elsewhere)
        await new Promise<void>((resolve) => {
          runningServer.close(() => resolve())
          runningServer.closeIdleConnections()
          // Give in-flight requests a moment, then cut what is left.
          setTimeout(cutConnections, 2000).unref()
        })
        await instance?.release()
        await dispose() // compile attempts are interrupted and released for retry first, the database last
        await tracing?.close() // the spans still buffered are sent
        logger.info('stopped')
      })())
    const hurry = () => {
      if (!closing) return
      drainCut.abort()
      cutConnections()
    }
    return { url, server, database, shutdown, hurry }
  } catch (error) {
    server?.close()
    await instance?.release()
    await dispose()
    await tracing?.close()
    throw error
  }
}
