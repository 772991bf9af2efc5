// The project's TypeScript as JavaScript, cached in node_modules/.cache/knowagent-js/: filled by
// `npm ci` / `npm install` (the `prepare` script, bin/build-cache.mjs); a file edited since is
// compiled once, on its first import, and cached. Keyed by the source's content, so a cached file
// is never stale. `.ts` files are stripped with Node's own `stripTypeScriptTypes`, which blanks
// the types in place, so every line and column stays where it is in the source (stack traces
// need no source map); `.tsx` views need JSX compiled, which esbuild does. Plain JavaScript: it
// runs before any TypeScript can be loaded.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire, stripTypeScriptTypes } from 'node:module'
import { basename, dirname, isAbsolute, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const CACHE_DIR = join(ROOT, 'node_modules', '.cache', 'knowagent-js')
/** Mirrors tsconfig.json's JSX settings; part of the cache key of `.tsx` files. */
const JSX_OPTIONS = {
  loader: 'tsx',
  format: 'esm',
  target: 'es2024',
  jsx: 'automatic',
  jsxImportSource: 'hono/jsx',
  tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
}
const TS_OPTIONS = { mode: 'strip' }

let esbuild
function compileJsx(source, sourcefile) {
  esbuild ??= createRequire(import.meta.url)('esbuild')
  return esbuild.transformSync(source, { ...JSX_OPTIONS, sourcefile }).code
}

function stripTypes(source) {
  // stripTypeScriptTypes announces itself as experimental on every first use: not news here.
  const emitWarning = process.emitWarning
  process.emitWarning = (warning, ...rest) => {
    if (!String(warning).includes('stripTypeScriptTypes')) emitWarning.call(process, warning, ...rest)
  }
  try {
    return stripTypeScriptTypes(source, TS_OPTIONS)
  } finally {
    process.emitWarning = emitWarning
  }
}

function cachePathFor(path, source) {
  const options = path.endsWith('.tsx') ? JSX_OPTIONS : TS_OPTIONS
  const key = createHash('sha256').update(process.version).update(JSON.stringify(options)).update('\0').update(source).digest('hex').slice(0, 16)
  const inProject = relative(ROOT, path)
  const name = inProject.startsWith('..') || isAbsolute(inProject) ? join('outside-project', basename(path)) : inProject
  return join(CACHE_DIR, `${name}.${key}.js`)
}

/** The JavaScript of a `.ts` / `.tsx` file: from the cache when its source is unchanged, else compiled now. */
export function compiledTypeScript(path) {
  const source = readFileSync(path, 'utf8')
  const cached = cachePathFor(path, source)
  try {
    return readFileSync(cached, 'utf8')
  } catch {
    const code = path.endsWith('.tsx') ? compileJsx(source, path) : stripTypes(source)
    try {
      mkdirSync(dirname(cached), { recursive: true })
      const temporary = `${cached}.${process.pid}.tmp`
      writeFileSync(temporary, code)
      renameSync(temporary, cached) // atomic: a concurrent start reads the old or the new file
    } catch {
      // a read-only install still runs, compiling in memory
    }
    return code
  }
}
