// The ids a log line carries without every caller passing them: the request's (set by the HTTP
// layer for everything that runs on behalf of one request, awaited work included), so a user's
// report with its `request_id` finds every line of that request.
import { AsyncLocalStorage } from 'node:async_hooks'

export const logContext = new AsyncLocalStorage<Readonly<Record<string, unknown>>>()
