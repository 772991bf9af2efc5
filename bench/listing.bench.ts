// What a folder's listing costs in a large workspace: the `ls` tool's one statement and a listing
// page (the workspace page, the tree), on an embedded PostgreSQL of its own, with one user's
// nodes spread as a team's would be plus one very large folder:
//
//   node bin/run-ts.mjs bench/listing.bench.ts [--folders 200] [--per-folder 150] [--big 20000] [--calls 50]
//
// Prints the median and p95 ms per call (after a warm-up long enough for the named statements'
// generic plans) for a small folder, the large folder's first and last pages, and the root.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import { createUser } from '../src/effects/auth/users.ts'
import { migrateOnOwnConnection, openDatabase } from '../src/effects/db/database.ts'
import { listChildren, listingAtPath } from '../src/effects/workspace/folder-listing.ts'
import { findNode } from '../src/effects/workspace/store.ts'
import { fillFolder, putText } from '../tests/support/text-file.ts'

const { values } = parseArgs({
  options: {
    folders: { type: 'string', default: '200' },
    'per-folder': { type: 'string', default: '150' },
    big: { type: 'string', default: '20000' },
    calls: { type: 'string', default: '50' },
  },
})
const FOLDERS = Number(values.folders)
const PER_FOLDER = Number(values['per-folder'])
const BIG = Number(values.big)
const CALLS = Number(values.calls)

const dataDir = mkdtempSync(join(tmpdir(), 'knowagent-listing-bench-'))
const database = await openDatabase({ databaseUrl: undefined, dataDir })
try {
  await migrateOnOwnConnection(database)
  const { db } = database
  const owner = await createUser(db, { login: 'bench', password: 'a-long-password', hashCost: { N: 1 << 10, r: 8, p: 1 } })
  for (let f = 0; f < FOLDERS; f++) await fillFolder(db, { owner, folder: ['teams', `t${String(f).padStart(4, '0')}`], count: PER_FOLDER })
  await fillFolder(db, { owner, folder: ['archive'], count: BIG })
  for (const name of ['a.md', 'b.md', 'c.md', 'd.md', 'e.md']) await putText(db, { owner, segments: ['notes', name], text: name })
  await sql`analyze`.execute(db)
  const total = Number((await sql<{ n: string }>`select count(*) as n from nodes`.execute(db)).rows[0]!.n)

  const measure = async (label: string, call: () => Promise<unknown>) => {
    for (let i = 0; i < 10; i++) await call() // past the custom plans of a named statement (5)
    const times: number[] = []
    for (let i = 0; i < CALLS; i++) {
      const started = performance.now()
      await call()
      times.push(performance.now() - started)
    }
    times.sort((a, b) => a - b)
    const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(2)
    console.log(`| ${label.padEnd(44)} | ${at(0.5).padStart(8)} | ${at(0.95).padStart(8)} |`)
  }
  const archive = (await findNode(db, owner, ['archive']))!
  const root = (await findNode(db, owner, []))!
  console.log(`${total.toLocaleString('en')} nodes: ${FOLDERS} folders of ${PER_FOLDER} files, one of ${BIG}, one of 5; ${CALLS} calls each\n`)
  console.log(`| ${'call'.padEnd(44)} | p50 ms   | p95 ms   |`)
  console.log(`|${'-'.repeat(46)}|---------:|---------:|`)
  await measure('ls notes/ (5 files)', () => listingAtPath(db, { owner, segments: ['notes'], offset: 0, limit: 50 }))
  await measure(`ls teams/ (${FOLDERS} folders)`, () => listingAtPath(db, { owner, segments: ['teams'], offset: 0, limit: 50 }))
  await measure(`ls archive/ (${BIG} files), first page`, () => listingAtPath(db, { owner, segments: ['archive'], offset: 0, limit: 50 }))
  await measure(`ls archive/, last page`, () => listingAtPath(db, { owner, segments: ['archive'], offset: BIG - 10, limit: 50 }))
  await measure(`listing page of archive/, 500 rows`, () => listChildren(db, { owner, parent: archive, offset: 0, limit: 500 }))
  await measure('listing page of the root', () => listChildren(db, { owner, parent: root, offset: 0, limit: 500 }))
} finally {
  await database.close()
  rmSync(dataDir, { recursive: true, force: true })
}
