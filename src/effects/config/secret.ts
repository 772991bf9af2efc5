import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { AppConfigService } from './app-config.ts'

/** KNOWAGENT_SECRET, or a random one generated once into the data dir (mode 0600). */
export function resolveSecret({ secretFromEnv, dataDir }: { secretFromEnv: string | undefined; dataDir: string }): string {
  if (secretFromEnv) return secretFromEnv
  const path = join(dataDir, 'secret')
  if (existsSync(path)) {
    const stored = readFileSync(path, 'utf8').trim()
    if (stored.length >= 16) return stored
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const generated = randomBytes(32).toString('base64url')
  writeFileSync(path, generated + '\n', { mode: 0o600, flag: 'w' })
  return generated
}

/** The server secret (sessions, token hashes, encrypted settings) as a service of the composition root. */
export class AppSecret extends Context.Service<AppSecret, string>()('knowagent/config/AppSecret') {
  static readonly layer = Layer.effect(
    AppSecret,
    Effect.gen(function* () {
      const config = yield* AppConfigService
      return resolveSecret({ secretFromEnv: config.secretFromEnv, dataDir: config.dataDir })
    }),
  )
}
