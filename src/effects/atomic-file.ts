// A file written whole or not at all: the bytes go to a temporary file beside the target (same
// folder, so the rename cannot cross file systems), flushed to disk, then renamed over the target.
// Any failure — or an abort — removes the temporary file: no partial file is ever left under
// either name.
import { randomUUID } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { open, rename, rm, stat } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import type { Writable } from 'node:stream'
import { UserError } from './auth/users.ts'

/** Why `file` cannot be written (its folder is missing, or it is a folder), or undefined. Checked before any work starts. */
export async function atomicTargetProblem(file: string): Promise<string | undefined> {
  const target = resolve(file)
  const folder = await stat(dirname(target)).catch(() => undefined)
  if (folder === undefined) return `no such folder: ${dirname(target)} (create it first, or write the file elsewhere)`
  if (!folder.isDirectory()) return `${dirname(target)} is not a folder`
  const existing = await stat(target).catch(() => undefined)
  if (existing?.isDirectory()) return `${target} is a folder; give the path of a file to write`
  return undefined
}

/** fsync of a folder, so that a rename in it survives a power cut (not every file system lets one open a folder). */
async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, 'r').catch(() => undefined)
  if (!handle) return
  try {
    await handle.sync().catch(() => {})
  } finally {
    await handle.close()
  }
}

/** Runs `write` into a temporary file and renames it to `file` once `write` resolved; resolves with its result and the file's size. */
export async function writeFileAtomically<T>(file: string, write: (output: Writable) => Promise<T>): Promise<{ result: T; bytes: number; path: string }> {
  const target = resolve(file)
  const problem = await atomicTargetProblem(target)
  if (problem !== undefined) throw new UserError(problem)
  const temporary = join(dirname(target), `.${basename(target)}.${randomUUID().slice(0, 8)}.partial`)
  const output = createWriteStream(temporary, { flags: 'wx', mode: 0o600 })
  // The stream's errors reach `write` through the writes and the end it waits on. One that comes
  // while nothing waits — a write still in flight when a failure below destroys the stream — must
  // not be thrown uncaught: that also stopped the stream from ever closing, so a backup stopped
  // under load never returned. It is kept, and a `write` that resolved despite it fails with it.
  let failure: unknown
  output.on('error', (error) => {
    failure ??= error
  })
  try {
    // `write` resolves once the stream has finished and closed its descriptor (a pipeline waits for both).
    const result = await write(output)
    if (failure !== undefined) throw failure
    const handle = await open(temporary, 'r+')
    let size: number
    try {
      await handle.sync() // on disk before the rename makes it the target
      size = (await handle.stat()).size
    } finally {
      await handle.close()
    }
    await rename(temporary, target)
    await syncFolder(dirname(target)) // the rename itself on disk
    return { result, bytes: size, path: target }
  } catch (error) {
    // The file is opened asynchronously: wait until the stream is closed (and so has created it, if
    // it ever will) before removing it, or it would appear after the removal.
    if (!output.closed) await new Promise<void>((resolve) => output.once('close', () => resolve()).destroy())
    await rm(temporary, { force: true })
    throw error
  }
}
