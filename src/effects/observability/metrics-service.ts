// The metrics as a service of the composition root (src/effects/app-layer.ts).
import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import { Database } from '../db/database.ts'
import { databaseGauges } from './database-gauges.ts'
import { createServiceMetrics, NO_METRICS, type ServiceMetrics } from './metrics.ts'

/** The metrics as a service of the composition root: counting when `metrics.enabled`, NO_METRICS otherwise. */
export class MetricsService extends Context.Service<MetricsService, ServiceMetrics>()('knowagent/observability/Metrics') {
  /** With the database's gauges (the pool, the compile queue, the retrieval catalogs). */
  static layer(enabled: boolean): Layer.Layer<MetricsService, never, Database> {
    if (!enabled) return Layer.succeed(MetricsService, NO_METRICS)
    return Layer.effect(
      MetricsService,
      Effect.gen(function* () {
        const database = yield* Database
        const metrics = yield* Effect.acquireRelease(Effect.sync(() => createServiceMetrics()), (metrics) => Effect.sync(() => metrics.close()))
        metrics.addCollector(databaseGauges(database))
        return metrics
      }),
    )
  }
}
