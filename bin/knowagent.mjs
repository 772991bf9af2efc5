#!/usr/bin/env node
// Runs the TypeScript CLI on Node's type stripping (bin/typescript-hooks.mjs): no build step.
import { registerTypeScriptHooks } from './typescript-hooks.mjs'
registerTypeScriptHooks()
const { main } = await import('../src/cli.ts')
process.exitCode = await main(process.argv.slice(2))
