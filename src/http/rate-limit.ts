// A per-key sliding-window limiter (in process memory). Several processes each enforce it.
export interface RateLimiter {
  /** Takes one slot; returns how long to wait (ms) when the limit is reached, else 0. */
  readonly take: (key: string) => number
}

export function createRateLimiter({ limit, windowMs, now = Date.now }: { limit: number; windowMs: number; now?: () => number }): RateLimiter {
  const hits = new Map<string, number[]>()
  return {
    take: (key) => {
      const at = now()
      const recent = (hits.get(key) ?? []).filter((t) => at - t < windowMs)
      if (recent.length >= limit) {
        hits.set(key, recent)
        return windowMs - (at - recent[0]!)
      }
      recent.push(at)
      hits.set(key, recent)
      if (hits.size > 10_000) {
        for (const [k, times] of hits) if (times.every((t) => at - t >= windowMs)) hits.delete(k)
      }
      return 0
    },
  }
}
