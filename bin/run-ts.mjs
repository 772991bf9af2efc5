#!/usr/bin/env node
// Runs any TypeScript entry point (benchmarks, scripts) on Node's type stripping, with the same
// hooks as the server (bin/typescript-hooks.mjs).
import { pathToFileURL } from 'node:url'
import { resolve } from 'node:path'
import { registerTypeScriptHooks } from './typescript-hooks.mjs'
registerTypeScriptHooks()
const [entry, ...rest] = process.argv.slice(2)
if (!entry) { console.error('usage: run-ts.mjs <file.ts> [args]'); process.exit(2) }
process.argv = [process.argv[0], resolve(entry), ...rest]
await import(pathToFileURL(resolve(entry)).href)
