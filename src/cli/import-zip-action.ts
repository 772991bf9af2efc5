// `knowagent import-zip <file.zip> <kb-uri> --user <login>`: the CLI face of the zip import
// (src/effects/workspace/import-zip.ts), as `knowagent export` is of the export.
import { loadConfig } from '../effects/config/app-config.ts'
import { findUserByLogin, UserError } from '../effects/auth/users.ts'
import { parseKbUri } from '../effects/workspace/uri.ts'
import { withDatabase, type Io } from './actions.ts'

/**
 * `import-zip <file.zip> <kb-uri> --user <login>`: a zip (such as `knowagent export` writes)
 * unpacked into the folder — the use case the API's import-zip runs, with its checks and limits
 * (every entry checked before any is inflated; all files or none). The folder is made if missing.
 * Not counted against the user's storage limits: the operator imports, as `knowagent import`.
 */
export async function importZipIntoWorkspace(io: Io, { file, uri, login }: { file: string; uri: string; login: string }): Promise<number> {
  const { stat, mkdtemp, rm } = await import('node:fs/promises')
  const { join } = await import('node:path')
  const { importZip } = await import('../effects/workspace/import-zip.ts')
  const { printableName } = await import('../effects/workspace/import-folder.ts')
  const found = await stat(file).catch(() => undefined)
  if (!found?.isFile()) throw new UserError(`${printableName(file)} is not a file`)
  const config = loadConfig({ env: io.env })
  const interrupted = new AbortController()
  const onSignal = (signal: NodeJS.Signals) => interrupted.abort(new UserError(`stopped by ${signal}; nothing was imported`))
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  try {
    const stored = await withDatabase(io, async ({ db }) => {
      const user = await findUserByLogin(db, login)
      if (!user) throw new UserError(`no user "${login}"`)
      const target = parseKbUri({ uri, callerLogin: user.login })
      const { makeDocumentParser } = await import('../effects/workspace/parse/document-parser.ts')
      const parser = makeDocumentParser(config.parsing)
      const spool = await mkdtemp(join(config.uploadTempDir, 'knowagent-import-zip-'))
      try {
        return await importZip(db, {
          owner: user,
          folder: { segments: target.segments, create: true },
          zipPath: file,
          parser,
          spool,
          signal: interrupted.signal,
          limits: { maxEntryBytes: config.maxFileBytes, maxTotalBytes: config.maxZipImportBytes },
        })
      } finally {
        await parser.close()
        await rm(spool, { recursive: true, force: true })
      }
    })
    const count = (outcome: string) => stored.files.filter((stored) => stored.outcome === outcome).length
    for (const { node, outcome, withoutText } of stored.files) {
      io.out(`${outcome.padEnd(9)} ${printableName(node.uri)}${withoutText === undefined ? '' : ` (raw bytes kept: ${printableName(withoutText)})`}`)
    }
    io.out(`${count('added')} added, ${count('updated')} updated, ${count('unchanged')} unchanged into ${printableName(stored.folderUri)}`)
    return 0
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}
