// The server bundle (bin/server-bundle.mjs): built from this checkout it is what the launcher
// loads, it runs the CLI with every migration of migrations/ compiled in, and a bundle that no
// longer matches the checkout — an edited source, a new migration, a missing file — is not used.
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildServerBundle, inspectBundle, serverEntry } from '../../bin/server-bundle.mjs'
import { MIGRATION_FILE } from '../../src/effects/db/migrate.ts'
import type * as ServerEntry from '../../src/server-entry.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const MANIFEST = 'server-manifest.json'

interface Manifest {
  bundle: string
  migrations: string[]
  inputs: Record<string, { size: number; mtimeMs: number; sha256: string }>
}

describe('the server bundle', () => {
  // One level below the root, as the bundle must be (src/project-root.ts).
  let outDir: string
  let built: Awaited<ReturnType<typeof buildServerBundle>>
  const scratch: string[] = []
  beforeAll(async () => {
    outDir = mkdtempSync(join(ROOT, '.build-test-'))
    built = await buildServerBundle({ outDir })
  })
  afterAll(() => {
    for (const dir of [outDir, ...scratch]) rmSync(dir, { recursive: true, force: true })
  })

  const readManifest = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as Manifest
  /** A copy of the built bundle whose manifest `change` edits. */
  const copyWith = (change: (manifest: Manifest) => void): string => {
    const dir = mkdtempSync(join(ROOT, '.build-test-'))
    scratch.push(dir)
    cpSync(outDir, dir, { recursive: true })
    const manifest = readManifest(dir)
    change(manifest)
    writeFileSync(join(dir, MANIFEST), JSON.stringify(manifest))
    return dir
  }

  it('is built from this checkout, and the launcher loads it (the sources with KNOWAGENT_BUNDLE=0)', () => {
    expect(built.modules).toBeGreaterThan(500)
    expect(readdirSync(outDir).filter((name) => name.endsWith('.mjs'))).toEqual([readManifest(outDir).bundle]) // the first build: nothing before it
    expect(inspectBundle({ outDir })).toEqual({ ok: true, path: built.path })
    expect(serverEntry({ outDir, env: {} })).toEqual({ kind: 'bundle', url: pathToFileURL(built.path).href })
    expect(serverEntry({ outDir, env: { KNOWAGENT_BUNDLE: '0' } })).toMatchObject({ kind: 'sources', url: pathToFileURL(join(ROOT, 'src/server-entry.ts')).href })
    // Every project file compiled in is watched, with the lock file and the build script.
    const inputs = Object.keys(readManifest(outDir).inputs)
    expect(inputs).toEqual(expect.arrayContaining(['src/cli.ts', 'src/effects/turn/run-turn.ts', 'views/pages/settings.tsx', 'package-lock.json', 'bin/server-bundle.mjs']))
    expect(inputs.filter((input) => input.startsWith('migrations/'))).toEqual(readManifest(outDir).migrations.map((file) => `migrations/${file}`))
  })

  it('a rebuild keeps the bundle before it (a start may have read the previous manifest) and no older one', async () => {
    const dir = mkdtempSync(join(ROOT, '.build-test-'))
    scratch.push(dir)
    const first = await buildServerBundle({ outDir: dir })
    const second = await buildServerBundle({ outDir: dir })
    const third = await buildServerBundle({ outDir: dir })
    const bundles = readdirSync(dir).filter((name) => name.endsWith('.mjs')).sort()
    expect(bundles).toEqual([second.path, third.path].map((path) => path.slice(dir.length + 1)).sort())
    expect(bundles).not.toContain(first.path.slice(dir.length + 1))
    expect(inspectBundle({ outDir: dir })).toEqual({ ok: true, path: third.path })
  })

  it('runs the CLI and applies every migration of migrations/, compiled in', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'knowagent-bundle-cli-'))
    scratch.push(dataDir)
    const { main } = (await import(pathToFileURL(built.path).href)) as typeof ServerEntry
    const out: string[] = []
    const err: string[] = []
    const code = await main(['migrate'], { out: (line) => out.push(line), err: (line) => err.push(line), env: { KNOWAGENT_DATA_DIR: dataDir } })
    expect({ code, err }).toEqual({ code: 0, err: [] })
    const names = readdirSync(join(ROOT, 'migrations'))
      .filter((name) => MIGRATION_FILE.test(name))
      .sort()
      .map((name) => name.replace(/\.ts$/, ''))
    expect(names.length).toBeGreaterThan(5)
    expect(out).toEqual([`applied: ${names.join(', ')}`])
  })

  it('is not used once it no longer matches the checkout, and says why', () => {
    const edited = copyWith((manifest) => {
      manifest.inputs['src/cli.ts'] = { ...manifest.inputs['src/cli.ts']!, mtimeMs: 1, sha256: '0'.repeat(32) }
    })
    expect(inspectBundle({ outDir: edited })).toEqual({ ok: false, problem: 'src/cli.ts changed since the bundle was built' })
    expect(serverEntry({ outDir: edited, env: {} })).toMatchObject({ kind: 'sources', reason: 'src/cli.ts changed since the bundle was built' })

    // Same content, another time (a fresh checkout): still the bundle, decided by the digest.
    const touched = copyWith((manifest) => {
      manifest.inputs['src/cli.ts'] = { ...manifest.inputs['src/cli.ts']!, mtimeMs: 1 }
    })
    expect(inspectBundle({ outDir: touched })).toMatchObject({ ok: true })

    const resized = copyWith((manifest) => {
      manifest.inputs['package-lock.json'] = { ...manifest.inputs['package-lock.json']!, size: 1 }
    })
    expect(inspectBundle({ outDir: resized })).toEqual({ ok: false, problem: 'package-lock.json changed since the bundle was built' })

    const newMigration = copyWith((manifest) => {
      manifest.migrations = manifest.migrations.slice(0, -1)
    })
    expect(inspectBundle({ outDir: newMigration })).toEqual({ ok: false, problem: 'the migration files changed since the bundle was built' })

    const gone = copyWith(() => undefined)
    rmSync(join(gone, readManifest(gone).bundle))
    expect(inspectBundle({ outDir: gone })).toMatchObject({ ok: false, problem: expect.stringContaining('cannot be checked') })

    const unbuilt = mkdtempSync(join(ROOT, '.build-test-'))
    scratch.push(unbuilt)
    expect(inspectBundle({ outDir: unbuilt })).toEqual({ ok: false, problem: 'no server bundle has been built (npm ci / npm install builds it)' })
  })
})
