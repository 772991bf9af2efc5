// A folder bigger than one page: the tree shows 200 children and a "Show more" that loads the next
// 200 in place; the listing shows 500 entries a page with Previous / Next (it was cut at 500, and
// the tree at 200, with nothing to say so).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

describe('paging a big folder in the page', () => {
  let server: TestServer
  let cookie: string
  const FILES = 520
  const name = (i: number) => `f${String(i).padStart(4, '0')}.txt`
  const get = async (path: string) => {
    const res = await fetch(`${server.url}${path}`, { headers: { cookie } })
    expect(res.status, path).toBe(200)
    return res.text()
  }
  const treeNames = (html: string) => [...html.matchAll(/<span class="name">(f\d{4}\.txt)<\/span>/g)].map((m) => m[1])
  const listingNames = (html: string) => [...html.matchAll(/class="entry-link file"[^>]*>(f\d{4}\.txt)</g)].map((m) => m[1])

  beforeAll(async () => {
    server = await startTestServer()
    const { user, password } = await addUserWithToken(server, 'pia')
    for (let i = 0; i < FILES; i++) await putText(server.database.db, { owner: user, segments: ['big', name(i)], text: `file ${i}` })
    ;({ cookie } = await signIn(server, 'pia', password))
  })
  afterAll(async () => {
    await server?.close()
  })

  it('the tree shows the first 200 and loads the rest 200 at a time, in order, each page saying how many are shown', async () => {
    const page = await get(`/workspace?uri=${encodeURIComponent('kb://me/big/')}`)
    const tree = page.slice(page.indexOf('id="tree"'), page.indexOf('id="content"'))
    expect(treeNames(tree)).toEqual(Array.from({ length: 200 }, (_, i) => name(i)))
    expect(tree).toContain('Show 200 more (200 of 520 shown)')
    expect(tree).toContain(`hx-get="/workspace/tree?uri=${encodeURIComponent('kb://users/pia/big/')}&amp;offset=200"`)
    const second = await get(`/workspace/tree?uri=${encodeURIComponent('kb://users/pia/big/')}&offset=200`)
    expect(treeNames(second)).toEqual(Array.from({ length: 200 }, (_, i) => name(200 + i)))
    expect(second).toContain('Show 120 more (400 of 520 shown)')
    const last = await get(`/workspace/tree?uri=${encodeURIComponent('kb://users/pia/big/')}&offset=400`)
    expect(treeNames(last)).toEqual(Array.from({ length: 120 }, (_, i) => name(400 + i)))
    expect(last).not.toContain('Show ')
    expect(last).not.toContain('empty')
    expect(await get(`/workspace/tree?uri=${encodeURIComponent('kb://users/pia/big/')}&offset=520`)).toBe('')
  })

  it('a file past the tree\'s first page is shown when it is the one open: the tree lists the pages up to it', async () => {
    const page = await get(`/workspace?uri=${encodeURIComponent(`kb://me/big/${name(250)}`)}`)
    const tree = page.slice(page.indexOf('id="tree"'), page.indexOf('id="content"'))
    expect(treeNames(tree)).toEqual(Array.from({ length: 400 }, (_, i) => name(i)))
    expect(tree).toContain('Show 120 more (400 of 520 shown)')
  })

  it('the listing says which entries of how many it shows, and pages through all of them', async () => {
    const first = await get(`/workspace/content?uri=${encodeURIComponent('kb://me/big/')}`)
    expect(listingNames(first)).toEqual(Array.from({ length: 500 }, (_, i) => name(i)))
    expect(first).toContain('1–500 of 520 entries')
    expect(first).toContain('Next 20 ›')
    expect(first).not.toContain('Previous')
    const next = await get(`/workspace/content?uri=${encodeURIComponent('kb://users/pia/big/')}&from=500`)
    expect(listingNames(next)).toEqual(Array.from({ length: 20 }, (_, i) => name(500 + i)))
    expect(next).toContain('501–520 of 520 entries')
    expect(next).toContain('‹ Previous 500')
    expect(next).not.toContain('Next ')
    const small = await get(`/workspace/content?uri=${encodeURIComponent('kb://me/')}`)
    expect(small).toContain('1 entry')
    expect(small).not.toContain('listing-pager')
  })

  it('refuses a page offset that is not a whole number in range', async () => {
    for (const path of ['/workspace/tree?uri=kb://me/big/&offset=-1', '/workspace/content?uri=kb://me/big/&from=abc']) {
      const res = await fetch(`${server.url}${path}`, { headers: { cookie } })
      expect(res.status, path).toBe(400)
    }
  })
})
