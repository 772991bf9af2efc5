// `knowagent/testing`: the scripted OpenAI-compatible provider shared by every suite: a real
// HTTP server on 127.0.0.1 (port 0) that replays scripts byte for byte and records what the
// client did. Each request takes the next queued script, or asks a handler function; with
// neither, it answers 500 so a test that forgot a script fails loudly.
//
//   const provider = await startScriptedProvider()
//   provider.enqueue(streamScript(chatCompletionSse([{ text: 'Hi' }, { finish: 'stop' }, 'done'])))
//   // model config: { baseUrl: provider.baseUrl, ... }
//   provider.requests[0].body   // the parsed JSON the client sent
//   await provider.waitForClientClose(0)  // the client went away before the script ended
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { splitBytes } from './chat-completion-sse.ts'

export * from './chat-completion-sse.ts'

// ---------------------------------------------------------------------------------------------
// Scripts

export interface ScriptedChunk {
  /** Raw bytes, or text sent as UTF-8. Split anywhere, even inside a code point or a CRLF. */
  readonly bytes: string | Uint8Array
  /** Wait this long before writing the chunk. */
  readonly delayMs?: number | undefined
  /** Write the chunk only once this settles (then after `delayMs`): the test decides when, not a clock. */
  readonly after?: PromiseLike<unknown> | undefined
}

export type ProviderScript =
  | {
      readonly kind: 'stream'
      readonly status?: number | undefined
      readonly headers?: Readonly<Record<string, string>> | undefined
      readonly chunks: ReadonlyArray<ScriptedChunk>
      /** After the last chunk: end the response (default), keep it open, or reset the socket. */
      readonly end?: 'close' | 'hang' | 'reset' | undefined
    }
  | {
      readonly kind: 'response'
      readonly status: number
      readonly headers?: Readonly<Record<string, string>> | undefined
      readonly body: string
      readonly delayMs?: number | undefined
    }
  /** Destroy the socket without answering (a connection reset before any byte). */
  | { readonly kind: 'reset'; readonly delayMs?: number | undefined }
  /** Read the request and never answer. */
  | { readonly kind: 'hang' }

export type ScriptHandler = (request: RecordedRequest) => ProviderScript

export interface RecordedRequest {
  /** 0-based, in arrival order. */
  readonly index: number
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly rawBody: string
  /** The JSON body, or undefined when it was not JSON. */
  readonly body: unknown
  /** `performance.now()` when the request body had been read. */
  readonly receivedAt: number
  /** `performance.now()` when the client closed the connection before the script finished. */
  clientClosedAt: number | undefined
  /** `performance.now()` when the server finished the response (script complete). */
  finishedAt: number | undefined
}

export interface ScriptedProvider {
  /** e.g. http://127.0.0.1:41234/v1 — use as a model's `baseUrl`. */
  readonly baseUrl: string
  readonly port: number
  readonly requests: ReadonlyArray<RecordedRequest>
  /** Queue scripts; each request takes the next one. */
  readonly enqueue: (...scripts: ReadonlyArray<ProviderScript>) => void
  /** Used when the queue is empty. */
  readonly setHandler: (handler: ScriptHandler | undefined) => void
  readonly pendingScripts: () => number
  /** TCP connections currently open on the server side. */
  readonly openConnections: () => number
  readonly waitForRequests: (count: number, options?: { readonly timeoutMs?: number }) => Promise<void>
  /** Resolves with the request once the client closed it early; rejects after the timeout. */
  readonly waitForClientClose: (requestIndex: number, options?: { readonly timeoutMs?: number }) => Promise<RecordedRequest>
  /** Resolves once the server has no open connection; rejects after the timeout. */
  readonly waitForNoConnections: (options?: { readonly timeoutMs?: number }) => Promise<void>
  readonly close: () => Promise<void>
}

export async function startScriptedProvider(
  options: { readonly scripts?: ReadonlyArray<ProviderScript>; readonly handler?: ScriptHandler } = {},
): Promise<ScriptedProvider> {
  const queue: ProviderScript[] = [...(options.scripts ?? [])]
  let handler = options.handler
  const server = await startRecordingServer<RecordedRequest>({
    name: 'scripted provider',
    record: (base) => base,
    scriptFor: (request) =>
      queue.shift() ??
      handler?.(request) ?? {
        kind: 'response',
        status: 500,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ error: { code: 'no_script', message: `scripted provider: no script for request #${request.index}` } }),
      },
  })
  const { requests } = server
  return {
    baseUrl: `http://127.0.0.1:${server.port}/v1`,
    port: server.port,
    requests,
    enqueue: (...scripts) => {
      queue.push(...scripts)
    },
    setHandler: (next) => {
      handler = next
    },
    pendingScripts: () => queue.length,
    openConnections: server.openConnections,
    waitForRequests: (count, { timeoutMs = 5000 } = {}) => server.waitFor(() => requests.length >= count, timeoutMs, `${count} request(s)`),
    waitForClientClose: server.waitForClientClose,
    waitForNoConnections: server.waitForNoConnections,
    close: server.close,
  }
}

/** The HTTP side shared by the scripted servers (this provider, tests' fake Bailian): records every request, plays its script, tracks connections. */
export interface RecordingServer<R extends RecordedRequest> {
  readonly port: number
  readonly requests: R[]
  readonly openConnections: () => number
  /** Resolves once `condition` holds (checked now and at every request, response close and connection close). */
  readonly waitFor: (condition: () => boolean, timeoutMs: number, what: string) => Promise<void>
  readonly waitForClientClose: (requestIndex: number, options?: { readonly timeoutMs?: number }) => Promise<R>
  readonly waitForNoConnections: (options?: { readonly timeoutMs?: number }) => Promise<void>
  /** Cancels pending script steps, cuts every connection and closes the server. */
  readonly close: () => Promise<void>
}

export async function startRecordingServer<R extends RecordedRequest>({
  name,
  record,
  scriptFor,
}: {
  /** Names the server in timeout errors. */
  readonly name: string
  /** The stored record of a request, from its common fields. */
  readonly record: (base: RecordedRequest) => R
  readonly scriptFor: (request: R) => ProviderScript
}): Promise<RecordingServer<R>> {
  const requests: R[] = []
  const sockets = new Set<Socket>()
  const timers = new Set<ReturnType<typeof setTimeout>>()
  const listeners = new Set<() => void>()
  const notify = (): void => {
    for (const listener of [...listeners]) listener()
  }

  const schedule = (delayMs: number, run: () => void, after?: PromiseLike<unknown>): void => {
    if (after !== undefined) {
      const next = (): void => schedule(delayMs, run)
      after.then(next, next)
      return
    }
    const timer = setTimeout(() => {
      timers.delete(timer)
      run()
    }, delayMs)
    timers.add(timer)
  }

  const server = createServer((req, res) => {
    void readBody(req).then((rawBody) => {
      const recorded = record({
        index: requests.length,
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawBody,
        body: parseJsonOrUndefined(rawBody),
        receivedAt: performance.now(),
        clientClosedAt: undefined,
        finishedAt: undefined,
      })
      requests.push(recorded)
      res.on('close', () => {
        if (!res.writableFinished && recorded.clientClosedAt === undefined) recorded.clientClosedAt = performance.now()
        notify()
      })
      notify()
      playScript({ script: scriptFor(recorded), req, res, recorded, schedule, notify })
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => {
      sockets.delete(socket)
      notify()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port

  const waitFor = (condition: () => boolean, timeoutMs: number, what: string): Promise<void> =>
    new Promise((resolve, reject) => {
      if (condition()) return resolve()
      const listener = (): void => {
        if (!condition()) return
        clearTimeout(timer)
        listeners.delete(listener)
        resolve()
      }
      const timer = setTimeout(() => {
        listeners.delete(listener)
        reject(new Error(`${name}: timed out after ${timeoutMs} ms waiting for ${what}`))
      }, timeoutMs)
      listeners.add(listener)
    })

  return {
    port,
    requests,
    openConnections: () => sockets.size,
    waitFor,
    waitForClientClose: async (requestIndex, { timeoutMs = 5000 } = {}) => {
      await waitFor(() => requests[requestIndex]?.clientClosedAt !== undefined, timeoutMs, `client to close request #${requestIndex}`)
      return requests[requestIndex] as R
    },
    waitForNoConnections: ({ timeoutMs = 5000 } = {}) => waitFor(() => sockets.size === 0, timeoutMs, 'no open connection'),
    close: async () => {
      for (const timer of timers) clearTimeout(timer)
      timers.clear()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

export function playScript({
  script,
  req,
  res,
  recorded,
  schedule,
  notify,
}: {
  readonly script: ProviderScript
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly recorded: RecordedRequest
  readonly schedule: (delayMs: number, run: () => void, after?: PromiseLike<unknown>) => void
  readonly notify: () => void
}): void {
  const finish = (): void => {
    recorded.finishedAt = performance.now()
    notify()
  }
  const clientGone = (): boolean => recorded.clientClosedAt !== undefined || res.destroyed
  switch (script.kind) {
    case 'hang':
      return
    case 'reset':
      schedule(script.delayMs ?? 0, () => req.socket.destroy())
      return
    case 'response':
      schedule(script.delayMs ?? 0, () => {
        if (clientGone()) return
        res.writeHead(script.status, { 'content-type': 'text/plain; charset=utf-8', ...script.headers })
        res.end(script.body, finish)
      })
      return
    case 'stream': {
      res.writeHead(script.status ?? 200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        ...script.headers,
      })
      res.flushHeaders()
      const writeFrom = (position: number): void => {
        if (clientGone()) return
        const chunk = script.chunks[position]
        if (chunk === undefined) {
          if (script.end === 'hang') return
          if (script.end === 'reset') {
            req.socket.destroy()
            return
          }
          res.end(finish)
          return
        }
        schedule(chunk.delayMs ?? 0, () => {
          if (clientGone()) return
          // Continue once the bytes reached the socket, so an `end: 'reset'` cannot drop them.
          res.write(typeof chunk.bytes === 'string' ? Buffer.from(chunk.bytes, 'utf8') : chunk.bytes, () =>
            writeFrom(position + 1),
          )
        }, chunk.after)
      }
      writeFrom(0)
      return
    }
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')))
    req.on('error', () => resolve(Buffer.concat(parts).toString('utf8')))
  })
}

function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** A stream script from a whole body, optionally cut at byte offsets with a delay between chunks. */
export function streamScript(
  body: string | Uint8Array,
  options: {
    readonly splitAt?: ReadonlyArray<number>
    readonly delayMs?: number
    readonly end?: 'close' | 'hang' | 'reset'
    readonly headers?: Readonly<Record<string, string>>
  } = {},
): ProviderScript {
  return {
    kind: 'stream',
    chunks: splitBytes(body, options.splitAt ?? []).map((bytes) => ({ bytes, delayMs: options.delayMs })),
    end: options.end,
    headers: options.headers,
  }
}

/** A plain HTTP answer (errors, rate limits …). */
export function httpResponseScript(
  status: number,
  body: string | Record<string, unknown>,
  headers: Readonly<Record<string, string>> = {},
): ProviderScript {
  const isText = typeof body === 'string'
  return {
    kind: 'response',
    status,
    body: isText ? body : JSON.stringify(body),
    headers: { 'content-type': isText ? 'text/plain; charset=utf-8' : 'application/json', ...headers },
  }
}
