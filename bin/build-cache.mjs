#!/usr/bin/env node
// `npm ci` / `npm install` (the `prepare` script): compiles the server's TypeScript (src/, views/,
// migrations/) into the cache that bin/typescript-hooks.mjs reads (bin/compile-cache.mjs), so
// that no start compiles anything, and builds the server bundle (bin/server-bundle.mjs) that
// `npm start` and the CLI load while it matches the checkout.
import { readdirSync } from 'node:fs'
import * as nodeModule from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

if (typeof nodeModule.stripTypeScriptTypes !== 'function') {
  // npm ran this with a Node older than the project's (e.g. `npm ci --omit=dev` without the
  // pinned `node` package): knowagent needs Node >= 22.19 to run at all.
  console.warn(`knowagent: Node ${process.version} cannot compile the sources (Node >= 22.19 needed); nothing cached`)
  process.exit(0)
}
const { compiledTypeScript } = await import('./compile-cache.mjs')

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const isSource = (name) => /\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name) && !name.endsWith('.d.ts')

function* sourceFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* sourceFiles(path)
    else if (isSource(entry.name)) yield path
  }
}

let count = 0
for (const folder of ['src', 'views', 'migrations']) {
  for (const file of sourceFiles(join(ROOT, folder))) {
    compiledTypeScript(file)
    count += 1
  }
}
console.log(`knowagent: ${count} TypeScript files compiled`)
try {
  const { buildServerBundle } = await import('./server-bundle.mjs')
  const bundle = await buildServerBundle()
  console.log(`knowagent: server bundle built (${bundle.modules} modules, ${(bundle.bytes / 1024 / 1024).toFixed(1)} MB)`)
} catch (error) {
  // The server still runs, from the sources: slower to start, more memory.
  console.warn(`knowagent: the server bundle could not be built; the server will run from the sources: ${error instanceof Error ? error.message : String(error)}`)
}
