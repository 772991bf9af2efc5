// The Bailian knowledge API's bodies, decoded at the boundary: the common envelope (`success`,
// `code`, `message`, `request_id`), a page of the service list, search results, and error bodies.
// Pure functions from parsed JSON to data or a typed error; the HTTP client (bailian-client.ts)
// does the requests.
import * as Option from 'effect/Option'
import * as Schema from 'effect/Schema'
import { truncateForDisplay } from '../llm/provider-error-payload.ts'
import type { Redact } from '../llm/redact-secrets.ts'
import { type BailianClientError, BailianHttpError, type BailianOperation, BailianProtocolError } from './bailian-errors.ts'

export type Scene = 'search' | 'chat'
export const SCENES: ReadonlyArray<Scene> = ['search', 'chat']

/** One deployed service, reduced to what routing needs (never `pipeline_list`). */
export interface CatalogEntry {
  readonly agentId: string
  readonly agentName: string
  readonly scene: Scene
  readonly status: string
  readonly modifyTime: string | undefined
  /** Reserved: the list endpoint does not return descriptions yet. */
  readonly description: string | undefined
}

export interface SceneListing {
  readonly scene: Scene
  readonly entries: ReadonlyArray<CatalogEntry>
  /** The server-reported total, which exceeds `entries` when truncated. */
  readonly total: number
  /** More rows exist than the pages fetched. */
  readonly truncated: boolean
}

export interface SearchChunk {
  readonly text: string
  readonly score: number
  readonly doc_id?: string | undefined
  readonly doc_name?: string | undefined
  readonly title?: string | undefined
}

export interface SearchResult {
  readonly chunks: ReadonlyArray<SearchChunk>
  /** How many nodes the service returned before the client-side top_k cut. */
  readonly returned: number
  readonly total: number
  readonly requestId: string | undefined
}


export type Outcome<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly error: BailianClientError }
export const success = <A>(value: A): Outcome<A> => ({ ok: true, value })
export const failure = <A = never>(error: BailianClientError): Outcome<A> => ({ ok: false, error })

const OptionalText = Schema.optional(Schema.NullOr(Schema.String))
const OptionalTime = Schema.optional(Schema.NullOr(Schema.Union([Schema.String, Schema.Number])))

const Envelope = Schema.Struct({
  success: Schema.optional(Schema.NullOr(Schema.Boolean)),
  code: OptionalText,
  message: OptionalText,
  request_id: OptionalText,
})
const decodeEnvelope = Schema.decodeUnknownOption(Envelope)

const ListBody = Schema.Struct({
  data: Schema.Struct({
    total_count: Schema.optional(Schema.NullOr(Schema.Number)),
    rows: Schema.optional(
      Schema.NullOr(
        Schema.Array(
          Schema.Struct({
            agent_id: OptionalText,
            agent_name: OptionalText,
            agent_status: OptionalText,
            modify_time: OptionalTime,
            description: OptionalText,
          }),
        ),
      ),
    ),
  }),
})
const decodeListBody = Schema.decodeUnknownOption(ListBody)

const SearchBody = Schema.Struct({
  request_id: OptionalText,
  data: Schema.Struct({
    total: Schema.optional(Schema.NullOr(Schema.Number)),
    nodes: Schema.optional(
      Schema.NullOr(
        Schema.Array(
          Schema.Struct({
            score: Schema.optional(Schema.NullOr(Schema.Number)),
            text: OptionalText,
            metadata: Schema.optional(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown))),
          }),
        ),
      ),
    ),
  }),
})
const decodeSearchBody = Schema.decodeUnknownOption(SearchBody)

/** A 2xx JSON body that says `success: false`. */
export function refusalOf({ operation, json, redact }: { operation: BailianOperation; json: unknown; redact: Redact }): BailianHttpError | undefined {
  const envelope = Option.getOrUndefined(decodeEnvelope(json))
  if (envelope?.success !== false) return undefined
  return new BailianHttpError({
    operation,
    status: 200,
    serverCode: envelope.code ?? undefined,
    detail: redact(describeCodeMessage({ code: envelope.code ?? undefined, message: envelope.message ?? undefined, fallback: 'the service refused the request' })),
    requestId: envelope.request_id ?? undefined,
  })
}

/**
 * One page of the service list. Every text the service echoes is redacted here, at the boundary
 * (a service named after the key would otherwise carry it into the cache, the settings page and
 * the catalog block the model sees).
 */
export function decodeListPage({ json, scene, redact }: { json: unknown; scene: Scene; redact: Redact }): Outcome<{ entries: CatalogEntry[]; rows: number; total: number | undefined }> {
  const body = Option.getOrUndefined(decodeListBody(json))
  if (body === undefined) return failure(new BailianProtocolError({ operation: 'list', detail: 'the answer has no data.rows', partialText: '' }))
  const rows = body.data.rows ?? []
  const entries: CatalogEntry[] = []
  for (const row of rows) {
    const agentId = redact(row.agent_id?.trim() ?? '')
    if (agentId === '') continue // a row without an id cannot be called
    entries.push({
      agentId,
      agentName: redact(row.agent_name ?? ''),
      scene,
      status: redact(row.agent_status ?? 'deployed'),
      modifyTime: row.modify_time === null || row.modify_time === undefined ? undefined : redact(String(row.modify_time)),
      description: row.description === null || row.description === undefined ? undefined : redact(row.description),
    })
  }
  return success({ entries, rows: rows.length, total: body.data.total_count ?? undefined })
}

export function decodeSearch({ json, topK, redact }: { json: unknown; topK: number; redact: Redact }): Outcome<SearchResult> {
  const body = Option.getOrUndefined(decodeSearchBody(json))
  if (body === undefined) return failure(new BailianProtocolError({ operation: 'search', detail: 'the answer has no data', partialText: '' }))
  const nodes = [...(body.data.nodes ?? [])].sort((a, b) => (b.score ?? 0) - (a.score ?? 0))
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? redact(value) : undefined)
  const chunks = nodes.slice(0, topK).map((node): SearchChunk => {
    const metadata = node.metadata ?? {}
    return {
      text: redact(node.text ?? ''),
      score: node.score ?? 0,
      ...(text(metadata['doc_id']) ? { doc_id: text(metadata['doc_id']) } : {}),
      ...(text(metadata['doc_name']) ? { doc_name: text(metadata['doc_name']) } : {}),
      ...(text(metadata['title']) ? { title: text(metadata['title']) } : {}),
    }
  })
  return success({ chunks, returned: nodes.length, total: body.data.total ?? nodes.length, requestId: body.request_id ?? undefined })
}

/** The service's error body: `code: message` when it has them, else the text; at most 500 characters. */
export function httpErrorFrom({
  operation,
  status,
  bodyText,
  redact,
}: {
  readonly operation: BailianOperation
  readonly status: number
  readonly bodyText: string
  readonly redact: Redact
}): BailianHttpError {
  const json = parseJson(bodyText)
  const envelope = json === NOT_JSON ? undefined : Option.getOrUndefined(decodeEnvelope(json))
  const code = envelope?.code ?? undefined
  const message = envelope?.message ?? undefined
  const detail =
    code !== undefined || message !== undefined
      ? describeCodeMessage({ code, message, fallback: `HTTP ${status}` })
      : bodyText.trim() === ''
        ? `HTTP ${status}`
        : bodyText.trim()
  return new BailianHttpError({
    operation,
    status,
    serverCode: code,
    detail: truncateForDisplay(redact(detail)),
    requestId: envelope?.request_id ?? undefined,
  })
}

function describeCodeMessage({ code, message, fallback }: { code: string | undefined; message: string | undefined; fallback: string }): string {
  if (code && message) return `${code}: ${message}`
  return message || code || fallback
}

export const NOT_JSON = Symbol('not-json')
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return NOT_JSON
  }
}
