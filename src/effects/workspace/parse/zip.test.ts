import { describe, expect, it } from 'vitest'
import { zipWithBombs } from '../../../../tests/support/bombs.ts'
import { inflateZipEntry, readZipDirectory, readZipEntries, writeStoredZip } from './zip.ts'

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

describe('readZipDirectory', () => {
  it('reads names and numbers without inflating anything; counts entries before reading one', () => {
    const zip = zipWithBombs([{ name: 'huge.bin', data: { inflatedBytes: 64 * 1024 * 1024, declaredBytes: 10 } }, { name: '知识/a.md', data: 'a' }])
    const directory = readZipDirectory(zip)
    if (!directory.ok) throw new Error(directory.detail)
    expect(directory.entries.map(({ name, declaredSize, method, utf8, symlink }) => ({ name, declaredSize, method, utf8, symlink }))).toEqual([
      { name: 'huge.bin', declaredSize: 10, method: 8, utf8: true, symlink: false },
      { name: '知识/a.md', declaredSize: 1, method: 0, utf8: true, symlink: false },
    ])
    expect(readZipDirectory(zip, { maxEntries: 1 })).toEqual({ ok: false, problem: 'too_many_entries', detail: 'more than 1 entries' })
  })

  it('reads an unflagged name as UTF-8 when its bytes are UTF-8, and says when a name is not UTF-8', () => {
    const zip = writeStoredZip([{ name: '笔记.md', data: 'a' }, { name: 'x_.md', data: 'b' }])
    const second = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]))
    const first = zip.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]))
    zip.writeUInt16LE(0, first + 8) // no UTF-8 flag, UTF-8 bytes
    zip.writeUInt16LE(0, second + 8)
    zip[second + 46 + 1] = 0xe9 // latin1 "é": not UTF-8
    const directory = readZipDirectory(zip)
    if (!directory.ok) throw new Error(directory.detail)
    expect(directory.entries.map(({ name, utf8 }) => [name, utf8])).toEqual([
      ['笔记.md', true],
      ['xé.md', false],
    ])
  })

  it('marks a Unix symbolic link (made by Unix, mode S_IFLNK)', () => {
    const zip = writeStoredZip([{ name: 'link', data: '/etc/passwd' }])
    const central = zip.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]))
    zip.writeUInt16LE(0x0314, central + 4)
    zip.writeUInt32LE((0o120777 << 16) >>> 0, central + 38)
    const directory = readZipDirectory(zip)
    expect(directory.ok && directory.entries[0]?.symlink).toBe(true)
  })
})

describe('inflateZipEntry', () => {
  it('stops an entry at its cap, whatever it declares', async () => {
    const zip = zipWithBombs([{ name: 'bomb.txt', data: { inflatedBytes: 8 * 1024 * 1024, declaredBytes: 1000 } }])
    const directory = readZipDirectory(zip)
    if (!directory.ok) throw new Error(directory.detail)
    expect(await inflateZipEntry(zip, directory.directoryOffset, directory.entries[0]!, { cap: 1000 })).toEqual({ ok: false, problem: 'inflated_too_large', detail: 'bomb.txt' })
  })
})
