// The launcher on a Node too old for the sources says what to run instead of failing in the loader.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const CHECK = fileURLToPath(new URL('../../bin/node-version.mjs', import.meta.url))

function check(version: string) {
  const script = `import { checkNodeVersion } from ${JSON.stringify(CHECK)}; checkNodeVersion(${JSON.stringify(version)}); process.stdout.write('ran')`
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })
}

describe('the launcher checks the Node version first', () => {
  it.each(['20.20.2', '22.17.9', '18.0.0'])('refuses Node %s with what to run instead', (version) => {
    const run = check(version)
    expect(run.status).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain(`knowagent needs Node 22.18 or newer; this is Node ${version}.`)
    expect(run.stderr).toContain('npm start')
  })

  it.each(['22.18.0', '23.0.0', '24.21.0'])('lets Node %s through', (version) => {
    const run = check(version)
    expect(run.status).toBe(0)
    expect(run.stdout).toBe('ran')
  })
})
