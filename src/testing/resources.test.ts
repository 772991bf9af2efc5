// The resource tracker sees what a run left behind: a timer not cleared, a socket not closed, a
// promise never settled; and nothing once they are released, nor what other code created.
import { type AddressInfo, connect, createServer, type Server } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { createResourceTracker, describeHeld, settleEventLoop } from './resources.ts'

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

it('counts a pending timer and promise until they are released', async () => {
  const tracker = createResourceTracker()
  cleanups.push(tracker.dispose)
  let release = () => {}
  tracker.run('run#1', () => {
    void new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 60_000)
      release = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  })
  setTimeout(() => {}, 0) // outside any run: not counted
  expect(tracker.held('run#1')).toEqual({ PROMISE: 1, Timeout: 1 })
  expect(describeHeld(tracker.held('run#1'))).toBe('1 pending promise, 1 Timeout')
  release()
  await settleEventLoop()
  expect(tracker.held('run#1')).toEqual({})
})

it('counts an open socket until it is closed', async () => {
  const server: Server = createServer((socket) => socket.on('error', () => {}))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanups.push(() => server.close())
  const tracker = createResourceTracker()
  cleanups.push(tracker.dispose)
  const port = (server.address() as AddressInfo).port
  const socket = tracker.run('run#2', () => connect(port, '127.0.0.1'))
  await new Promise((resolve) => socket.once('connect', resolve))
  expect(tracker.held('run#2').TCPWRAP).toBe(1)
  socket.destroy()
  await settleEventLoop()
  expect(tracker.held('run#2').TCPWRAP).toBeUndefined()
})
