// Traces over OTLP/HTTP, when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set; nothing otherwise — no provider, no exporter, no context manager: `traced` and `activeSpan`
// then cost one boolean test.
//
// The spans: an HTTP request (by route template) → a turn (its id and model) → each step the turn
// machine invokes, through the actor bridge (`turn.prepare`, `model.call`, `tool.call` …) → each
// database statement; a compile job → its stages → their channel calls, the same way. One
// AsyncLocalStorage context manager carries the current span across express, the xstate host,
// Effect fibers and the pg pool, which is why this is the OpenTelemetry SDK rather than effect's
// OtlpTracer (whose parent span lives in a fiber's context and does not cross into express, the
// turn host or pg). Attributes are ids and names only: never a message, a URI or a value.
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { context, type Attributes, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'

export interface RunningTracing {
  /** Sends what is buffered, then stops exporting (at shutdown). */
  readonly close: () => Promise<void>
}

let tracer: Tracer | undefined

/** True while this process exports traces. */
export const tracingOn = (): boolean => tracer !== undefined

/** The OTLP/HTTP traces URL from the standard variables, or undefined (tracing off). */
export function tracesUrlOf(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim()
  if (traces) return traces
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined
}

/**
 * Starts exporting when the environment names an endpoint: one per process (serve, worker). Returns
 * undefined, creating nothing, when it does not.
 */
export function startTracing({ env, serviceName }: { env: Readonly<Record<string, string | undefined>>; serviceName: string }): RunningTracing | undefined {
  const url = tracesUrlOf(env)
  if (url === undefined || tracer !== undefined) return undefined
  const contextManager = new AsyncLocalStorageContextManager().enable()
  context.setGlobalContextManager(contextManager)
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME?.trim() || serviceName }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }), scheduledDelayMillis: 1000 })],
  })
  trace.setGlobalTracerProvider(provider)
  tracer = provider.getTracer('knowagent')
  return {
    close: async () => {
      tracer = undefined
      await provider.forceFlush().catch(() => undefined)
      await provider.shutdown().catch(() => undefined)
      trace.disable()
      context.disable()
    },
  }
}

/** Starts a span under the current one (undefined when tracing is off). */
export function startSpan(name: string, attributes: Attributes = {}, kind: SpanKind = SpanKind.INTERNAL): Span | undefined {
  return tracer?.startSpan(name, { attributes, kind })
}

/** Runs `fn` with `span` as the current span (as is when there is none). */
export function withSpan<T>(span: Span | undefined, fn: () => T): T {
  return span === undefined ? fn() : context.with(trace.setSpan(context.active(), span), fn)
}

/** Ends `span` as failed with `code` (an error code, never a message), or ok. */
export function endSpan(span: Span | undefined, failure?: string | undefined): void {
  if (span === undefined) return
  if (failure !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: failure })
  span.end()
}

/** `fn` in a child span of the current one, ended when its promise settles (a rejection marks it failed). */
export async function traced<T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  const span = startSpan(name, attributes)
  if (span === undefined) return fn()
  try {
    const result = await withSpan(span, fn)
    endSpan(span)
    return result
  } catch (error) {
    endSpan(span, error instanceof Error ? error.name : 'error')
    throw error
  }
}

/** Adds attributes to the current span (the step the turn host is running), when there is one. */
export function annotateSpan(attributes: Attributes): void {
  if (tracer !== undefined) trace.getActiveSpan()?.setAttributes(attributes)
}

export { SpanKind }
