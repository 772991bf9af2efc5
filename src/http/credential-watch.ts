// What a long-lived response does while it runs (a job stream, a chat turn): watch that the
// session or token it was opened with still holds. It asks again at once when the change feed says
// one of the user's credentials ended (signed out, password changed, token revoked — from any
// process, the CLI's included) or the feed reconnected (such a notice may have been missed), and
// every `credentialRecheckMs` for what sends no notice (a session's expiry, a process without a feed).
import { CREDENTIALS_CHANNEL } from '../effects/auth/users.ts'
import type { AppContext } from './app-context.ts'

/** How often a long-lived response re-checks the credential it was opened with (AppContext.credentialRecheckMs). */
export const CREDENTIAL_RECHECK_MS = 15_000

export interface CredentialWatch {
  /** Checks now (one check at a time; a check asked for meanwhile runs after it). */
  readonly check: () => void
  readonly release: () => void
}

/**
 * Calls `onEnded` once, the first time `stillLive` answers false. A check that throws (the database
 * briefly unreachable) is logged and counts as live: the next notice or tick asks again.
 */
export function watchCredential(
  ctx: AppContext,
  { userId, stillLive, onEnded }: { readonly userId: string; readonly stillLive: () => Promise<boolean>; readonly onEnded: () => void },
): CredentialWatch {
  let ended = false
  let released = false
  let running: Promise<void> | undefined
  let again = false
  const run = async (): Promise<void> => {
    do {
      again = false
      let live = true
      try {
        live = await stillLive()
      } catch (error) {
        ctx.logger.warn('credential check failed', { error: error instanceof Error ? error.message : String(error) })
      }
      if (!live && !ended && !released) {
        ended = true
        onEnded()
      }
    } while (again && !ended && !released)
    running = undefined
  }
  const check = (): void => {
    if (ended || released) return
    if (running) {
      again = true
      return
    }
    running = run()
  }
  const unfollow = [ctx.feed?.on(CREDENTIALS_CHANNEL, (id) => void (id === userId && check())), ctx.feed?.onReset(check)]
  const timer = setInterval(check, ctx.credentialRecheckMs ?? CREDENTIAL_RECHECK_MS)
  timer.unref()
  return {
    check,
    release: () => {
      released = true
      clearInterval(timer)
      for (const stop of unfollow) stop?.()
    },
  }
}
