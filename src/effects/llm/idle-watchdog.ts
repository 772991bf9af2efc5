// The idle timeout of one provider attempt (openai-client.ts): no byte for `idleMs` ends it.

export interface IdleWatchdog {
  /** Some progress happened: restart the idle period. */
  readonly touch: () => void
  readonly fired: () => boolean
  /** Clears the timer; always called when the attempt ends. */
  readonly stop: () => void
}

/**
 * One timer per attempt rather than one per chunk: `touch` only records the time, and the timer,
 * when it fires early, re-arms itself for the remaining idle period.
 */
export function createIdleWatchdog({ idleMs, onIdle }: { readonly idleMs: number; readonly onIdle: () => void }): IdleWatchdog {
  let lastActivity = performance.now()
  let hasFired = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const check = (): void => {
    const idleFor = performance.now() - lastActivity
    if (idleFor >= idleMs) {
      timer = undefined
      hasFired = true
      onIdle()
    } else {
      timer = setTimeout(check, Math.max(1, Math.ceil(idleMs - idleFor)))
    }
  }
  timer = setTimeout(check, idleMs)
  return {
    touch: () => {
      lastActivity = performance.now()
    },
    fired: () => hasFired,
    stop: () => {
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
    },
  }
}
