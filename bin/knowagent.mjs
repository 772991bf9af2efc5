#!/usr/bin/env node
// Runs the CLI: from the server bundle built at install time when it matches the checkout
// (bin/server-bundle.mjs), else from the TypeScript sources on Node's type stripping
// (bin/typescript-hooks.mjs) — no build step either way. `npm start` and `npx knowagent` run it on
// the project's own Node (the `node` dev dependency); an older Node found first on the PATH gets a
// clear message instead of a loader error.
import { checkNodeVersion } from './node-version.mjs'
checkNodeVersion()
const { serverEntry } = await import('./server-bundle.mjs')
const entry = serverEntry()
if (entry.kind === 'sources') {
  const { registerTypeScriptHooks } = await import('./typescript-hooks.mjs')
  registerTypeScriptHooks()
}
const { main } = await import(entry.url)
process.exitCode = await main(process.argv.slice(2))
