import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { afterAll, describe, expect, it } from 'vitest'
import { archiveWriter, BACKUP_FORMAT, BackupFileError, readArchive, verifyWholeFile, type BackupHeader } from './backup-archive.ts'

const dir = mkdtempSync(join(tmpdir(), 'knowagent-archive-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const header: BackupHeader = {
  format: BACKUP_FORMAT,
  knowagentVersion: '0.0.0-test',
  createdAt: '2026-12-08T20:00:00.000Z',
  lastMigration: '20261130000000_initial',
  postgresVersion: '18.4',
  queueSchemaVersion: null,
  secret: { source: 'environment', fingerprint: '0123456789abcdef' },
}
// Two tables' COPY text: one of many small rows, one with a large incompressible "bytea" row.
const small = Array.from({ length: 500 }, (_, i) => `${i}\tname ${i}\n`).join('')
const large = `1\t\\\\x${Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 251)).toString('hex')}\n`

async function writeArchive(file: string): Promise<void> {
  const output = createWriteStream(file)
  const archive = archiveWriter(output)
  await archive.header(header)
  await archive.entry('public.small', Readable.from([Buffer.from(small.slice(0, 1000)), Buffer.from(small.slice(1000))]), ['id', 'name'])
  await archive.entry('public.large', Readable.from([Buffer.from(large)]), ['id', 'raw'])
  await archive.finish()
  await new Promise<void>((resolve) => output.end(() => resolve()))
}

const file = join(dir, 'whole.backup')
const bytes = async () => {
  if (!readFileSync(file, { flag: 'a+' }).length) await writeArchive(file)
  return readFileSync(file)
}

async function readAll(path: string) {
  const seen: Record<string, string> = {}
  const result = await readArchive(createReadStream(path), {
    entry: async (name, data) => {
      seen[name] = Buffer.concat(await data.toArray()).toString()
    },
  })
  return { ...result, seen }
}

/** What `verifyWholeFile` and then `readArchive` say about these bytes. */
async function refusal(content: Buffer, name: string): Promise<{ whole: string; read: string }> {
  const path = join(dir, name)
  writeFileSync(path, content)
  const message = (promise: Promise<unknown>) =>
    promise.then(
      () => 'accepted',
      (error: unknown) => (error instanceof BackupFileError ? error.message : `not a BackupFileError: ${String(error)}`),
    )
  return { whole: await message(verifyWholeFile(path)), read: await message(readAll(path)) }
}

describe('the backup archive', () => {
  it('reads back what was written: the header, each entry byte for byte, the manifest with rows and checksums', async () => {
    const content = await bytes()
    expect(content.subarray(0, 17).toString()).toBe('KNOWAGENT-BACKUP\n')
    expect(content.length).toBeLessThan(large.length) // gzipped
    await expect(verifyWholeFile(file)).resolves.toEqual({ bytes: content.length })
    const { header: read, manifest, seen } = await readAll(file)
    expect(read).toEqual(header)
    expect(seen).toEqual({ 'public.small': small, 'public.large': large })
    expect(manifest.entries.map(({ name, rows, bytes, columns }) => ({ name, rows, bytes, columns }))).toEqual([
      { name: 'public.small', rows: 500, bytes: small.length, columns: ['id', 'name'] },
      { name: 'public.large', rows: 1, bytes: large.length, columns: ['id', 'raw'] },
    ])
  })

  it('refuses a file cut short anywhere: no end record, and the reader names where it ends', async () => {
    const content = await bytes()
    for (const cut of [10, 40, Math.floor(content.length / 3), content.length - 40, content.length - 1]) {
      const { whole, read } = await refusal(content.subarray(0, cut), `cut-${cut}.backup`)
      expect(whole, `cut at ${cut}`).toMatch(/^incomplete: .* has no end record|is not a knowagent backup/)
      expect(read, `cut at ${cut}`).toMatch(/^(truncated: the file ends inside|incomplete: the file ends after|not a knowagent backup)/)
    }
  })

  it('refuses a changed byte anywhere: the whole checksum, and the reader on its own too', async () => {
    const content = await bytes()
    for (const at of [20, 30, 200, Math.floor(content.length / 2), content.length - 60, content.length - 5]) {
      const flipped = Buffer.from(content)
      flipped[at] = flipped[at]! ^ 0x01
      const { whole, read } = await refusal(flipped, `flip-${at}.backup`)
      expect(whole, `byte ${at}`).toMatch(/^(damaged: the checksum of .* does not match its contents|incomplete: )/)
      expect(read, `byte ${at}`).toMatch(/^(damaged|truncated|incomplete|format)/)
    }
  })

  it('refuses what is not a backup, and bytes after the end', async () => {
    expect(await refusal(Buffer.from('PK\u0003\u0004 a zip'), 'zip.backup')).toEqual({
      whole: expect.stringContaining('is not a knowagent backup'),
      read: expect.stringContaining('not a knowagent backup'),
    })
    const { read } = await refusal(Buffer.concat([await bytes(), Buffer.from('x')]), 'trailing.backup')
    expect(read).toMatch(/^damaged/)
  })
})
