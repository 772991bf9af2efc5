#!/usr/bin/env node
// `npm ci` / `npm install` (the `prepare` script): compiles every `.tsx` view into the cache that
// bin/typescript-hooks.mjs reads (bin/jsx-cache.mjs), so that the first start compiles nothing.
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { compiledTsx } from './jsx-cache.mjs'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

function* tsxFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* tsxFiles(path)
    else if (entry.name.endsWith('.tsx') && !entry.name.endsWith('.test.tsx')) yield path
  }
}

let count = 0
for (const folder of ['src', 'views']) {
  for (const file of tsxFiles(join(ROOT, folder))) {
    compiledTsx(file)
    count += 1
  }
}
console.log(`knowagent: ${count} views compiled`)
