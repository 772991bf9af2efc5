// `npm start` runs the server with the V8 flags the benchmark measures it with (one list,
// bin/server-node-flags.mjs): a change to one without the other fails here.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { SERVER_NODE_FLAGS } from '../../bin/server-node-flags.mjs'

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }

describe("the server's Node flags", () => {
  it('are what `npm start` passes, before the launcher', () => {
    expect(SERVER_NODE_FLAGS.length).toBeGreaterThan(0)
    expect(pkg.scripts.start).toBe(`node ${SERVER_NODE_FLAGS.join(' ')} bin/knowagent.mjs serve`)
  })

  it('are flags this Node accepts', () => {
    for (const flag of SERVER_NODE_FLAGS) expect(process.allowedNodeEnvironmentFlags.has(flag.split('=')[0]!)).toBe(true)
  })
})
