// File management on real PostgreSQL: new folder, rename and move rewriting the whole subtree's
// paths in one transaction, refusals (root, into itself, taken names, the name rule), and a folder
// delete that a concurrent reader sees whole or not at all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import pg from 'pg'
import { createUser } from '../../src/effects/auth/users.ts'
import { createDirectory, listMoveDestinations, moveNode, subtreeCounts } from '../../src/effects/workspace/manage.ts'
import { deleteFromTrash, moveToTrash } from '../../src/effects/workspace/trash.ts'
import { findNode, getNode } from '../../src/effects/workspace/store.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { readCurrent } from '../../src/effects/workspace/file-contents.ts'
import { InvalidName, NodeConflict, NodeNotFound } from '../../src/effects/workspace/workspace-errors.ts'
import { blockedOnALock, openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

const pathFor = (uri: string) => uri.replace(/^kb:\/\/users\/[^/]+\//, '').split('/')
const put = (db: TestDatabase['db'], owner: Owner, segments: string[], text: string) => putText(db, { owner, segments, text, mime: 'text/plain' })

describe('workspace management', () => {
  let database: TestDatabase
  let owner: Owner
  beforeAll(async () => {
    database = await openTestDatabase()
    owner = await createUser(database.db, { login: 'mona', password: 'correct horse', hashCost: TEST_PASSWORD_COST })
  })
  afterAll(async () => {
    await database?.close()
  })

  const paths = async () =>
    (await database.db.selectFrom('nodes').select('path').where('owner_id', '=', owner.id).orderBy('path').execute()).map((row) => row.path)

  it('creates a folder once; the name rule and taken names are refused', async () => {
    const root = await getNode(database.db, owner, [])
    const made = await createDirectory(database.db, { owner, parent: root, name: 'Projects' })
    expect(made).toMatchObject({ kind: 'directory', uri: 'kb://users/mona/Projects/', parentId: root.id })
    await expect(createDirectory(database.db, { owner, parent: root, name: 'Projects' })).rejects.toBeInstanceOf(NodeConflict)
    for (const bad of ['a/b', '..', ' x', 'bidi\u202Efdp.exe', '']) {
      await expect(createDirectory(database.db, { owner, parent: root, name: bad })).rejects.toBeInstanceOf(InvalidName)
    }
    const decomposed = 'Cafe\u0301'
    expect((await createDirectory(database.db, { owner, parent: made, name: decomposed })).name).toBe('Caf\u00e9')
    const file = (await put(database.db, owner, ['Projects', 'f.txt'], 'x')).node
    await expect(createDirectory(database.db, { owner, parent: file, name: 'sub' })).rejects.toBeInstanceOf(NodeConflict)
  })

  it('moves a folder with its whole subtree, keeps file content and job references, and renames in place', async () => {
    await put(database.db, owner, ['src', 'deep', 'a.md'], 'alpha')
    await put(database.db, owner, ['src', 'deep', 'more', 'b.md'], 'bravo')
    await put(database.db, owner, ['src', 'c.md'], 'charlie')
    const dest = await createDirectory(database.db, { owner, parent: await getNode(database.db, owner, []), name: 'dest' })
    const deep = await getNode(database.db, owner, ['src', 'deep'])
    const moved = await moveNode(database.db, { owner, node: deep, destination: dest })
    expect(moved).toMatchObject({ from: 'kb://users/mona/src/deep/', moved: 4 })
    expect(moved.node).toMatchObject({ uri: 'kb://users/mona/dest/deep/', parentId: dest.id, id: deep.id })
    expect((await paths()).filter((p) => p.startsWith('dest') || p.startsWith('src'))).toEqual([
      'dest',
      'dest/deep',
      'dest/deep/a.md',
      'dest/deep/more',
      'dest/deep/more/b.md',
      'src',
      'src/c.md',
    ])
    const b = await getNode(database.db, owner, ['dest', 'deep', 'more', 'b.md'])
    expect((await readCurrent(database.db, owner, b)).body).toBe('bravo')
    expect(b.parentId).toBe((await getNode(database.db, owner, ['dest', 'deep', 'more'])).id)
    const job = await database.db.selectFrom('jobs').select(['uri']).where('node_id', '=', b.id).executeTakeFirstOrThrow()
    expect(job.uri).toBe('kb://users/mona/dest/deep/more/b.md')
    // A compile job's file list follows the file too (its row keeps the node id).
    const compileJob = crypto.randomUUID()
    await database.db.insertInto('jobs').values({ id: compileJob, owner_id: owner.id, uri: 'kb://users/mona/dest/deep/more/', kind: 'compile', status: 'succeeded' }).execute()
    await database.db.insertInto('compile_job_files').values({ job_id: compileJob, position: 0, owner_id: owner.id, node_id: b.id, uri: 'kb://users/mona/dest/deep/more/b.md', active: false }).execute()

    const renamed = await moveNode(database.db, { owner, node: moved.node, destination: dest, name: 'shallow' })
    expect(renamed.node.uri).toBe('kb://users/mona/dest/shallow/')
    expect(await findNode(database.db, owner, ['dest', 'shallow', 'more', 'b.md'])).toBeDefined()
    expect(await findNode(database.db, owner, ['dest', 'deep'])).toBeUndefined()
    const listed = await database.db.selectFrom('compile_job_files').select(['uri', 'node_id']).where('job_id', '=', compileJob).executeTakeFirstOrThrow()
    expect(listed).toEqual({ uri: 'kb://users/mona/dest/shallow/more/b.md', node_id: b.id })
    const same = await moveNode(database.db, { owner, node: renamed.node, destination: dest })
    expect(same.moved).toBe(0)
  })

  it('refuses a move into itself or below itself, onto a file, over a taken name, and of the root', async () => {
    const shallow = await getNode(database.db, owner, ['dest', 'shallow'])
    const more = await getNode(database.db, owner, ['dest', 'shallow', 'more'])
    const before = await paths()
    await expect(moveNode(database.db, { owner, node: shallow, destination: shallow })).rejects.toThrow(/into itself or below itself/)
    await expect(moveNode(database.db, { owner, node: shallow, destination: more })).rejects.toThrow(/into itself or below itself/)
    const file = await getNode(database.db, owner, ['src', 'c.md'])
    await expect(moveNode(database.db, { owner, node: shallow, destination: file })).rejects.toThrow(/goes into a folder/)
    await put(database.db, owner, ['src', 'shallow'], 'a file with the folder’s name')
    await expect(moveNode(database.db, { owner, node: shallow, destination: await getNode(database.db, owner, ['src']) })).rejects.toBeInstanceOf(NodeConflict)
    await expect(moveNode(database.db, { owner, node: shallow, destination: shallow, name: 'x/y' })).rejects.toBeInstanceOf(InvalidName)
    const root = await getNode(database.db, owner, [])
    await expect(moveNode(database.db, { owner, node: root, destination: shallow })).rejects.toThrow(/root folder cannot be moved/)
    expect(await paths()).toEqual([...before, 'src/shallow'].sort())
  })

  it('a stale node (moved or deleted since it was read) is not found, never moved from its old place', async () => {
    const c = await getNode(database.db, owner, ['src', 'c.md'])
    const dest = await getNode(database.db, owner, ['dest'])
    await moveNode(database.db, { owner, node: c, destination: dest })
    const again = await moveNode(database.db, { owner, node: c, destination: await getNode(database.db, owner, ['src']) })
    expect(again.node.uri).toBe('kb://users/mona/src/c.md') // same id: the node moves from wherever it is now
    await moveToTrash(database.db, { owner, node: again.node })
    await expect(moveNode(database.db, { owner, node: c, destination: dest })).rejects.toBeInstanceOf(NodeNotFound)
  })

  it('lists move destinations without the node and what lies below it', async () => {
    const shallow = await getNode(database.db, owner, ['dest', 'shallow'])
    const { folders } = await listMoveDestinations(database.db, { owner, exclude: shallow, limit: 100 })
    const uris = folders.map((folder) => folder.uri)
    expect(uris).toContain('kb://users/mona/')
    expect(uris).toContain('kb://users/mona/dest/')
    expect(uris.some((uri) => uri.startsWith('kb://users/mona/dest/shallow/'))).toBe(false)
    expect(folders.find((folder) => folder.uri === 'kb://users/mona/dest/')?.depth).toBe(1)
  })

  it('deletes a folder and its subtree in one statement: a concurrent reader sees all of it, then none; emptying the Trash deletes the versions', async () => {
    await put(database.db, owner, ['doomed', 'one.md'], '1')
    await put(database.db, owner, ['doomed', 'sub', 'two.md'], '2')
    await put(database.db, owner, ['doomed', 'sub', 'deeper', 'three.md'], '3')
    const doomed = await getNode(database.db, owner, ['doomed'])
    expect(await subtreeCounts(database.db, owner, doomed)).toEqual({ files: 3, directories: 2 })
    const deepest = await getNode(database.db, owner, ['doomed', 'sub', 'deeper', 'three.md'])
    const countBelow = async (client: pg.Client) =>
      Number((await client.query(`select count(*) as n from nodes where owner_id = $1 and (path = 'doomed' or path like 'doomed/%')`, [owner.id])).rows[0].n)

    // A transaction holds a lock on the deepest file: the delete must wait for it, and meanwhile a
    // third connection still sees the whole subtree (nothing half-deleted is ever visible).
    const holder = new pg.Client({ connectionString: database.url })
    const observer = new pg.Client({ connectionString: database.url })
    await Promise.all([holder.connect(), observer.connect()])
    try {
      await holder.query('begin')
      await holder.query('select id from nodes where id = $1 for update', [deepest.id])
      const deleting = moveToTrash(database.db, { owner, node: doomed })
      await blockedOnALock(observer)
      expect(await countBelow(observer)).toBe(6)
      await holder.query('commit')
      expect(await deleting).toEqual({ summaries: 0, uri: 'kb://users/mona/doomed/', files: 3, directories: 2, trash: { id: expect.any(String), purgeAt: expect.any(Date) } })
      expect(await countBelow(observer)).toBe(0)
      const versions = async () => Number((await observer.query('select count(*) as n from file_versions where node_id = $1', [deepest.id])).rows[0].n)
      expect(await versions()).toBe(1) // kept in the Trash
      await deleteFromTrash(database.db, { owner, id: (await deleting).trash.id })
      expect(await versions()).toBe(0)
      const jobs = await observer.query('select node_id from jobs where uri = $1', ['kb://users/mona/doomed/sub/deeper/three.md'])
      expect(jobs.rows).toEqual([{ node_id: null }]) // the parse job stays as history, without its node
    } finally {
      await Promise.all([holder.end(), observer.end()])
    }
    await expect(moveToTrash(database.db, { owner, node: await getNode(database.db, owner, []) })).rejects.toThrow(/root folder cannot be deleted/)
  })

  it('a put into a folder that is being moved waits for the move and never lands under a stale path', async () => {
    const box = await createDirectory(database.db, { owner, parent: await getNode(database.db, owner, []), name: 'box' })
    const target = await createDirectory(database.db, { owner, parent: await getNode(database.db, owner, []), name: 'target' })
    const locker = new pg.Client({ connectionString: database.url })
    await locker.connect()
    try {
      // The move's lock is held (as the move would hold it) while a put into box/ starts.
      await locker.query('begin')
      await locker.query('select id from nodes where id = $1 for update', [box.id])
      const putting = put(database.db, owner, ['box', 'late.md'], 'late')
      await blockedOnALock(locker)
      await locker.query(`update nodes set path = 'target/box', parent_id = $2, name = 'box' where id = $1`, [box.id, target.id])
      await locker.query('commit')
      await putting
    } finally {
      await locker.end()
    }
    // The put waited for the move; the old box/ had gone, so it made a new box/ for the file.
    const late = await getNode(database.db, owner, ['box', 'late.md'])
    const parent = await getNode(database.db, owner, ['box'])
    expect(late.parentId).toBe(parent.id)
    expect(parent.id).not.toBe(box.id)
  })
  /** Nodes of `login`'s tree whose path is not their parent's path and their name: none, whatever ran. */
  const strayPaths = async (user: Owner) =>
    (
      await sql<{ path: string }>`
        select child.path from nodes child left join nodes parent on parent.id = child.parent_id
        where child.owner_id = ${user.id} and child.path <> ''
          and (parent.id is null or child.path <> case when parent.path = '' then child.name else parent.path || '/' || child.name end)`.execute(database.db)
    ).rows.map((row) => row.path)

  it('moves, new folders and renames of the folders above them, run together, leave every path true and never deadlock', async () => {
    const racer = await createUser(database.db, { login: 'racer', password: 'correct horse', hashCost: TEST_PASSWORD_COST })
    const root = await getNode(database.db, racer, [])
    const failures: unknown[] = []
    const settle = (work: Promise<unknown>) => work.catch((error: unknown) => void (error instanceof NodeConflict || error instanceof NodeNotFound || failures.push(error)))
    for (let round = 0; round < 8; round++) {
      const p = await createDirectory(database.db, { owner: racer, parent: root, name: `P${round}` })
      const c = await createDirectory(database.db, { owner: racer, parent: p, name: 'C' })
      const x = await createDirectory(database.db, { owner: racer, parent: root, name: `X${round}` })
      const [a, b, d] = await Promise.all(['A', 'B', 'D'].map((name) => createDirectory(database.db, { owner: racer, parent: root, name: `${name}${round}` })))
      await Promise.all([
        settle(moveNode(database.db, { owner: racer, node: x, destination: c })), // into a folder whose parent is renamed meanwhile
        settle(createDirectory(database.db, { owner: racer, parent: c, name: 'new' })),
        settle(moveNode(database.db, { owner: racer, node: p, destination: root, name: `Q${round}` })),
        // Crossing moves: each either happens or is refused (a cycle), never a deadlock.
        settle(moveNode(database.db, { owner: racer, node: a!, destination: b! })),
        settle(moveNode(database.db, { owner: racer, node: b!, destination: d! })),
        settle(moveNode(database.db, { owner: racer, node: d!, destination: a! })),
      ])
      expect(failures).toEqual([])
      expect(await strayPaths(racer)).toEqual([])
    }
    expect(await findNode(database.db, racer, ['Q7', 'C', 'X7'])).toMatchObject({ uri: 'kb://users/racer/Q7/C/X7/' })
    expect(await findNode(database.db, racer, ['Q7', 'C', 'new'])).toMatchObject({ uri: 'kb://users/racer/Q7/C/new/' })
  })

  describe('nothing is made where no URI can name it (at most 64 levels, URIs at most 4,096 characters)', () => {
    const long = (letter: string) => letter.repeat(250)

    it('a move or rename that would take a node of the subtree past either limit is refused, and nothing moves', async () => {
      // 16 levels of 250-character names: the deepest file's URI is ~4,050 characters.
      const chain = Array.from({ length: 16 }, (_, i) => long(String.fromCharCode(97 + i)))
      await put(database.db, owner, ['limits', ...chain, 'leaf.md'], 'leaf')
      const top = await getNode(database.db, owner, ['limits', chain[0]!])
      const elsewhere = await createDirectory(database.db, { owner, parent: await getNode(database.db, owner, []), name: long('z') })
      const before = await paths()
      await expect(moveNode(database.db, { owner, node: top, destination: elsewhere })).rejects.toThrow(/URI longer than 4096 characters/)
      // A rename to a longer name (through `?`, which the URI escapes as three characters) too.
      await expect(moveNode(database.db, { owner, node: top, destination: await getNode(database.db, owner, ['limits']), name: '?'.repeat(200) })).rejects.toThrow(/URI longer than 4096/)
      expect(await paths()).toEqual(before)
      // A shorter name is fine.
      expect((await moveNode(database.db, { owner, node: top, destination: await getNode(database.db, owner, ['limits']), name: 'a' })).moved).toBe(17)

      const deep = Array.from({ length: 40 }, (_, i) => `d${i}`)
      await put(database.db, owner, ['depth', ...deep, 'f.md'], 'f')
      const deeper = await put(database.db, owner, ['depth2', ...Array.from({ length: 30 }, (_, i) => `e${i}`), 'g.md'], 'g')
      const target = await getNode(database.db, owner, pathFor(deeper.node.uri).slice(0, -1))
      await expect(moveNode(database.db, { owner, node: await getNode(database.db, owner, ['depth']), destination: target })).rejects.toThrow(/deeper than 64 levels/)
    })

    it('an upload or a new folder past either limit is an invalid URI', async () => {
      const chain = Array.from({ length: 16 }, (_, i) => long(String.fromCharCode(97 + i)))
      await put(database.db, owner, ['limits2', ...chain, 'ok.md'], 'ok')
      await expect(put(database.db, owner, ['limits2', ...chain, long('x'), 'no.md'], 'no')).rejects.toMatchObject({ _tag: 'InvalidUri', reason: expect.stringContaining('longer than 4096') })
      const parent = await getNode(database.db, owner, ['limits2', ...chain])
      await expect(createDirectory(database.db, { owner, parent, name: long('y') })).rejects.toMatchObject({ _tag: 'InvalidUri' })
      await expect(put(database.db, owner, Array.from({ length: 65 }, (_, i) => `l${i}`), 'deep')).rejects.toMatchObject({ _tag: 'InvalidUri', reason: 'deeper than 64 levels' })
      expect(await findNode(database.db, owner, ['l0'])).toBeUndefined()
    })
  })
})
