// The one fake Bailian knowledge API shared by every suite: a real HTTP server on 127.0.0.1
// (port 0) that serves list / search / chat for the workspaces it is given, checks the bearer key,
// and records every request (headers, body, whether the client closed it early). Scripts queued per
// operation take precedence over the default behaviour, for errors, odd bodies, stalls and
// byte-exact chat transcripts.
//
//   const fake = await startFakeBailian({ workspaces: { 'ws-1': { apiKey: 'sk-1', services: [...] } } })
//   // config: endpointHost = fake.endpointHost  (http://127.0.0.1:PORT/ws/{workspaceId})
//   fake.enqueue('search', bailianError(400, 'AgentApp.NotFound', 'no such app'))
//   fake.requestsFor('list')[0].body
import { type ProviderScript, type RecordedRequest, startRecordingServer, streamScript } from './scripted-provider.ts'

export type BailianOperation = 'list' | 'search' | 'chat'
export type FakeScene = 'search' | 'chat'

export interface FakeService {
  readonly agent_id: string
  readonly agent_name: string
  readonly scene: FakeScene
  /** Default "deployed". */
  readonly status?: string
  readonly modify_time?: string
}

export interface FakeSearchNode {
  readonly score: number
  readonly text: string
  readonly metadata?: Readonly<Record<string, unknown>>
}

export interface FakeWorkspace {
  readonly apiKey: string
  services: FakeService[]
  /** Nodes answered by search, per agent id (default: three generated nodes). */
  readonly searchNodes?: Readonly<Record<string, ReadonlyArray<FakeSearchNode>>>
  /** The answer text chat generates, per agent id (default: "Answer from <name>."). */
  readonly chatAnswers?: Readonly<Record<string, string>>
}

export interface BailianRequest extends RecordedRequest {
  readonly operation: BailianOperation | 'unknown'
  /** From the `/ws/<id>` path prefix of the fake's endpoint host. */
  readonly workspaceId: string | undefined
}

export type BailianScriptHandler = (request: BailianRequest) => ProviderScript | undefined

export interface FakeBailian {
  /** Use as `retrieval.bailian.endpointHost`: `http://127.0.0.1:PORT/ws/{workspaceId}`. */
  readonly endpointHost: string
  readonly port: number
  readonly requests: ReadonlyArray<BailianRequest>
  readonly requestsFor: (operation: BailianOperation) => BailianRequest[]
  readonly setWorkspace: (id: string, workspace: FakeWorkspace) => void
  readonly workspace: (id: string) => FakeWorkspace | undefined
  /** Queue scripts for one operation; each request of it takes the next one. */
  readonly enqueue: (operation: BailianOperation, ...scripts: ReadonlyArray<ProviderScript>) => void
  /** Asked before the default behaviour when the operation's queue is empty; undefined = default. */
  readonly setHandler: (handler: BailianScriptHandler | undefined) => void
  readonly pendingScripts: (operation: BailianOperation) => number
  readonly openConnections: () => number
  readonly waitForRequests: (count: number, options?: { readonly operation?: BailianOperation; readonly timeoutMs?: number }) => Promise<void>
  readonly waitForClientClose: (requestIndex: number, options?: { readonly timeoutMs?: number }) => Promise<BailianRequest>
  readonly waitForNoConnections: (options?: { readonly timeoutMs?: number }) => Promise<void>
  readonly close: () => Promise<void>
}

const PATHS: Record<string, BailianOperation> = {
  '/api/v1/indices/rag/app/list': 'list',
  '/api/v1/indices/knowledge/search': 'search',
  '/api/v2/apps/knowledge/chat': 'chat',
}

export async function startFakeBailian(
  options: { readonly workspaces?: Readonly<Record<string, FakeWorkspace>> } = {},
): Promise<FakeBailian> {
  const workspaces = new Map<string, FakeWorkspace>(Object.entries(options.workspaces ?? {}))
  const queues: Record<BailianOperation, ProviderScript[]> = { list: [], search: [], chat: [] }
  let handler: BailianScriptHandler | undefined
  let requestCounter = 0
  const server = await startRecordingServer<BailianRequest>({
    name: 'fake Bailian',
    record: (base) => {
      const { workspaceId, path } = splitPath(base.path)
      return { ...base, path, operation: PATHS[path] ?? 'unknown', workspaceId }
    },
    scriptFor: (recorded) =>
      (recorded.operation === 'unknown' ? undefined : queues[recorded.operation].shift()) ??
      handler?.(recorded) ??
      defaultScript({ request: recorded, workspaces, nextRequestId: () => `req-${++requestCounter}` }),
  })
  const { requests } = server
  const requestsFor = (operation: BailianOperation) => requests.filter((request) => request.operation === operation)
  return {
    endpointHost: `http://127.0.0.1:${server.port}/ws/{workspaceId}`,
    port: server.port,
    requests,
    requestsFor,
    setWorkspace: (id, workspace) => {
      workspaces.set(id, workspace)
    },
    workspace: (id) => workspaces.get(id),
    enqueue: (operation, ...scripts) => {
      queues[operation].push(...scripts)
    },
    setHandler: (next) => {
      handler = next
    },
    pendingScripts: (operation) => queues[operation].length,
    openConnections: server.openConnections,
    waitForRequests: (count, { operation, timeoutMs = 5000 } = {}) =>
      server.waitFor(
        () => (operation === undefined ? requests.length : requestsFor(operation).length) >= count,
        timeoutMs,
        `${count} ${operation ?? ''} request(s)`,
      ),
    waitForClientClose: server.waitForClientClose,
    waitForNoConnections: server.waitForNoConnections,
    close: server.close,
  }
}

// ── default behaviour: a small, faithful model of the service ────────────────────────────────

function defaultScript({
  request,
  workspaces,
  nextRequestId,
}: {
  readonly request: BailianRequest
  readonly workspaces: ReadonlyMap<string, FakeWorkspace>
  readonly nextRequestId: () => string
}): ProviderScript {
  const requestId = nextRequestId()
  if (request.operation === 'unknown' || request.method !== 'POST') return bailianError(404, 'NotFound', `no route ${request.method} ${request.path}`, requestId)
  const workspace = request.workspaceId === undefined ? undefined : workspaces.get(request.workspaceId)
  if (workspace === undefined) return bailianError(403, 'Workspace.AccessDenied', 'The workspace does not exist or is not accessible.', requestId)
  if (request.headers.authorization !== `Bearer ${workspace.apiKey}`) {
    return bailianError(401, 'InvalidApiKey', 'Invalid API-key provided.', requestId)
  }
  const body = (request.body ?? {}) as Record<string, unknown>
  switch (request.operation) {
    case 'list':
      return listAnswer({ workspace, body, requestId })
    case 'search': {
      const service = findService(workspace, body['agent_id'], 'search')
      if (service === undefined) return bailianError(400, 'AgentApp.NotFound', `The app ${String(body['agent_id'])} was not found.`, requestId)
      if (typeof body['query'] !== 'string' || body['query'] === '') return bailianError(400, 'InvalidParameter', 'query is required', requestId)
      const nodes = workspace.searchNodes?.[service.agent_id] ?? defaultNodes(service)
      return searchAnswer(nodes, { requestId })
    }
    case 'chat': {
      const input = body['input'] as { messages?: Array<{ content?: unknown }> } | undefined
      const parameters = body['parameters'] as { agent_options?: { agent_id?: unknown } } | undefined
      const service = findService(workspace, parameters?.agent_options?.agent_id, 'chat')
      if (service === undefined) {
        return bailianError(400, 'AgentApp.NotFound', `The app ${String(parameters?.agent_options?.agent_id)} was not found.`, requestId)
      }
      if (body['stream'] !== true || typeof input?.messages?.at(-1)?.content !== 'string') {
        return bailianError(400, 'InvalidParameter', 'input.messages and stream: true are required', requestId)
      }
      const answer = workspace.chatAnswers?.[service.agent_id] ?? `Answer from ${service.agent_name}.`
      // The documented lifecycle: tool_calling → tool_return → plan_start → planning → plan_end →
      // generation_start → generating → generation_end.
      return chatStream(
        [
          { step: 'tool_calling', text: 'search(query)' },
          { step: 'tool_return', text: '3 passages' },
          { step: 'plan_start' },
          { step: 'planning', text: 'Answer from the passages.' },
          { step: 'plan_end' },
          { step: 'generation_start' },
          ...splitText(answer, 12).map((text) => ({ answer: text })),
          { step: 'generation_end' },
          { finish: 'stop' },
        ],
        { requestId },
      )
    }
  }
}

function findService(workspace: FakeWorkspace, agentId: unknown, scene: FakeScene): FakeService | undefined {
  return workspace.services.find(
    (service) => service.agent_id === agentId && service.scene === scene && (service.status ?? 'deployed') === 'deployed',
  )
}

function listAnswer({ workspace, body, requestId }: { workspace: FakeWorkspace; body: Record<string, unknown>; requestId: string }): ProviderScript {
  const scene = body['agent_scene']
  const pageNumber = body['page_number']
  const pageSize = body['page_size']
  if (scene !== 'search' && scene !== 'chat') return bailianError(400, 'InvalidParameter', 'agent_scene must be search or chat', requestId)
  if (typeof pageNumber !== 'number' || pageNumber < 1 || typeof pageSize !== 'number' || pageSize < 1 || pageSize > 100) {
    return bailianError(400, 'InvalidParameter', 'page_number ≥ 1 and 1 ≤ page_size ≤ 100 are required', requestId)
  }
  const status = body['agent_status']
  const matching = workspace.services.filter(
    (service) => service.scene === scene && (status === undefined || (service.status ?? 'deployed') === status),
  )
  const rows = matching.slice((pageNumber - 1) * pageSize, pageNumber * pageSize).map((service) => ({
    agent_id: service.agent_id,
    agent_name: service.agent_name,
    agent_scene: service.scene,
    agent_status: service.status ?? 'deployed',
    agent_version: '1',
    modify_time: service.modify_time,
    pipeline_list: [{ pipeline_id: `pl-${service.agent_id}` }],
  }))
  return jsonAnswer({ success: true, code: 'Success', message: '', request_id: requestId, data: { total_count: matching.length, page_number: pageNumber, page_size: pageSize, rows } })
}

function defaultNodes(service: FakeService): FakeSearchNode[] {
  return [0.91, 0.74, 0.52].map((score, index) => ({
    score,
    text: `Passage ${index + 1} from ${service.agent_name}.`,
    metadata: { doc_id: `doc-${index + 1}`, doc_name: `doc-${index + 1}.md`, title: `Title ${index + 1}` },
  }))
}

function splitText(text: string, size: number): string[] {
  const points = Array.from(text)
  const parts: string[] = []
  for (let i = 0; i < points.length; i += size) parts.push(points.slice(i, i + size).join(''))
  return parts
}

// ── script builders ─────────────────────────────────────────────────────────────────────────

export function jsonAnswer(body: unknown, status = 200, delayMs?: number): ProviderScript {
  return { kind: 'response', status, body: JSON.stringify(body), headers: { 'content-type': 'application/json' }, delayMs }
}

/** The service's error body: `{code, message, request_id}`. */
export function bailianError(status: number, code: string, message: string, requestId = 'req-error'): ProviderScript {
  return jsonAnswer({ code, message, request_id: requestId }, status)
}

export const invalidApiKey = () => bailianError(401, 'InvalidApiKey', 'Invalid API-key provided.')
export const invalidParameter = (message = 'Required parameter(agent_id) missing or invalid.') => bailianError(400, 'InvalidParameter', message)
export const agentNotFound = (agentId = 'unknown') => bailianError(400, 'AgentApp.NotFound', `The app ${agentId} was not found.`)
export const throttling = () => bailianError(429, 'Throttling', 'Requests rate limit exceeded, please try again later.')
export const serverError = (status = 500) => bailianError(status, 'InternalError', 'An internal error has occurred, please try again later.')

export function searchAnswer(
  nodes: ReadonlyArray<FakeSearchNode>,
  { requestId = 'req-search', success = true, total }: { requestId?: string; success?: boolean; total?: number } = {},
): ProviderScript {
  return jsonAnswer({
    success,
    code: success ? 'Success' : 'Index.InvalidParameter',
    message: success ? '' : 'The index is not ready.',
    request_id: requestId,
    data: success ? { total: total ?? nodes.length, nodes } : null,
  })
}

export type ChatFrameSpec =
  /** A frame of a non-answer step, optionally with content. */
  | { readonly step: string; readonly text?: string }
  /** A piece of answer text (`extra.step = "generating"`). */
  | { readonly answer: string }
  /** The last frame: empty content with this finish reason (step generation_end). */
  | { readonly finish: string }
  /** An `event: error` frame. */
  | { readonly error: { readonly code: string; readonly message: string } }
  /** Written verbatim. */
  | { readonly raw: string }

/** SSE text of a knowledge-chat stream, one frame per spec. */
export function chatFrames(specs: ReadonlyArray<ChatFrameSpec>, { requestId = 'req-chat' }: { requestId?: string } = {}): string {
  const frame = (content: string, step: string, finish = ''): string =>
    `data: ${JSON.stringify({
      output: { choices: [{ message: { role: 'assistant', content, extra: { step } }, finish_reason: finish }] },
      request_id: requestId,
    })}\n\n`
  return specs
    .map((spec) => {
      if ('step' in spec) return frame(spec.text ?? '', spec.step)
      if ('answer' in spec) return frame(spec.answer, 'generating')
      if ('finish' in spec) return frame('', 'generation_end', spec.finish)
      if ('error' in spec) return `event: error\ndata: ${JSON.stringify({ ...spec.error, request_id: requestId })}\n\n`
      return spec.raw
    })
    .join('')
}

export function chatStream(
  specs: ReadonlyArray<ChatFrameSpec>,
  options: { readonly requestId?: string; readonly end?: 'close' | 'hang' | 'reset'; readonly splitAt?: ReadonlyArray<number>; readonly delayMs?: number } = {},
): ProviderScript {
  return streamScript(chatFrames(specs, options), { end: options.end, splitAt: options.splitAt, delayMs: options.delayMs })
}

/** A chat that plans, then never says another word and never ends. */
export const stalledChat = () => chatStream([{ step: 'planning', text: 'Planning…' }], { end: 'hang' })

/** `count` deployed services of one scene, newest last (modify_time ascending). */
export function manyServices(scene: FakeScene, count: number, { prefix = scene }: { prefix?: string } = {}): FakeService[] {
  return Array.from({ length: count }, (_, index) => ({
    agent_id: `${prefix}-${String(index + 1).padStart(3, '0')}`,
    agent_name: `${prefix} service ${index + 1}`,
    scene,
    modify_time: new Date(Date.UTC(2026, 0, 1) + index * 60_000).toISOString(),
  }))
}

// ── plumbing ────────────────────────────────────────────────────────────────────────────────

function splitPath(url: string): { workspaceId: string | undefined; path: string } {
  const pathname = url.split('?')[0] ?? ''
  const match = /^\/ws\/([^/]+)(\/.*)$/.exec(pathname)
  return match ? { workspaceId: decodeURIComponent(match[1]!), path: match[2]! } : { workspaceId: undefined, path: pathname }
}

