// `knowagent import <folder> <kb-uri>`: recursive and idempotent (unchanged content makes no
// new version). Symlinks and dot-files are skipped, never followed. Each file is ingested on its
// own (ingest.ts), so one that cannot be stored is reported and the others still are.
import { constants } from 'node:fs'
import { access, lstat, readdir, readFile, realpath, stat } from 'node:fs/promises'
import { join, relative, resolve as resolvePath, sep } from 'node:path'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import type { DocumentParser } from './parse/document-parser.ts'
import { ingestFiles } from './ingest.ts'
import { checkNodeName } from './uri.ts'
import type { Owner } from '../db/schema.ts'

export interface ImportReport {
  readonly added: string[]
  readonly updated: string[]
  readonly unchanged: string[]
  readonly skipped: Array<{ path: string; reason: string }>
  readonly failed: Array<{ path: string; reason: string }>
  /** Stored with their raw bytes, but without their text: the file's current version could not be parsed. */
  readonly unparsed: Array<{ uri: string; reason: string }>
}

export function emptyImportReport(): ImportReport {
  return { added: [], updated: [], unchanged: [], skipped: [], failed: [], unparsed: [] }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true })

/** A name from the disk as a terminal may show it: invalid UTF-8 bytes as \xNN, controls and bidi marks as \u{…}. */
export function printableName(name: string | Uint8Array): string {
  const text = typeof name === 'string' ? name : [...name].map((byte) => (byte < 0x80 ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`)).join('')
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`)
}

/**
 * The folder's files, depth first in name order. Names are read as bytes: one that is not valid
 * UTF-8 cannot be a node name (nor be opened through a string path: Node would replace its bytes),
 * so it is reported, shown with its bytes escaped, and the walk goes on.
 */
async function* walk(root: string, dir: string, report: ImportReport): AsyncGenerator<string> {
  const raw = await readdir(dir, { withFileTypes: true, encoding: 'buffer' })
  const entries: Array<{ name: string; entry: (typeof raw)[number] }> = []
  for (const entry of raw) {
    let name: string
    try {
      name = UTF8.decode(entry.name)
    } catch {
      report.failed.push({ path: join(relative(root, dir), printableName(entry.name)), reason: 'name not allowed: it is not valid UTF-8 (rename it on disk)' })
      continue
    }
    entries.push({ name, entry })
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  for (const { name, entry } of entries) {
    const full = join(dir, name)
    const rel = relative(root, full)
    if (name.startsWith('.')) {
      report.skipped.push({ path: rel, reason: 'hidden file or directory' })
    } else if (entry.isSymbolicLink()) {
      report.skipped.push({ path: rel, reason: 'symbolic link (not followed)' })
    } else if (entry.isDirectory()) {
      yield* walk(root, full, report)
    } else if (entry.isFile()) {
      yield full
    } else {
      report.skipped.push({ path: rel, reason: 'not a regular file' })
    }
  }
}

/**
 * What is wrong with `folder` as an import source, said so a person knows what to do (never a raw
 * ENOENT); undefined when it is a readable folder.
 */
export async function importSourceProblem(folder: string): Promise<string | undefined> {
  const shown = resolvePath(folder)
  let info
  try {
    info = await stat(shown)
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return `no such folder: ${shown} (give the path of a folder on this machine)`
    if (code === 'EACCES' || code === 'EPERM') return `cannot read ${shown}: permission denied (run as a user who can read it)`
    return `cannot open ${shown}: ${(error as Error).message}`
  }
  if (!info.isDirectory()) return `${shown} is a file, not a folder: import takes a folder (put the file in a folder, or upload it in the workspace)`
  try {
    await access(shown, constants.R_OK | constants.X_OK)
  } catch {
    return `cannot read ${shown}: permission denied (run as a user who can read it)`
  }
  return undefined
}

export async function importFolder(
  db: Kysely<DB>,
  {
    owner,
    folder,
    targetSegments,
    maxFileBytes,
    parser,
    signal,
  }: { owner: Owner; folder: string; targetSegments: ReadonlyArray<string>; maxFileBytes: number; parser: DocumentParser; signal?: AbortSignal },
): Promise<ImportReport> {
  const report = emptyImportReport()
  // The folder named is followed if it is a link (that is the folder meant); links inside are not.
  const root = await realpath(folder)
  if (!(await stat(root)).isDirectory()) throw new Error(`${printableName(folder)} is not a folder`)
  folder = root
  await ingestFiles(db, { owner, folder: { segments: targetSegments, create: true }, files: [], parser }) // the target, even for an empty folder
  const imported = new Set<string>()
  for await (const file of walk(folder, folder, report)) {
    signal?.throwIfAborted()
    const rel = relative(folder, file)
    // The same name rule as uploads: each name checked as it is on disk, stored in NFC.
    const checked = rel.split(sep).map(checkNodeName)
    const refused = checked.find((name) => !name.ok)
    if (refused !== undefined && !refused.ok) {
      report.failed.push({ path: rel, reason: `name not allowed: ${refused.reason}` })
      continue
    }
    const relSegments = checked.map((name) => (name.ok ? name.name : ''))
    const key = relSegments.join('/')
    if (imported.has(key)) {
      report.failed.push({ path: rel, reason: 'another file here has the same name once both are in Unicode NFC' })
      continue
    }
    imported.add(key)
    try {
      const stats = await lstat(file)
      if (stats.size > maxFileBytes) {
        report.failed.push({ path: rel, reason: `larger than the ${maxFileBytes}-byte limit (${stats.size} bytes)` })
        continue
      }
      const bytes = new Uint8Array(await readFile(file)) // read once: what is parsed is what is stored
      const folder = { segments: [...targetSegments, ...relSegments.slice(0, -1)], create: true }
      const { files } = await ingestFiles(db, { owner, folder, files: [{ name: relSegments.at(-1)!, bytes }], parser, signal, origin: 'import' })
      const { node, outcome, withoutText } = files[0]!
      report[outcome].push(node.uri)
      if (withoutText !== undefined) report.unparsed.push({ uri: node.uri, reason: withoutText })
    } catch (error) {
      if (signal?.aborted) throw error
      report.failed.push({ path: rel, reason: error instanceof Error ? error.message : String(error) })
    }
  }
  return report
}

/** The report as the CLI prints it: every path and reason through printableName (a file name can hold a terminal escape). */
export function formatImportReport(report: ImportReport): string {
  const lines: string[] = []
  const show = printableName
  for (const uri of report.added) lines.push(`added     ${show(uri)}`)
  for (const uri of report.updated) lines.push(`updated   ${show(uri)}`)
  for (const uri of report.unchanged) lines.push(`unchanged ${show(uri)}`)
  for (const { path, reason } of report.skipped) lines.push(`skipped   ${show(path)} (${show(reason)})`)
  for (const { path, reason } of report.failed) lines.push(`failed    ${show(path)} (${show(reason)})`)
  for (const { uri, reason } of report.unparsed) lines.push(`unparsed  ${show(uri)} (raw bytes kept: ${show(reason)})`)
  lines.push(
    `${report.added.length} added, ${report.updated.length} updated, ${report.unchanged.length} unchanged, ` +
      `${report.skipped.length} skipped, ${report.failed.length} failed`,
  )
  return lines.join('\n')
}
