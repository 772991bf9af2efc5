#!/usr/bin/env node
// Runs the TypeScript CLI on Node's type stripping (bin/typescript-hooks.mjs): no build step.
// `npm start` and `npx knowagent` run it on the project's own Node (the `node` dev dependency);
// an older Node found first on the PATH gets a clear message instead of a loader error.
import { checkNodeVersion } from './node-version.mjs'
checkNodeVersion()
const { registerTypeScriptHooks } = await import('./typescript-hooks.mjs')
registerTypeScriptHooks()
const { main } = await import('../src/cli.ts')
process.exitCode = await main(process.argv.slice(2))
