// `knowagent import <folder> <kb-uri>`: recursive and idempotent (unchanged content makes no
// new version). Symlinks and dot-files are skipped, never followed.
import { constants } from 'node:fs'
import { access, lstat, readdir, readFile, stat } from 'node:fs/promises'
import { join, relative, resolve as resolvePath, sep } from 'node:path'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import type { DocumentParser } from './parse/document-parser.ts'
import { checkNodeName, formatKbUri } from './uri.ts'
import { makeDirectories, type Owner, putFile } from './store.ts'

export interface ImportReport {
  readonly added: string[]
  readonly updated: string[]
  readonly unchanged: string[]
  readonly skipped: Array<{ path: string; reason: string }>
  readonly failed: Array<{ path: string; reason: string }>
  /** Stored with their raw bytes, but the text body could not be parsed. */
  readonly unparsed: Array<{ uri: string; reason: string }>
}

export function emptyImportReport(): ImportReport {
  return { added: [], updated: [], unchanged: [], skipped: [], failed: [], unparsed: [] }
}

async function* walk(root: string, dir: string, report: ImportReport): AsyncGenerator<string> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  for (const entry of entries) {
    const full = join(dir, entry.name)
    const rel = relative(root, full)
    if (entry.name.startsWith('.')) {
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
  const info = await lstat(folder)
  if (!info.isDirectory()) throw new Error(`${folder} is not a directory`)
  await makeDirectories(db, owner, targetSegments)
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
    const segments = [...targetSegments, ...relSegments]
    const uri = formatKbUri({ login: owner.login, segments, directory: false })
    try {
      const stats = await lstat(file)
      if (stats.size > maxFileBytes) {
        report.failed.push({ path: rel, reason: `larger than the ${maxFileBytes}-byte limit (${stats.size} bytes)` })
        continue
      }
      const bytes = new Uint8Array(await readFile(file))
      const parsed = await parser.parse({ name: relSegments.at(-1)!, bytes, signal })
      const { outcome } = await putFile(db, {
        owner,
        segments,
        bytes,
        parsed,
      })
      report[outcome].push(uri)
      if (!parsed.ok && outcome !== 'unchanged') report.unparsed.push({ uri, reason: parsed.error })
    } catch (error) {
      report.failed.push({ path: rel, reason: error instanceof Error ? error.message : String(error) })
    }
  }
  return report
}

export function formatImportReport(report: ImportReport): string {
  const lines: string[] = []
  for (const uri of report.added) lines.push(`added     ${uri}`)
  for (const uri of report.updated) lines.push(`updated   ${uri}`)
  for (const uri of report.unchanged) lines.push(`unchanged ${uri}`)
  for (const { path, reason } of report.skipped) lines.push(`skipped   ${path} (${reason})`)
  for (const { path, reason } of report.failed) lines.push(`failed    ${path} (${reason})`)
  for (const { uri, reason } of report.unparsed) lines.push(`unparsed  ${uri} (raw bytes kept: ${reason})`)
  lines.push(
    `${report.added.length} added, ${report.updated.length} updated, ${report.unchanged.length} unchanged, ` +
      `${report.skipped.length} skipped, ${report.failed.length} failed`,
  )
  return lines.join('\n')
}
