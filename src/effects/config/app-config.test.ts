import { describe, expect, it } from 'vitest'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, loadConfig } from './app-config.ts'

function withConfigFile(json: string) {
  const dir = mkdtempSync(join(tmpdir(), 'knowagent-config-'))
  writeFileSync(join(dir, 'knowagent.config.json'), json)
  return dir
}

describe('loadConfig', () => {
  it('uses defaults without a file', () => {
    const config = loadConfig({ env: {}, cwd: mkdtempSync(join(tmpdir(), 'knowagent-config-')) })
    expect(config).toMatchObject({ port: 3000, host: '127.0.0.1', databaseUrl: undefined, configPath: undefined, streamsPerMinute: 30 })
    expect(config.dataDir.endsWith('.knowagent')).toBe(true)
  })

  it('reads ./knowagent.config.json and the environment', () => {
    const cwd = withConfigFile(JSON.stringify({ server: { trustProxy: true }, limits: { streamsPerMinute: 5 } }))
    const config = loadConfig({ env: { PORT: '8080', HOST: '0.0.0.0', DATABASE_URL: 'postgres://x/y', KNOWAGENT_DATA_DIR: 'd' }, cwd })
    expect(config).toMatchObject({ port: 8080, host: '0.0.0.0', databaseUrl: 'postgres://x/y', trustProxy: true, streamsPerMinute: 5 })
    expect(config.dataDir).toBe(join(cwd, 'd'))
  })

  it('turns the upload and parsing limits into the parser pool\'s options', () => {
    const defaults = loadConfig({ env: {}, cwd: mkdtempSync(join(tmpdir(), 'knowagent-config-')) })
    expect(defaults.maxFilesPerUpload).toBe(32)
    expect(defaults.parsing).toMatchObject({
      timeoutMs: 30_000,
      memoryLimitMb: 512,
      limits: { maxBytes: 52_428_800, maxChars: 5_000_000, maxInflatedBytes: 67_108_864 },
    })
    const cwd = withConfigFile(
      JSON.stringify({
        limits: { maxFileBytes: 1000, maxFilesPerUpload: 3, maxParsedChars: 10, maxInflatedBytes: 2000, parseTimeoutSeconds: 5, parseMemoryMb: 64, parserThreads: 2 },
      }),
    )
    const config = loadConfig({ env: { KNOWAGENT_UPLOAD_TMPDIR: 'spool' }, cwd })
    expect(config.maxFilesPerUpload).toBe(3)
    expect(config.parsing).toEqual({ processes: 2, timeoutMs: 5000, memoryLimitMb: 64, limits: { maxBytes: 1000, maxChars: 10, maxInflatedBytes: 2000 } })
    // parserProcesses is the name now; parserThreads, the old one, is still read, and loses to it.
    expect(loadConfig({ env: {}, cwd: withConfigFile(JSON.stringify({ limits: { parserThreads: 2, parserProcesses: 3 } })) }).parsing.processes).toBe(3)
    expect(config.uploadTempDir).toBe(join(cwd, 'spool'))
  })

  it('reads the turns and shutdown keys (issue 38), with their defaults', () => {
    const defaults = loadConfig({ env: {}, cwd: mkdtempSync(join(tmpdir(), 'knowagent-config-')) })
    expect(defaults.turns).toEqual({ detachedGraceSeconds: 60, eventRetentionSeconds: 600, eventRetentionMb: 256, leaseSeconds: 15 })
    expect(defaults.drainSeconds).toBe(30)
    const cwd = withConfigFile(JSON.stringify({ turns: { detachedGraceSeconds: 5, leaseSeconds: 3 }, shutdown: { drainSeconds: 0 } }))
    const config = loadConfig({ env: {}, cwd })
    expect(config.turns).toMatchObject({ detachedGraceSeconds: 5, leaseSeconds: 3, eventRetentionSeconds: 600 })
    expect(config.drainSeconds).toBe(0)
  })

  it.each([
    ['{"turns": {"detachedGraceSeconds": 0}}', '["turns"]["detachedGraceSeconds"]'],
    ['{"turns": {"leaseSeconds": 1}}', '["turns"]["leaseSeconds"]'],
    ['{"shutdown": {"drainSeconds": -1}}', '["shutdown"]["drainSeconds"]'],
    ['{"server": {"trustProxy": "yes"}}', '["server"]["trustProxy"]'],
    ['{"limits": {"parseMemoryMb": 8}}', '["limits"]["parseMemoryMb"]'],
    ['{"limts": {}}', '["limts"]'],
    ['{"limits": {"streamsPerMinute": -1}}', '["limits"]["streamsPerMinute"]'],
    ['{"models": [{"id": "m"}]}', '["models"][0]'],
    ['{"cliProfiles": [{"id": "c", "name": "C", "command": ["/bin/c", "--m={model}"], "models": ["x"]}]}', '["cliProfiles"][0]["command"][1]'],
    ['{"compile": {"queue": {"heartbeatSeconds": 5}}}', '["compile"]["queue"]["heartbeatSeconds"]'],
    ['{"backup": {"schedule": "every night"}}', '["backup"]["schedule"]'],
    ['{"backup": {"schedule": "0 3 * *"}}', 'expected a cron expression of 5 fields'],
    ['{"backup": {"schedule": "0 25 * * *"}}', 'not a cron expression'],
    ['{"backup": {"keep": 0}}', '["backup"]["keep"]'],
    ['{"backup": {"dir": ""}}', '["backup"]["dir"]'],
    ['{not json', 'invalid JSON'],
  ])('refuses %s naming the bad key', (json, where) => {
    const cwd = withConfigFile(json)
    expect(() => loadConfig({ env: {}, cwd })).toThrow(ConfigError)
    expect(() => loadConfig({ env: {}, cwd })).toThrow(where)
  })

  it('scheduled backups: none by default, into <data dir>/backups, the newest 7 kept; a schedule and a folder of its own', () => {
    const defaults = loadConfig({ env: { KNOWAGENT_DATA_DIR: 'data' }, cwd: '/srv' })
    expect(defaults.backup).toEqual({ schedule: undefined, dir: '/srv/data/backups', keep: 7 })
    const cwd = withConfigFile(JSON.stringify({ backup: { schedule: '30 2 * * *', dir: 'backups', keep: 3 } }))
    expect(loadConfig({ env: {}, cwd }).backup).toEqual({ schedule: '30 2 * * *', dir: join(cwd, 'backups'), keep: 3 })
  })

  it.each([
    [{ PORT: 'abc' }, 'invalid PORT'],
    [{ PORT: '70000' }, 'invalid PORT'],
    [{ KNOWAGENT_SECRET: 'short' }, 'KNOWAGENT_SECRET is too short'],
    [{ LOG_LEVEL: 'loud' }, 'invalid LOG_LEVEL'],
    [{ KNOWAGENT_CONFIG: '/nonexistent/x.json' }, 'does not exist'],
  ])('refuses bad environment %j', (env, message) => {
    expect(() => loadConfig({ env, cwd: tmpdir() })).toThrow(message)
  })
})
