// Retrieval services over HTTP: the settings page (sign-in, CSRF, the write-only key, sources,
// the refresh fragment), the catalog and the kb_* tools in a real stream, and the switch: with
// `retrieval.bailian.enabled: false` none of it appears.
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { AppConfig } from '../../src/effects/config/app-config.ts'
import { resolveBailianConfig } from '../../src/effects/retrieval/bailian-config.ts'
import { type FakeBailian, startFakeBailian } from '../support/fake-bailian.ts'
import { type ScriptedProvider, scriptedModel, startScriptedProvider, streamScript, textAnswerSse } from '../support/scripted-provider.ts'
import { startScriptedServer } from '../support/scripted-server.ts'
import { readSseEvents } from '../support/sse-frames.ts'
import { addUserWithToken, signIn, type TestServer } from '../support/test-server.ts'

const KEY = 'sk-http-bailian-secret-4a4a'
let fake: FakeBailian
let provider: ScriptedProvider

const withBailian = (enabled: boolean) => (config: AppConfig): AppConfig => ({
  ...config,
  retrievalBailian: resolveBailianConfig({ enabled, endpointHost: fake.endpointHost }),
})

beforeAll(async () => {
  fake = await startFakeBailian({
    workspaces: {
      'ws-http': {
        apiKey: KEY,
        services: [
          { agent_id: 'search-docs', agent_name: 'Docs search', scene: 'search' },
          { agent_id: 'chat-docs', agent_name: 'Docs Q&A', scene: 'chat' },
        ],
      },
    },
  })
  provider = await startScriptedProvider()
})
afterAll(async () => {
  await provider?.close()
  await fake?.close()
})

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()

describe('enabled (the default)', () => {
  let server: TestServer
  let session: { cookie: string; csrf: string }
  let token: string
  beforeAll(async () => {
    ;({ server } = await startScriptedServer({
      provider,
      retrieval: true,
      configure: withBailian(true),
      models: (provider) => [scriptedModel(provider), scriptedModel(provider, { id: 'text-only', name: 'Text only', supportsNativeToolCalling: false })],
    }))
    const alice = await addUserWithToken(server, 'alice')
    token = alice.token
    session = await signIn(server, 'alice', alice.password)
  })
  afterAll(async () => {
    await server?.close()
  })

  const page = () => fetch(`${server.url}/settings/retrieval`, { headers: { cookie: session.cookie } })
  const save = (fields: Record<string, string>, csrf = session.csrf) =>
    fetch(`${server.url}/settings/retrieval`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ _csrf: csrf, ...fields }),
    })

  test('the page needs a session; the workspace page links to it', async () => {
    const anonymous = await fetch(`${server.url}/settings/retrieval`, { redirect: 'manual' })
    expect(anonymous.status).toBe(303)
    expect(anonymous.headers.get('location')).toBe('/login?next=%2Fsettings%2Fretrieval')
    const workspace = await (await fetch(`${server.url}/workspace`, { headers: { cookie: session.cookie } })).text()
    expect(workspace).toContain('<a href="/settings/retrieval">Retrieval services</a>')
  })

  test('before anything is configured: not configured, no cache to show', async () => {
    const res = await page()
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const html = await res.text()
    expect(html).toContain('<strong data-testid="api-key-status">not configured</strong>')
    expect(html).toContain('Set an API key to see the services of your workspace.')
  })

  test('an API token can neither read nor change the settings (403): the key stays as it was', async () => {
    const bearer = { authorization: `Bearer ${token}` }
    const read = await fetch(`${server.url}/settings/retrieval`, { headers: bearer, redirect: 'manual' })
    expect(read.status).toBe(403)
    const change = await fetch(`${server.url}/settings/retrieval`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...bearer, 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ api_key: 'sk-from-a-stolen-token', workspace_id: 'ws-stolen' }),
    })
    expect(change.status).toBe(403)
    expect(await change.text()).toContain('need a browser session')
    const html = await (await page()).text()
    expect(html).toContain('<strong data-testid="api-key-status">not configured</strong>')
    expect(html).not.toContain('ws-stolen')
  })

  test('a post without the CSRF token is refused', async () => {
    const res = await save({ workspace_id: 'ws-http' }, 'wrong-token')
    expect(res.status).toBe(403)
  })

  test('saving the key and workspace: the key is never sent back, the sources are named, the catalog is fetched', async () => {
    const listBefore = fake.requestsFor('list').length
    const res = await save({ api_key: KEY, workspace_id: 'ws-http', default_retrieve_agent_id: '', default_chat_agent_id: '' })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/settings/retrieval?notice=saved')
    const after = await page()
    const html = await after.text()
    expect(html).not.toContain(KEY)
    expect(JSON.stringify([...after.headers])).not.toContain(KEY)
    expect(html).toContain('<strong data-testid="api-key-status">configured</strong>')
    expect(html).toMatch(/<input id="api_key" name="api_key" type="password" value=""/)
    expect(html).toContain('<span data-testid="workspace_id-source">your settings</span>')
    await expect.poll(() => fake.requestsFor('list').length).toBeGreaterThanOrEqual(listBefore + 2)
    expect(server.logLines.join('\n')).not.toContain(KEY)
  })

  test('an invalid value is refused with the page and a reason; nothing is echoed but the error', async () => {
    const res = await save({ workspace_id: '<script>alert(1)</script>', api_key: '' })
    expect(res.status).toBe(400)
    const html = await res.text()
    expect(html).toContain('the workspace id may hold only letters, digits')
    expect(html).not.toContain('<script>alert(1)')
  })

  test('force refresh answers htmx with the diagnostics fragment, and plain forms with a redirect', async () => {
    await save({ api_key: KEY, workspace_id: 'ws-http' })
    const before = fake.requestsFor('list').length
    const fragment = await fetch(`${server.url}/settings/retrieval/refresh`, {
      method: 'POST',
      headers: { cookie: session.cookie, 'x-csrf-token': session.csrf, 'hx-request': 'true', 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    })
    expect(fragment.status).toBe(200)
    const html = await fragment.text()
    expect(html.startsWith('<section class="settings-card" id="retrieval-cache"')).toBe(true)
    expect(html).toContain('Refreshed just now.')
    expect(html).toContain('<dd>ws-http</dd>')
    expect(fake.requestsFor('list').length).toBeGreaterThanOrEqual(before + 2)
    const plain = await fetch(`${server.url}/settings/retrieval/refresh`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ _csrf: session.csrf }),
    })
    expect(plain.status).toBe(303)
    expect(plain.headers.get('location')).toBe('/settings/retrieval?notice=refreshed')
  })

  test('a stream shows the model the catalog block and the kb_* tools', async () => {
    await save({ api_key: KEY, workspace_id: 'ws-http' })
    const requestIndex = provider.requests.length
    provider.enqueue(streamScript(textAnswerSse('Nothing to search.')))
    const res = await fetch(`${server.url}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: 'remote', message: 'Which knowledge bases are there?' }),
    })
    const { events } = await readSseEvents(res)
    expect(events.at(-1)?.event).toBe('done')
    const body = provider.requests[requestIndex]!.body as { messages: Array<{ role: string; content: string }>; tools: Array<{ function: { name: string } }> }
    expect(body.tools.map((tool) => tool.function.name)).toEqual(expect.arrayContaining(['kb_search', 'kb_chat']))
    expect(body.messages[1]).toMatchObject({ role: 'system' })
    expect(body.messages[1]!.content).toContain('[knowagent:context source="retrieval-catalog"]')
    expect(body.messages[1]!.content).toContain('- search-docs: Docs search')
  })

  // Issue 33 item 4: a text-only model was told to call kb_search / kb_chat, tools it never got.
  test('a text-only model gets no catalog block; a tool model in the same workspace does', async () => {
    await save({ api_key: KEY, workspace_id: 'ws-http' })
    const ask = async (modelId: string) => {
      const requestIndex = provider.requests.length
      provider.enqueue(streamScript(textAnswerSse('Nothing to search.')))
      const res = await fetch(`${server.url}/api/v1/knowledge-agent/stream`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ uri: 'kb://me/', model_id: modelId, message: 'Which knowledge bases are there?' }),
      })
      const { events } = await readSseEvents(res)
      expect(events.at(-1)?.event).toBe('done')
      return provider.requests[requestIndex]!.body as { messages: Array<{ role: string; content: string }>; tools?: unknown[] }
    }
    const textOnly = await ask('text-only')
    expect(textOnly.tools ?? []).toEqual([])
    expect(JSON.stringify(textOnly.messages)).not.toContain('retrieval-catalog')
    expect(JSON.stringify(textOnly.messages)).not.toContain('kb_search')
    const withTools = await ask('remote')
    expect(withTools.messages[1]!.content).toContain('[knowagent:context source="retrieval-catalog"]')
  })

  // Issue 33 item 7: after the service refused a user's own key the page still said "Last error: none".
  test("a refused key shows on its owner's page as the last error, and not on another user's page", async () => {
    fake.setWorkspace('ws-refused', { apiKey: 'sk-the-right-key', services: [{ agent_id: 'search-x', agent_name: 'X', scene: 'search' }] })
    const bob = await addUserWithToken(server, 'bob')
    const bobSession = await signIn(server, 'bob', bob.password)
    const carol = await addUserWithToken(server, 'carol')
    const carolSession = await signIn(server, 'carol', carol.password)
    const post = (who: { cookie: string; csrf: string }, path: string, fields: Record<string, string>) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: who.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: form({ _csrf: who.csrf, ...fields }),
      })
    const lastError = async (who: { cookie: string }) => {
      const html = await (await fetch(`${server.url}/settings/retrieval`, { headers: { cookie: who.cookie } })).text()
      return /<dd data-testid="cache-last-error">([^<]*)<\/dd>/.exec(html)?.[1]
    }
    // Carol's key works; Bob's is refused.
    expect((await post(carolSession, '/settings/retrieval', { api_key: 'sk-the-right-key', workspace_id: 'ws-refused' })).status).toBe(303)
    await expect.poll(() => lastError(carolSession)).toBe('none')
    expect((await post(bobSession, '/settings/retrieval', { api_key: 'sk-a-refused-key', workspace_id: 'ws-refused' })).status).toBe(303)
    expect((await post(bobSession, '/settings/retrieval/refresh', {})).headers.get('location')).toBe('/settings/retrieval?notice=refresh-failed')
    const bobs = await lastError(bobSession)
    expect(bobs).toContain('your API key was refused')
    expect(bobs).toContain('Invalid API-key provided.')
    expect(await lastError(carolSession)).toBe('none')
  })
})

describe('retrieval.bailian.enabled: false', () => {
  let server: TestServer
  let session: { cookie: string; csrf: string }
  let token: string
  beforeAll(async () => {
    ;({ server } = await startScriptedServer({ provider, retrieval: true, configure: withBailian(false) }))
    const alice = await addUserWithToken(server, 'alice')
    token = alice.token
    session = await signIn(server, 'alice', alice.password)
  })
  afterAll(async () => {
    await server?.close()
  })

  test('no settings page, no settings entry, no tools, no catalog block', async () => {
    expect(server.ctx.retrieval).toBeUndefined()
    const settings = await fetch(`${server.url}/settings/retrieval`, { headers: { cookie: session.cookie } })
    expect(settings.status).toBe(404)
    const workspace = await (await fetch(`${server.url}/workspace`, { headers: { cookie: session.cookie } })).text()
    expect(workspace).not.toContain('Retrieval services')
    expect(server.ctx.tools.schemas.map((schema) => schema.function.name)).not.toContain('kb_search')

    const requestIndex = provider.requests.length
    provider.enqueue(streamScript(textAnswerSse('Hello.')))
    const res = await fetch(`${server.url}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: 'remote', message: 'Hi' }),
    })
    await readSseEvents(res)
    const body = provider.requests[requestIndex]!.body as { messages: Array<{ content: string }>; tools: Array<{ function: { name: string } }> }
    expect(body.tools.map((tool) => tool.function.name)).not.toContain('kb_search')
    expect(body.tools.map((tool) => tool.function.name)).not.toContain('kb_chat')
    expect(JSON.stringify(body.messages)).not.toContain('retrieval-catalog')
  })
})
