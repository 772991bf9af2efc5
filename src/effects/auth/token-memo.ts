// The users of bearer tokens that verified a moment ago, by the token's HMAC (never the token):
// a hint, never proof. A stream's admission checks the token in its own statement instead of a
// query of its own (one round trip fewer per turn, docs/performance.md "the eighth pass"), so a
// token revoked a moment ago is refused on its very next request as before (docs/security.md).
// Entries last a minute — then the full lookup runs again and records the token's use — and at
// most `maxEntries` are kept (the oldest go first). Requests that need the full lookup of one token
// at the same moment share it (`lookup`): a program's 100 streams starting together when the entry
// has just lapsed made 100 lookups of the same row, each in the storm of turn starts.
import type { User } from './users.ts'

export interface TokenMemo {
  readonly get: (tokenHash: string) => User | undefined
  readonly remember: (tokenHash: string, user: User) => void
  readonly forget: (tokenHash: string) => void
  /**
   * The full lookup of a token (`load`), shared by the requests that ask while it runs; a user it
   * finds is remembered, unless the token was forgotten meanwhile.
   */
  readonly lookup: (tokenHash: string, load: () => Promise<User | undefined>) => Promise<User | undefined>
}

const TOKEN_MEMO_TTL_MS = 60_000

export function createTokenMemo({ maxEntries = 1_000, ttlMs = TOKEN_MEMO_TTL_MS, now = Date.now }: { maxEntries?: number; ttlMs?: number; now?: () => number } = {}): TokenMemo {
  const entries = new Map<string, { readonly user: User; readonly expiresAt: number }>()
  const loading = new Map<string, Promise<User | undefined>>()
  const remember = (tokenHash: string, user: User) => {
    entries.delete(tokenHash) // re-inserted last: the oldest entry is always first
    entries.set(tokenHash, { user, expiresAt: now() + ttlMs })
    while (entries.size > maxEntries) entries.delete(entries.keys().next().value!)
  }
  return {
    get: (tokenHash) => {
      const entry = entries.get(tokenHash)
      if (entry === undefined) return undefined
      if (now() >= entry.expiresAt) {
        entries.delete(tokenHash)
        return undefined
      }
      return entry.user
    },
    remember,
    forget: (tokenHash) => {
      entries.delete(tokenHash)
      loading.delete(tokenHash) // a lookup under way is neither shared any more nor remembered
    },
    lookup: (tokenHash, load) => {
      const running = loading.get(tokenHash)
      if (running !== undefined) return running
      const loaded = load().then(
        (user) => {
          if (loading.get(tokenHash) === loaded) {
            loading.delete(tokenHash)
            if (user) remember(tokenHash, user)
          }
          return user
        },
        (error: unknown) => {
          if (loading.get(tokenHash) === loaded) loading.delete(tokenHash)
          throw error
        },
      )
      loading.set(tokenHash, loaded)
      return loaded
    },
  }
}
