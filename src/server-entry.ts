// The entry of the server bundle (bin/server-bundle.mjs): `npm start`, `knowagent …` and the
// bench's knowagent process load this module, compiled with everything it imports into one file
// at install time when that file is up to date, else from the sources.
export { main } from './cli.ts'

// What the bench's knowagent process assembles, as `knowagent serve` does
// (bench/lib/systems/knowagent.ts), so that it measures the same compiled server.
export { startCoreRuntime } from './effects/app-layer.ts'
export { createApiTokenFor, createUser } from './effects/auth/users.ts'
export { loadConfig } from './effects/config/app-config.ts'
export { createLogger } from './effects/logging/logger.ts'
export { registerInstance } from './effects/turn/instance-registry.ts'
export { putFile } from './effects/workspace/store.ts'
export { createApp } from './http/create-app.ts'
export { API_PREFIX } from './http/knowledge-agent.routes.ts'
export { appContextOf } from './server.ts'
export { startTracing } from './effects/observability/tracing.ts'
