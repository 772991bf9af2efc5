// One person's invalid compile skills must not stall the server for everyone (issue 34, item 1).
// A hostile user kept 100 SKILL.md files whose front matter was ~2,000 nested "[" (under the
// 4,000-character limit): the YAML parser spent ~12 ms on each before overflowing its stack,
// synchronously, on every options call and compile form — listing calls took 1.1–1.8 s and
// /healthz stalled 1.4 s. Now deep front matter is refused by a linear scan, a listing lets other
// requests in between the skills it parses, and a version is parsed once.
//
// No clock is asserted: the moment A's listing has its SKILL.md bodies in hand (the read's answer
// reaching the server, where the parsing starts) is when B's /healthz is sent; its answer must
// arrive while A's listing is still running (before, it came after A's whole synchronous parse).
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { listUserSkills, userSkillSegments } from '../../src/effects/compile/skills.ts'
import { addUserWithToken, startTestServer, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

const OPTIONS = '/api/v1/knowledge-agent/options'
const SKILLS = 100
const nestedSkill = (i: number) => `---\nname: flood-${i}\ndescription: ${'['.repeat(2_000)}\n---\nBody\n`

/** Calls `onResult` when a query reading the flood's SKILL.md bodies (`case when … then file_versions.body end`) has its answer, before the caller sees it. */
function watchBodyReads(onResult: () => void): { reads: () => number; restore: () => void } {
  const original = pg.Client.prototype.query
  let reads = 0
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const result = (original as (...a: unknown[]) => unknown).apply(this, args)
    const config = args[0]
    const text = typeof config === 'string' ? config : (config as { text?: string } | undefined)?.text
    const values = (typeof config === 'string' ? args[1] : (config as { values?: unknown[] } | undefined)?.values) as unknown[] | undefined
    // The flood's own read (one parameter per skill), not B's listing of its one skill.
    if (!text?.includes('then file_versions.body end') || (values?.length ?? 0) < SKILLS || !(result instanceof Promise)) return result
    reads++
    return result.then((value: unknown) => {
      onResult()
      return value
    })
  } as typeof original
  return { reads: () => reads, restore: () => void (pg.Client.prototype.query = original) }
}

describe('a flood of deeply nested SKILL.md files', () => {
  let server: TestServer
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  let bob: Awaited<ReturnType<typeof addUserWithToken>>
  let restore = () => {}
  const get = (token: string, path: string) => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } })

  beforeAll(async () => {
    server = await startTestServer({ compile: { worker: false } })
    alice = await addUserWithToken(server, 'alice')
    bob = await addUserWithToken(server, 'bob')
    for (let i = 0; i < SKILLS; i++) await putText(server.database.db, { owner: alice.user, segments: userSkillSegments(`flood-${i}`), text: nestedSkill(i) })
    await putText(server.database.db, { owner: bob.user, segments: userSkillSegments('terse'), text: '---\nname: terse\ndescription: Terse notes\n---\nBe brief.\n' })
  })
  afterEach(() => restore())
  afterAll(async () => {
    await server?.close()
  })

  it("leaves another user's requests answered while the flood is being listed, and lists each version once", async () => {
    const order: string[] = []
    let bHealth: Promise<unknown> | undefined
    const watch = watchBodyReads(() => {
      bHealth ??= fetch(`${server.url}/healthz`).then(async (res) => order.push(`B /healthz ${res.status} ${JSON.stringify(await res.json())}`))
    })
    restore = watch.restore

    const bOptions = get(bob.token, OPTIONS) // B's own listing, beside A's
    const listing = await get(alice.token, OPTIONS)
    order.push(`A options ${listing.status}`)
    await bHealth
    expect(order).toEqual(['B /healthz 200 {"ok":true}', 'A options 200'])
    const mine = (await (await bOptions).json()) as { compile: { skills: Array<{ ref: string }> } }
    expect(mine.compile.skills.map((skill) => skill.ref)).toEqual(['wiki-default', 'user:terse'])

    // Each refusal says why, and the next listing reads no body again: every version was parsed once.
    const readsBefore = watch.reads()
    const again = (await (await get(alice.token, OPTIONS)).json()) as { compile: { skills: Array<{ ref: string }> } }
    expect(again.compile.skills.map((skill) => skill.ref)).toEqual(['wiki-default'])
    expect(watch.reads()).toBe(readsBefore)
    const { invalid } = await listUserSkills(server.database.db, alice.user)
    expect(invalid).toHaveLength(SKILLS)
    for (const refusal of invalid) expect(refusal.message).toMatch(/^the front matter nests too deeply \(up to \d+ levels, at most 64\)/)
    expect(watch.reads()).toBe(readsBefore)
  })
})
