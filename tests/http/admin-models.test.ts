// Admin → Model connections over HTTP (issue 36): the guard on every route for every kind of
// caller; add → Test → enable two models → a member's turn reaches the provider with the stored
// key → disable → gone from the options and the model picker; the key in no response body and
// no log line; a metadata address refused; a provider's redirect to another host not followed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import pg from 'pg'
import { startKeyedProvider, modelsForm } from '../support/model-connections.ts'
import { httpResponseScript, scriptedModel, type ScriptedProvider, startScriptedProvider } from '../support/scripted-provider.ts'
import { readSseEvents } from '../support/sse-frames.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'

// Not shaped like an OpenAI key: the logger masks those by pattern, and this must stay out of logs by design.
const API_KEY = 'prov-admin-models-Secret-4f1c9e2b7a'
const FORM = 'application/x-www-form-urlencoded'

describe('Admin → Model connections', () => {
  let server: TestServer
  let provider: ScriptedProvider
  let configProvider: ScriptedProvider
  let admin: { token: string; cookie: string; csrf: string }
  let member: { token: string; cookie: string; csrf: string }
  /** Every response body this suite read, to search for the key at the end. */
  const bodies: string[] = []

  const call = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${server.url}${path}`, { redirect: 'manual', ...init })
    const body = await res.text()
    bodies.push(body)
    return { status: res.status, headers: res.headers, body }
  }
  const form = (who: { cookie: string; csrf: string }, path: string, fields: Record<string, string>) =>
    call(path, { method: 'POST', headers: { cookie: who.cookie, 'content-type': FORM }, body: new URLSearchParams({ ...fields, _csrf: who.csrf }) })
  /** The JSON face: a member's API token (the options API), or an admin's browser session with its CSRF token (the administration pages take no token). */
  const json = (who: string | { cookie: string; csrf: string }, path: string, body?: unknown) =>
    call(path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        ...(typeof who === 'string' ? { authorization: `Bearer ${who}` } : { cookie: who.cookie, 'x-csrf-token': who.csrf }),
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  const adminState = async () => JSON.parse((await json(admin, '/admin/models')).body) as {
    models: Array<{ id: string; source: string }>
    connections: Array<{ id: string; name: string; apiKeyStatus: string; models: Array<{ providerModel: string; modelId: string; displayName: string; contextWindow: number; maxOutputTokens: number; supportsNativeToolCalling: boolean; enabled: boolean; shadowedByConfig: boolean }> }>
  }
  const memberOptions = async () => JSON.parse((await json(member.token, '/api/v1/knowledge-agent/options')).body) as { models: Array<{ id: string; name: string; profile: string }>; default_model_id: string }
  const memberTurn = async (modelId: string) => {
    const res = await fetch(`${server.url}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${member.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: modelId, message: 'hello there' }),
    })
    if (res.status !== 200) {
      const body = await res.text()
      bodies.push(body)
      return { status: res.status, body, events: [] }
    }
    const { events } = await readSseEvents(res)
    bodies.push(JSON.stringify(events))
    return { status: res.status, body: '', events }
  }

  beforeAll(async () => {
    provider = await startKeyedProvider({ apiKey: API_KEY })
    configProvider = await startScriptedProvider()
    // The config file has a model whose id a stored one will share: the config file wins.
    server = await startTestServer({
      configure: (config) => ({ ...config, streamsPerMinute: 1000, file: { ...config.file, models: [scriptedModel(configProvider, { id: 'qwen-plus', name: 'Qwen from the config file' })] } }),
    })
    const adminUser = await addUserWithToken(server, 'root-admin') // the first account is an administrator
    const memberUser = await addUserWithToken(server, 'mia')
    admin = { token: adminUser.token, ...(await signIn(server, 'root-admin', adminUser.password)) }
    member = { token: memberUser.token, ...(await signIn(server, 'mia', memberUser.password)) }
  })

  afterAll(async () => {
    await server?.close()
    await provider?.close()
    await configProvider?.close()
  })

  it('adds a connection, tests it, offers two models to a member whose turn reaches the provider with the key, and takes one away', async () => {
    // Add (the browser's form).
    const added = await form(admin, '/admin/models/connections', { name: 'Local provider', base_url: provider.baseUrl, api_key: API_KEY, api_key_env: '', headers: 'X-Team: knowledge' })
    expect(added.status).toBe(303)
    expect(added.headers.get('location')).toMatch(/^\/admin\/models\?notice=added#connection-/)
    const page = await call('/admin/models', { headers: { cookie: admin.cookie } })
    expect(page.status).toBe(200)
    expect(page.body).toContain('Local provider')
    expect(page.body).toMatch(/data-testid="api-key-status">configured/)
    expect(page.body).toContain('1 configured') // the extra header, by count only
    expect(page.body).not.toContain('knowledge')
    // Stored sealed, never in clear.
    const database = new pg.Client({ connectionString: server.database.url })
    await database.connect()
    const { rows } = await database.query<{ api_key_ciphertext: string; headers_ciphertext: string }>('select api_key_ciphertext, headers_ciphertext from model_connections')
    await database.end()
    expect(rows[0]!.api_key_ciphertext).toMatch(/^v1\./)
    expect(JSON.stringify(rows)).not.toContain(API_KEY)
    expect(JSON.stringify(rows)).not.toContain('knowledge')

    const { connections } = await adminState()
    const connection = connections[0]!
    // Test: GET /models and a one-token chat, in words.
    const tested = await form(admin, `/admin/models/connections/${connection.id}/test`, {})
    expect(tested.status).toBe(200)
    expect(tested.body).toContain('OK: the provider lists 3 models.')
    expect(tested.body).toContain('Chat with gpt-4o: OK')
    const listing = provider.requests.find((request) => request.method === 'GET')!
    expect(listing.path).toBe('/v1/models')
    expect(listing.headers.authorization).toBe(`Bearer ${API_KEY}`)
    expect(listing.headers['x-team']).toBe('knowledge')
    const probe = provider.requests.find((request) => request.method === 'POST')!
    expect(probe.body).toMatchObject({ model: 'gpt-4o', max_tokens: 1 })

    // The reported models, prefilled (provider figures, then the built-in table), none offered yet.
    const tested2 = (await adminState()).connections[0]!
    const byName = Object.fromEntries(tested2.models.map((model) => [model.providerModel, model]))
    expect(byName['gpt-4o']).toMatchObject({ contextWindow: 128_000, supportsNativeToolCalling: true, enabled: false, modelId: 'gpt-4o' })
    expect(byName['tiny-local']).toMatchObject({ contextWindow: 4096, enabled: false })
    // qwen-plus: the id is the config file's; the page says the config file's model is used.
    expect(byName['qwen-plus']).toMatchObject({ modelId: 'qwen-plus', shadowedByConfig: true })
    expect((await call('/admin/models', { headers: { cookie: admin.cookie } })).body).toContain('the config file has a model with this id: that one is used')
    expect((await memberOptions()).models.map((model) => model.id)).toEqual(['qwen-plus', 'local'])

    // Enable two models (the admin corrects a display name).
    const rowsNow = tested2.models.map((model) => (model.providerModel === 'gpt-4o' ? { ...model, displayName: 'GPT-4o (team)' } : model))
    const saved = await form(admin, `/admin/models/connections/${connection.id}/models`, modelsForm(rowsNow, ['gpt-4o', 'tiny-local']))
    expect(saved.status).toBe(303)
    const options = await memberOptions()
    expect(options.models.map((model) => model.id)).toEqual(['qwen-plus', 'gpt-4o', 'tiny-local', 'local'])
    expect(options.models.find((model) => model.id === 'gpt-4o')).toMatchObject({ name: 'GPT-4o (team)', profile: 'Local provider' })
    const picker = await call('/workspace', { headers: { cookie: member.cookie } })
    expect(picker.body).toContain('<option value="gpt-4o"')
    expect(picker.body).toContain('<option value="tiny-local"')

    // A member's turn on a stored model reaches the provider with the stored key.
    const before = provider.requests.length
    const turn = await memberTurn('gpt-4o')
    expect(turn.status).toBe(200)
    expect(turn.events.filter((event) => event.event === 'delta').map((event) => event.data['text']).join('')).toContain('Answer from gpt-4o.')
    const reached = provider.requests.slice(before).find((request) => request.method === 'POST')!
    expect(reached.headers.authorization).toBe(`Bearer ${API_KEY}`)
    expect(reached.body).toMatchObject({ model: 'gpt-4o' })

    // The default model: chosen by the admin, refused when not offered.
    expect((await form(admin, '/admin/models/default', { default_model: 'gpt-4o' })).status).toBe(303)
    expect((await memberOptions()).default_model_id).toBe('gpt-4o')
    expect((await form(admin, '/admin/models/default', { default_model: 'qwen-max' })).status).toBe(400)

    // Disable one: gone from the options and the picker; a new turn on it is refused.
    const current = (await adminState()).connections[0]!.models
    expect((await form(admin, `/admin/models/connections/${connection.id}/models`, modelsForm(current, ['tiny-local']))).status).toBe(303)
    expect((await memberOptions()).models.map((model) => model.id)).toEqual(['qwen-plus', 'tiny-local', 'local'])
    expect((await call('/workspace', { headers: { cookie: member.cookie } })).body).not.toContain('<option value="gpt-4o"')
    expect((await memberOptions()).default_model_id).toBe('qwen-plus') // the chosen default is no longer offered
    const refused = await memberTurn('gpt-4o')
    expect(refused.status).toBe(400)
    expect(refused.body).toContain('unknown_model')

    // Edit: a blank key keeps the stored one; the page never shows it.
    expect((await form(admin, `/admin/models/connections/${connection.id}`, { name: 'Local provider', base_url: provider.baseUrl, api_key: '', api_key_env: '', headers: '' })).status).toBe(303)
    expect((await memberTurn('tiny-local')).status).toBe(200)
    expect(provider.requests.at(-1)!.headers.authorization).toBe(`Bearer ${API_KEY}`)

    // Audit lines name who did what to which connection, never the key.
    const audit = server.logLines.filter((line) => line.includes('"admin action"')).map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(audit.map((line) => line['action'])).toEqual(expect.arrayContaining(['model_connection.add', 'model_connection.test', 'model_connection.models', 'model_connection.edit', 'model.default']))
    expect(audit.every((line) => line['by'] === 'root-admin')).toBe(true)
  })

  it('refuses a link-local cloud-metadata address, from the form and from JSON', async () => {
    const page = await form(admin, '/admin/models/connections', { name: 'Metadata', base_url: 'http://169.254.169.254/latest', api_key: API_KEY })
    expect(page.status).toBe(400)
    expect(page.body).toContain('link-local cloud-metadata address')
    const api = await json(admin, '/admin/models/connections', { name: 'Metadata v6', base_url: 'http://[fd00:ec2::254]/v1', api_key: API_KEY })
    expect(api.status).toBe(400)
    expect(JSON.parse(api.body)).toMatchObject({ error: { code: 'models.invalid_connection' } })
    expect((await adminState()).connections.map((connection) => connection.name)).not.toContain('Metadata')
  })

  it('never follows a provider\'s redirect to another host with the key, in Test or in a turn', async () => {
    const elsewhere: Array<IncomingHttpHeaders> = []
    const other: Server = createServer((req, res) => {
      elsewhere.push(req.headers)
      req.resume()
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[{"id":"stolen"}]}')
    })
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
    const otherUrl = `http://localhost:${(other.address() as AddressInfo).port}`
    const redirecting = await startScriptedProvider({
      handler: (request) => httpResponseScript(request.method === 'GET' ? 302 : 307, '', { location: `${otherUrl}${request.path}` }),
    })
    try {
      const added = JSON.parse((await json(admin, '/admin/models/connections', { name: 'Redirecting', base_url: redirecting.baseUrl, api_key: API_KEY })).body) as { id: string }
      const tested = JSON.parse((await json(admin, `/admin/models/connections/${added.id}/test`, {})).body) as { ok: boolean; lines: Array<{ text: string }> }
      expect(tested.ok).toBe(false)
      expect(tested.lines[0]!.text).toContain('redirect (HTTP 302); redirects are not followed')
      // A model added by hand and offered: a turn on it fails, and nothing reaches the other host.
      await json(admin, `/admin/models/connections/${added.id}/models`, { models: [], add_model: 'redirected-model' })
      await json(admin, `/admin/models/connections/${added.id}/models`, {
        models: [{ provider_model: 'redirected-model', enabled: true, display_name: 'Redirected', context_window: 8192, max_output_tokens: 1024, tools: false }],
      })
      const turn = await memberTurn('redirected-model')
      expect(turn.status).toBe(200)
      expect(turn.events.at(-1)!.event).toBe('error')
      expect(redirecting.requests.filter((request) => request.method === 'POST').length).toBeGreaterThan(0)
      expect(elsewhere).toEqual([])
    } finally {
      await redirecting.close()
      await new Promise((resolve) => other.close(resolve))
    }
  })

  it('reports what happened in words: unreachable, the key refused (cut to 500 characters, the key redacted), no models', async () => {
    const echoing = await startScriptedProvider({
      handler: (request) =>
        request.method === 'GET'
          ? httpResponseScript(401, { error: { code: 'invalid_api_key', message: `Incorrect API key provided: ${API_KEY}. ${'x'.repeat(2000)}` } })
          : httpResponseScript(403, { error: { message: `Forbidden for ${API_KEY}` } }),
    })
    const empty = await startScriptedProvider({ handler: () => httpResponseScript(200, { object: 'list', data: [] }) })
    try {
      const testOf = async (name: string, baseUrl: string) => {
        const added = JSON.parse((await json(admin, '/admin/models/connections', { name, base_url: baseUrl, api_key: API_KEY })).body) as { id: string }
        return JSON.parse((await json(admin, `/admin/models/connections/${added.id}/test`, {})).body) as { ok: boolean; lines: Array<{ step: string; ok: boolean; text: string }> }
      }
      const unreachable = await testOf('Nobody home', 'http://127.0.0.1:9/v1')
      expect(unreachable.lines[0]).toEqual({ step: 'models', ok: false, text: 'Unreachable: could not reach the provider (ECONNREFUSED).' })
      const refusedKey = await testOf('Refusing', echoing.baseUrl)
      expect(refusedKey.lines[0]!.text).toMatch(/^The provider refused the key \(HTTP 401\): Incorrect API key provided: \[redacted\]\. x+\S?$/)
      expect(refusedKey.lines[0]!.text.length).toBeLessThanOrEqual('The provider refused the key (HTTP 401): '.length + 500)
      const none = await testOf('Empty', empty.baseUrl)
      expect(none.lines.map((line) => line.text)).toEqual([
        'Reachable, but the provider lists no models (add a model by name below).',
        'Chat not tried: no model to try it with (add a model by name below, then Test again).',
      ])
    } finally {
      await echoing.close()
      await empty.close()
    }
  })

  describe('every route, every caller', () => {
    const routes = (id: string): Array<{ method: string; path: string; fields: Record<string, string> }> => [
      { method: 'GET', path: '/admin/models', fields: {} },
      { method: 'POST', path: '/admin/models/connections', fields: { name: 'Guarded', base_url: 'http://127.0.0.1:9/v1' } },
      { method: 'POST', path: `/admin/models/connections/${id}`, fields: { name: 'Guard target', base_url: 'http://127.0.0.1:9/v1' } },
      { method: 'POST', path: `/admin/models/connections/${id}/test`, fields: {} },
      { method: 'POST', path: `/admin/models/connections/${id}/models`, fields: { model_count: '0' } },
      { method: 'POST', path: '/admin/models/default', fields: { default_model: '' } },
      { method: 'POST', path: `/admin/models/connections/${id}/delete`, fields: {} },
    ]
    let sent = 0
    const send = (route: { method: string; path: string; fields: Record<string, string> }, headers: Record<string, string>, csrf?: string) => {
      sent += 1
      const fields = route.fields['name'] === 'Guarded' ? { ...route.fields, name: `Guarded ${sent}` } : route.fields // names are unique
      return call(route.path, route.method === 'GET' ? { headers } : { method: 'POST', headers: { ...headers, 'content-type': FORM }, body: new URLSearchParams({ ...fields, ...(csrf ? { _csrf: csrf } : {}) }) })
    }

    it("anonymous: sign-in or 401; member session or token: 403 admin_required; admin without CSRF: 403; admin's token: 403 session_required; admin session: OK", async () => {
      const target = JSON.parse((await json(admin, '/admin/models/connections', { name: 'Guard target', base_url: 'http://127.0.0.1:9/v1' })).body) as { id: string }
      for (const route of routes(target.id)) {
        const anonymous = await send(route, {})
        if (route.method === 'GET') expect([anonymous.status, anonymous.headers.get('location')]).toEqual([303, '/login?next=%2Fadmin%2Fmodels'])
        else expect(anonymous.status, route.path).toBe(401)
        const memberSession = await send(route, { cookie: member.cookie, accept: 'application/json' }, member.csrf)
        expect(memberSession.status, route.path).toBe(403)
        expect(JSON.parse(memberSession.body)).toMatchObject({ error: { code: 'admin_required' } })
        expect((await send(route, { cookie: member.cookie }, member.csrf)).status, route.path).toBe(403) // the page form
        const memberToken = await send(route, { authorization: `Bearer ${member.token}`, accept: 'application/json' })
        expect(memberToken.status, route.path).toBe(403)
        expect(JSON.parse(memberToken.body)).toMatchObject({ error: { code: 'admin_required' } })
        if (route.method === 'POST') expect((await send(route, { cookie: admin.cookie })).status, route.path).toBe(403) // no CSRF token
        const adminSession = await send(route, { cookie: admin.cookie }, admin.csrf)
        expect([200, 303], route.path).toContain(adminSession.status)
        if (route.path.endsWith('/delete')) continue // gone now; the token's turn is the next connection's
        const adminToken = await send(route, { authorization: `Bearer ${admin.token}`, accept: 'application/json' })
        expect(adminToken.status, route.path).toBe(403)
        expect(JSON.parse(adminToken.body)).toMatchObject({ error: { code: 'session_required' } })
      }
      const again = JSON.parse((await json(admin, '/admin/models/connections', { name: 'Guard target 2', base_url: 'http://127.0.0.1:9/v1' })).body) as { id: string }
      expect((await json(admin, `/admin/models/connections/${again.id}/delete`, {})).status).toBe(200)
      // The member never changed anything.
      expect(server.logLines.filter((line) => line.includes('"admin action"') && line.includes('"mia"'))).toEqual([])
    })
  })

  it('the key is in no response body and no log line', () => {
    expect(bodies.length).toBeGreaterThan(30)
    for (const body of bodies) expect(body).not.toContain(API_KEY)
    for (const line of server.logLines) expect(line).not.toContain(API_KEY)
    expect(server.logLines.some((line) => line.includes('"admin action"'))).toBe(true)
  })
})
