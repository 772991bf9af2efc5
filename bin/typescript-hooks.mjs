// Runs the project's TypeScript without a transpiler in memory: every `.ts` / `.tsx` file of the
// project loads as JavaScript precompiled by esbuild at install time (bin/compile-cache.mjs).
// Files under node_modules are never touched. See docs/architecture.md, "Running the TypeScript".
import { registerHooks } from 'node:module'
import { fileURLToPath } from 'node:url'
import { compiledTypeScript } from './compile-cache.mjs'

const PROJECT = new URL('..', import.meta.url).href

export function registerTypeScriptHooks({ stripTs = false } = {}) {
  registerHooks({
    load(url, context, nextLoad) {
      const tsx = url.endsWith('.tsx')
      if (!(tsx || (!stripTs && url.endsWith('.ts'))) || !url.startsWith(PROJECT) || url.includes('/node_modules/')) return nextLoad(url, context)
      return { format: 'module', source: compiledTypeScript(fileURLToPath(url)), shortCircuit: true }
    },
  })
}
