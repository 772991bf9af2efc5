// Two real `knowagent serve` processes on one PostgreSQL database (issue 36): a model connection
// an administrator adds through one is offered and used by the other without a restart (NOTIFY on
// the change feed; the test polls the other's model list, it does not sleep), and a model disabled
// through one disappears from the other — while a turn that started on it there runs to its end.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { main } from '../../src/cli.ts'
import { decodeSseStream, type SseEvent } from '../../src/sse/sse-decoder.ts'
import { chatCompletionSse, httpResponseScript, type ScriptedProvider, startScriptedProvider } from '../support/scripted-provider.ts'
import { PROVIDER_MODELS } from '../support/model-connections.ts'
import { createPostgresDatabase } from '../support/test-database.ts'
import { signIn } from '../support/test-server.ts'
import { waitUntil } from '../support/wait-until.ts'

const SECRET = 'model-connections-two-processes-secret'
const API_KEY = 'prov-two-processes-Key-93b1d0'

describe('model connections across two server processes', () => {
  let databaseUrl: string
  let dropDatabase: () => Promise<void>
  let dir: string
  let provider: ScriptedProvider
  let adminSession: { cookie: string; csrf: string }
  let memberToken: string
  let releaseHeld!: () => void
  const held = new Promise<void>((resolve) => (releaseHeld = resolve))
  const running = new Set<ChildProcessWithoutNullStreams>()
  const stderrs: string[] = []

  async function startServe(name: string): Promise<string> {
    const child = spawn(process.execPath, ['bin/knowagent.mjs', 'serve'], {
      env: { ...process.env, DATABASE_URL: databaseUrl, KNOWAGENT_SECRET: SECRET, KNOWAGENT_CONFIG: join(dir, 'config.json'), KNOWAGENT_DATA_DIR: join(dir, name), PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    running.add(child)
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    void exited.then(() => running.delete(child))
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => stderrs.push(chunk.toString()))
    return new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString()
        stderrs.push(chunk.toString())
        const match = /running at (http:\/\/\S+)/.exec(stderr)
        if (match) resolve(match[1]!)
      })
      void exited.then((code) => reject(new Error(`serve ${name} exited (${code}) before listening: ${stderr}`)))
    })
  }

  /** A member's API token, or the admin's browser session (the administration pages take no token): one session works on both processes (one database). */
  const api = async (url: string, who: string | { cookie: string; csrf: string }, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        ...(typeof who === 'string' ? { authorization: `Bearer ${who}` } : { cookie: who.cookie, 'x-csrf-token': who.csrf }),
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await res.text()
    expect(text).not.toContain(API_KEY)
    return { status: res.status, json: JSON.parse(text) as Record<string, any> }
  }
  const offeredOn = async (url: string) => ((await api(url, memberToken, '/api/v1/knowledge-agent/options')).json['models'] as Array<{ id: string }>).map((model) => model.id)

  beforeAll(async () => {
    ;({ url: databaseUrl, drop: dropDatabase } = await createPostgresDatabase())
    dir = mkdtempSync(join(tmpdir(), 'knowagent-two-models-'))
    provider = await startScriptedProvider({
      handler: (request) => {
        if (request.headers.authorization !== `Bearer ${API_KEY}`) return httpResponseScript(401, { error: { message: 'bad key' } })
        if (request.method === 'GET') return httpResponseScript(200, { data: PROVIDER_MODELS })
        const model = (request.body as { model?: string }).model
        const [first, rest] = [chatCompletionSse([{ text: `Answer from ${model}, ` }]), chatCompletionSse([{ text: 'the end.' }, { finish: 'stop' }, 'done'])]
        // qwen-plus answers in two parts, the second when the test releases it.
        return { kind: 'stream', chunks: [{ bytes: first }, { bytes: rest, ...(model === 'qwen-plus' ? { after: held } : {}) }] }
      },
    })
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ limits: { streamsPerMinute: 100 } }))
    const env = { DATABASE_URL: databaseUrl, KNOWAGENT_SECRET: SECRET }
    const out: string[] = []
    const io = { out: (line: string) => out.push(line), err: (line: string) => out.push(line), env }
    expect(await main(['user', 'add', 'ada', '--password', 'a-long-password'], io)).toBe(0) // the first account: an administrator
    expect(await main(['user', 'add', 'max', '--password', 'a-long-password'], io)).toBe(0)
    expect(await main(['token', 'create', 'max'], io)).toBe(0)
    memberToken = out.at(-1)!
  }, 60_000)

  afterAll(async () => {
    releaseHeld()
    for (const child of running) child.kill('SIGKILL')
    await provider?.close()
    await dropDatabase?.()
    rmSync(dir, { recursive: true, force: true })
  })

  it('a connection added through one process is used by the other; disabling it there leaves a running turn alone', async () => {
    const [a, b] = await Promise.all([startServe('a'), startServe('b')])
    adminSession = await signIn({ url: a }, 'ada', 'a-long-password')
    expect(await offeredOn(b)).toEqual(['local'])

    // Through A: add, Test, offer two models.
    const added = await api(a, adminSession, '/admin/models/connections', { name: 'Shared provider', base_url: provider.baseUrl, api_key: API_KEY })
    expect(added.status).toBe(200)
    const id = added.json['id'] as string
    const tested = await api(a, adminSession, `/admin/models/connections/${id}/test`, {})
    expect(tested.json).toMatchObject({ ok: true, models_reported: 3 })
    const rows = (await api(a, adminSession, '/admin/models')).json['connections'][0].models as unknown[]
    const enable = (ids: string[]) =>
      (rows as Array<{ providerModel: string; displayName: string; contextWindow: number; maxOutputTokens: number; supportsNativeToolCalling: boolean }>).map((row) => ({
        provider_model: row.providerModel,
        display_name: row.displayName,
        context_window: row.contextWindow,
        max_output_tokens: row.maxOutputTokens,
        tools: row.supportsNativeToolCalling,
        enabled: ids.includes(row.providerModel),
      }))
    expect((await api(a, adminSession, `/admin/models/connections/${id}/models`, { models: enable(['gpt-4o', 'qwen-plus']) })).status).toBe(200)

    // B learns it from the NOTIFY: poll its model list.
    await waitUntil(async () => (await offeredOn(b)).includes('qwen-plus'), 'B to offer the stored models', { timeoutMs: 10_000 })
    expect(await offeredOn(b)).toEqual(['gpt-4o', 'qwen-plus', 'local'])

    // A member's turn on B reaches the provider with the key A stored; it is held after its first part.
    const before = provider.requests.length
    const res = await fetch(`${b}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${memberToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: 'qwen-plus', message: 'hello' }),
    })
    expect(res.status).toBe(200)
    const events: SseEvent[] = []
    const iterator = decodeSseStream(res.body!)[Symbol.asyncIterator]()
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      events.push(next.value)
      if (next.value.event === 'delta') break
    }
    const call = provider.requests.slice(before).find((request) => request.method === 'POST')!
    expect(call.headers.authorization).toBe(`Bearer ${API_KEY}`)
    expect(call.body).toMatchObject({ model: 'qwen-plus' })

    // Through A again: disable qwen-plus. B stops offering it …
    expect((await api(a, adminSession, `/admin/models/connections/${id}/models`, { models: enable(['gpt-4o']) })).status).toBe(200)
    await waitUntil(async () => !(await offeredOn(b)).includes('qwen-plus'), 'B to stop offering qwen-plus', { timeoutMs: 10_000 })
    const refused = await fetch(`${b}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${memberToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: 'qwen-plus', message: 'hello again' }),
    })
    expect(refused.status).toBe(400)
    expect((await refused.json()).error.code).toBe('unknown_model')
    // … and the turn that started on it runs to its end.
    releaseHeld()
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) events.push(next.value)
    expect(events.filter((event) => event.event === 'delta').map((event) => (JSON.parse(event.data) as { text: string }).text).join('')).toBe('Answer from qwen-plus, the end.')
    expect(events.at(-1)!.event).toBe('done')

    // Each admin action is one audit line on the process that did it; the key is in none of either's output.
    const output = stderrs.join('')
    expect(output).toContain('"admin action"')
    expect(output).not.toContain(API_KEY)
  })
})
