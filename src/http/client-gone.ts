import type { ServerResponse } from 'node:http'

/**
 * Calls `onGone` once the client has left: the response closed before it finished. A handler
 * that awaited something first (auth, the turn's admission) may register after the response's
 * 'close' has fired, so a close that already happened counts too. Returns the unregistration.
 */
export function whenClientGone(res: ServerResponse, onGone: () => void): () => void {
  const onClose = (): void => {
    if (!res.writableFinished) onGone()
  }
  res.on('close', onClose)
  if (res.closed) onClose()
  return () => void res.off('close', onClose)
}
