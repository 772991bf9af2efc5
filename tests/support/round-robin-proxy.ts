// The load balancer of a many-instances test: a plain HTTP reverse proxy that sends each request to
// the next of its targets in turn (no sticky sessions), streams both ways, passes a client's
// disconnect on, and says which target answered (`x-upstream`: its index). `remove` takes a target
// out, as a load balancer's health check would after a death.
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export interface RoundRobinProxy {
  readonly url: string
  readonly remove: (target: string) => void
  readonly close: () => Promise<void>
}

export async function startRoundRobinProxy(targets: ReadonlyArray<string>): Promise<RoundRobinProxy> {
  const live = targets.map((url, index) => ({ url: new URL(url), index }))
  let next = 0
  const sockets = new Set<Socket>()
  const server: Server = createServer((req, res) => {
    const target = live[next++ % live.length]!
    const upstream = request(
      { host: target.url.hostname, port: target.url.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.url.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, { ...answer.headers, 'x-upstream': String(target.index) })
        res.flushHeaders()
        answer.pipe(res)
      },
    )
    upstream.on('error', () => res.destroy())
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy()
    })
    req.pipe(upstream)
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    remove: (url) => {
      const at = live.findIndex((target) => target.url.href === new URL(url).href)
      if (at >= 0) live.splice(at, 1)
    },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
