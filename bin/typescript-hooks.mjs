// Runs the TypeScript sources on Node's own type stripping (no transpiler in memory): `.ts` files
// load as they are; `.tsx` views (JSX, which Node does not strip) load precompiled by esbuild
// (bin/jsx-cache.mjs). See docs/performance.md, "Lean process".
import { registerHooks } from 'node:module'
import { fileURLToPath } from 'node:url'
import { compiledTsx } from './jsx-cache.mjs'

export function registerTypeScriptHooks() {
  registerHooks({
    load(url, context, nextLoad) {
      if (!url.startsWith('file:') || !url.endsWith('.tsx')) return nextLoad(url, context)
      return { format: 'module', source: compiledTsx(fileURLToPath(url)), shortCircuit: true }
    },
  })
}
