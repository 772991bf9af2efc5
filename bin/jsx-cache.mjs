// The compiled JavaScript of the `.tsx` views, in node_modules/.cache/knowagent-jsx/: filled by
// `npm ci` / `npm install` (the `prepare` script, bin/build-views.mjs); a view edited since is
// compiled once, on its first import, and cached. Keyed by the source's content, so a cached
// file is never stale. Plain JavaScript: it runs before any TypeScript can be loaded.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname, isAbsolute, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const CACHE_DIR = join(ROOT, 'node_modules', '.cache', 'knowagent-jsx')
/** Mirrors tsconfig.json's JSX and module settings; part of the cache key. */
const TRANSFORM_OPTIONS = {
  loader: 'tsx',
  format: 'esm',
  target: 'es2024',
  jsx: 'automatic',
  jsxImportSource: 'hono/jsx',
  tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
}

let esbuild
function transformSync(source, sourcefile) {
  esbuild ??= createRequire(import.meta.url)('esbuild')
  return esbuild.transformSync(source, { ...TRANSFORM_OPTIONS, sourcefile }).code
}

function cachePathFor(path, source) {
  const key = createHash('sha256').update(JSON.stringify(TRANSFORM_OPTIONS)).update('\0').update(source).digest('hex').slice(0, 16)
  const inProject = relative(ROOT, path)
  const name = inProject.startsWith('..') || isAbsolute(inProject) ? join('outside-project', basename(path)) : inProject
  return join(CACHE_DIR, `${name}.${key}.js`)
}

/** The JavaScript of a `.tsx` file: from the cache when its source is unchanged, else compiled now. */
export function compiledTsx(path) {
  const source = readFileSync(path, 'utf8')
  const cached = cachePathFor(path, source)
  try {
    return readFileSync(cached, 'utf8')
  } catch {
    const code = transformSync(source, path)
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

