import { describe, expect, it } from 'vitest'
import { zipWithBombs } from '../../../../tests/support/bombs.ts'
import { readZipEntries, writeStoredZip } from './zip.ts'

const everything = () => true
const text = (data: Uint8Array): string => new TextDecoder().decode(data)

describe('readZipEntries', () => {
  it('reads back what writeStoredZip wrote, only the entries asked for', async () => {
    const zip = writeStoredZip([
      { name: 'a.xml', data: '<a/>' },
      { name: 'media/b.png', data: new Uint8Array([1, 2, 3]) },
      { name: '知识.xml', data: '<z/>' },
    ])
    const read = await readZipEntries(zip, { maxInflatedBytes: 1000, include: (name) => name.endsWith('.xml') })
    if (!read.ok) throw new Error(read.detail)
    expect(read.entries.map((entry) => [entry.name, text(entry.data)])).toEqual([
      ['a.xml', '<a/>'],
      ['知识.xml', '<z/>'],
    ])
  })

  it('inflates deflated entries and counts every byte against one budget across entries', async () => {
    const zip = zipWithBombs([
      { name: 'one.xml', data: { inflatedBytes: 600 } },
      { name: 'two.xml', data: { inflatedBytes: 400 } },
    ])
    expect(await readZipEntries(zip, { maxInflatedBytes: 1000, include: everything })).toMatchObject({ ok: true })
    expect(await readZipEntries(zip, { maxInflatedBytes: 999, include: everything })).toEqual({ ok: false, problem: 'inflated_too_large', detail: 'two.xml' })
  })

  it('does not inflate the entries it skips', async () => {
    const zip = zipWithBombs([{ name: 'media/huge.bin', data: { inflatedBytes: 64 * 1024 * 1024 } }, { name: 'a.xml', data: '<a/>' }])
    expect(await readZipEntries(zip, { maxInflatedBytes: 10, include: (name) => name.endsWith('.xml') })).toMatchObject({ ok: true })
  })

  it.each([
    ['no end of central directory', new Uint8Array([1, 2, 3]), 'not a zip archive (no end of central directory)'],
    ['a truncated archive', writeStoredZip([{ name: 'a.xml', data: '<a/>' }]).subarray(0, 40), 'not a zip archive (no end of central directory)'],
  ])('calls %s corrupt', async (_label, bytes, detail) => {
    expect(await readZipEntries(bytes, { maxInflatedBytes: 1000, include: everything })).toEqual({ ok: false, problem: 'corrupt', detail })
  })

  it('refuses an entry whose CRC does not match its data', async () => {
    const zip = writeStoredZip([{ name: 'a.xml', data: '<a/>' }])
    zip[30 + 'a.xml'.length] = 0x3e // '<' → '>' inside the stored data
    expect(await readZipEntries(zip, { maxInflatedBytes: 1000, include: everything })).toEqual({ ok: false, problem: 'corrupt', detail: 'entry a.xml fails its CRC check' })
  })

  it('reports an encrypted entry', async () => {
    const zip = writeStoredZip([{ name: 'a.xml', data: '<a/>' }])
    const central = zip.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]))
    zip.writeUInt16LE(zip.readUInt16LE(central + 8) | 1, central + 8)
    expect(await readZipEntries(zip, { maxInflatedBytes: 1000, include: everything })).toEqual({ ok: false, problem: 'encrypted', detail: 'entry a.xml is encrypted' })
  })
})
