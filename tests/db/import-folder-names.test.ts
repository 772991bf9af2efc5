// The import CLI applies the same name rule as uploads (checkNodeName): names are checked as
// they are on disk, never rewritten except into NFC, and two names equal in NFC are one file.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createUser } from '../../src/effects/auth/users.ts'
import { formatImportReport, importFolder } from '../../src/effects/workspace/import-folder.ts'
import { makeDocumentParser, type DocumentParser } from '../../src/effects/workspace/parse/index.ts'
import { getNode } from '../../src/effects/workspace/store.ts'
import { listChildren } from '../../src/effects/workspace/folder-listing.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'

describe('importFolder: node names', () => {
  let database: TestDatabase
  let parser: DocumentParser
  const folder = mkdtempSync(join(tmpdir(), 'knowagent-import-names-'))

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    parser = makeDocumentParser({ processes: 1 })
    mkdirSync(join(folder, 'notes'))
    writeFileSync(join(folder, 'notes', 'caf\u00e9.md'), 'composed')
    writeFileSync(join(folder, 'notes', 'cafe\u0301.md'), 'decomposed') // a different file on disk, the same name in NFC
    writeFileSync(join(folder, 'notes', 'invoice\u202Efdp.md'), 'bidi')
    writeFileSync(join(folder, 'notes', 'zero\u200Bwidth.md'), 'zero width')
    writeFileSync(join(folder, 'notes', 'back\\slash.md'), 'backslash')
    mkdirSync(join(folder, 'Re\u0301sume\u0301s')) // a decomposed folder name
    writeFileSync(join(folder, 'Re\u0301sume\u0301s', 'a.md'), 'in a decomposed folder')
  })
  afterAll(async () => {
    await parser?.close()
    await database?.close()
    rmSync(folder, { recursive: true, force: true })
  })

  it('refuses invisible, bidi and folder-part names, imports NFC names once, and says why', async () => {
    const owner = await createUser(database.db, { login: 'importer', password: 'importer-password', hashCost: TEST_PASSWORD_COST })
    const report = await importFolder(database.db, { owner, folder, targetSegments: ['in'], maxFileBytes: 1024, parser })
    expect(report.added.sort()).toEqual(['kb://users/importer/in/R\u00e9sum\u00e9s/a.md', 'kb://users/importer/in/notes/caf\u00e9.md'].sort())
    const failed = Object.fromEntries(report.failed.map(({ path, reason }) => [path, reason]))
    expect(failed[join('notes', 'invoice\u202Efdp.md')]).toBe('name not allowed: invisible or control character U+202E is not allowed in a name')
    expect(failed[join('notes', 'zero\u200Bwidth.md')]).toBe('name not allowed: invisible or control character U+200B is not allowed in a name')
    expect(failed[join('notes', 'back\\slash.md')]).toMatch(/^name not allowed: a name cannot hold a folder part/)
    expect(Object.values(failed).filter((reason) => reason.includes('the same name once both are in Unicode NFC'))).toHaveLength(1)
    const notes = await getNode(database.db, owner, ['in', 'notes'])
    const children = await listChildren(database.db, { owner, parent: notes, offset: 0, limit: 50 })
    expect(children.entries.map((node) => node.name)).toEqual(['caf\u00e9.md'])
  })

  it('reports a name that is not valid UTF-8 (bytes escaped) and goes on; prints no terminal escape from a name', async () => {
    const odd = mkdtempSync(join(tmpdir(), 'knowagent-import-bytes-'))
    try {
      writeFileSync(Buffer.concat([Buffer.from(`${odd}/`), Buffer.from([0x72, 0xe9, 0x73, 0x75, 0x6d, 0xe9]), Buffer.from('.md')]), 'latin-1 name') // "résumé.md" in Latin-1
      writeFileSync(join(odd, 'evil\u001b]0;owned\u0007.md'), 'escape sequence in the name')
      writeFileSync(join(odd, 'fine.md'), 'fine')
      const owner = await createUser(database.db, { login: 'bytes', password: 'bytes-password', hashCost: TEST_PASSWORD_COST })
      const report = await importFolder(database.db, { owner, folder: odd, targetSegments: ['b'], maxFileBytes: 1024, parser })
      expect(report.added).toEqual(['kb://users/bytes/b/fine.md'])
      expect(report.failed).toEqual([
        { path: 'r\\xe9sum\\xe9.md', reason: 'name not allowed: it is not valid UTF-8 (rename it on disk)' },
        { path: 'evil\u001b]0;owned\u0007.md', reason: 'name not allowed: invisible or control character U+001B is not allowed in a name' },
      ])
      const printed = formatImportReport(report)
      // eslint-disable-next-line no-control-regex
      expect(printed).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f]/)
      expect(printed).toContain('failed    evil\\u{1b}]0;owned\\u{7}.md')
      expect(printed).toContain('failed    r\\xe9sum\\xe9.md (name not allowed: it is not valid UTF-8')
    } finally {
      rmSync(odd, { recursive: true, force: true })
    }
  })

  it('follows the folder named when it is a symbolic link, and still skips links inside it', async () => {
    const base = mkdtempSync(join(tmpdir(), 'knowagent-import-link-'))
    try {
      mkdirSync(join(base, 'real'))
      writeFileSync(join(base, 'real', 'a.md'), 'a')
      symlinkSync(join(base, 'real', 'a.md'), join(base, 'real', 'inner-link.md'))
      symlinkSync(join(base, 'real'), join(base, 'link'))
      const owner = await createUser(database.db, { login: 'linker', password: 'linker-password', hashCost: TEST_PASSWORD_COST })
      const report = await importFolder(database.db, { owner, folder: join(base, 'link'), targetSegments: ['l'], maxFileBytes: 1024, parser })
      expect(report.added).toEqual(['kb://users/linker/l/a.md'])
      expect(report.skipped).toEqual([{ path: 'inner-link.md', reason: 'symbolic link (not followed)' }])
      expect(report.failed).toEqual([])
    } finally {
      rmSync(base, { recursive: true, force: true })
    }
  })
})
