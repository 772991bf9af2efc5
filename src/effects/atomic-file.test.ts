import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { once } from 'node:events'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { writeFileAtomically } from './atomic-file.ts'

const dirs: string[] = []
const folder = () => {
  const dir = mkdtempSync(join(tmpdir(), 'knowagent-atomic-'))
  dirs.push(dir)
  return dir
}
afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })))

const writeAll = (output: NodeJS.WritableStream, text: string) => new Promise<string>((resolve, reject) => output.end(text, () => resolve(text)).on('error', reject))

describe('writeFileAtomically', () => {
  it('replaces the target whole once the write resolved, leaving nothing beside it', async () => {
    const dir = folder()
    writeFileSync(join(dir, 'out.zip'), 'the old file')
    const written = await writeFileAtomically(join(dir, 'out.zip'), (output) => writeAll(output, 'the new file'))
    expect(written).toMatchObject({ result: 'the new file', bytes: 12 })
    expect(readFileSync(join(dir, 'out.zip'), 'utf8')).toBe('the new file')
    expect(readdirSync(dir)).toEqual(['out.zip'])
  })

  it('leaves no file, and the old one untouched, when the write fails mid-way', async () => {
    const dir = folder()
    await expect(
      writeFileAtomically(join(dir, 'new.zip'), async (output) => {
        output.write('half of it')
        throw new Error('a file vanished')
      }),
    ).rejects.toThrow('a file vanished')
    expect(readdirSync(dir)).toEqual([])
    writeFileSync(join(dir, 'old.zip'), 'kept')
    await expect(writeFileAtomically(join(dir, 'old.zip'), () => Promise.reject(new Error('stopped')))).rejects.toThrow('stopped')
    expect(readdirSync(dir)).toEqual(['old.zip'])
    expect(readFileSync(join(dir, 'old.zip'), 'utf8')).toBe('kept')
  })

  it('a failure while writes are still in flight is thrown once, not uncaught, and still leaves no file', async () => {
    // The backup stopped under load: the temporary file was destroyed while the write stream was
    // still writing its buffered chunks; their failure ("Cannot call writev after a stream was
    // destroyed") was an uncaught exception, and the stream never closed, so this never returned.
    const dir = folder()
    const big = Buffer.alloc(4 * 1024 * 1024, 0x61)
    await expect(
      writeFileAtomically(join(dir, 'stopped.backup'), async (output) => {
        await once(output, 'ready') // the file open: the first chunk goes alone
        // the next ones are buffered meanwhile, and are being written (one writev) when it calls back
        await new Promise<void>((resolve) => {
          output.write(big, () => resolve())
          for (let i = 0; i < 4; i++) output.write(big)
        })
        throw new Error('the backup was stopped')
      }),
    ).rejects.toThrow('the backup was stopped')
    expect(readdirSync(dir)).toEqual([])
  })

  it('refuses a missing folder or a folder as the target before writing anything', async () => {
    const dir = folder()
    await expect(writeFileAtomically(join(dir, 'no', 'out.zip'), (o) => writeAll(o, 'x'))).rejects.toThrow('no such folder')
    await expect(writeFileAtomically(dir, (o) => writeAll(o, 'x'))).rejects.toThrow('is a folder')
    expect(existsSync(join(dir, 'no'))).toBe(false)
  })
})
