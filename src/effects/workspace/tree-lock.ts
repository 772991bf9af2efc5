// One owner's tree changes shape under one lock: a transaction-scoped PostgreSQL advisory lock
// keyed by the owner. Moves, renames and deletes hold it alone; everything that adds nodes (a new
// folder, an upload's files and the folders they need, a compile job's pages) shares it. So a
// move's rewrite of the subtree's paths runs only when no transaction that adds nodes is open,
// and its statements see every node committed before it; nodes added after it see the new paths.
// Row locks alone could not give that: a row inserted after the rewrite's snapshot keeps its old
// path, and two moves that touch each other's subtrees could deadlock.
//
// Take it first in the transaction, before any row lock (a row lock held while waiting for it
// could close a cycle with a move that holds it and waits for that row).
import { sql } from 'kysely'
import type { Db } from '../db/schema.ts'

/** The lock's class (first key): "know" in ASCII, so no other advisory lock collides with it. */
const TREE_LOCK_CLASS = 0x6b6e6f77

/** Shares the owner's tree lock until the transaction ends: nodes may be added, no move or delete runs. Nothing outside a transaction. */
export async function shareTree(db: Db, ownerId: string): Promise<void> {
  if (!db.isTransaction) return
  await sql`select pg_advisory_xact_lock_shared(${TREE_LOCK_CLASS}::int4, hashtext(${ownerId}::text))`.execute(db)
}

/** Holds the owner's tree lock alone until the transaction ends (a move, a rename, a delete). */
export async function holdTree(db: Db, ownerId: string): Promise<void> {
  if (!db.isTransaction) throw new Error('holdTree: a move or delete runs in a transaction')
  await sql`select pg_advisory_xact_lock(${TREE_LOCK_CLASS}::int4, hashtext(${ownerId}::text))`.execute(db)
}
