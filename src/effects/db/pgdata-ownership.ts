// As root, the embedded PostgreSQL runs as the system user `postgres`, and PostgreSQL refuses a
// data directory that user does not own ("data directory … has wrong ownership"). A data dir
// copied as root with plain `cp -r` (or unpacked, or restored by a tool that does not keep owners)
// is owned by root throughout: we hand it back to `postgres`. Anything owned by a third user is not
// ours to take: that is refused with the exact command to run.
import { chmodSync, lchownSync, lstatSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

export interface PgdataOwner {
  readonly uid: number
  readonly gid: number
}

/** Modes PostgreSQL accepts for its data directory (0700, or 0750 with group access). */
const ACCEPTED_MODES = [0o700, 0o750]

/**
 * Gives every entry of `pgdata` owned by root to `owner` and makes the directory's mode one
 * PostgreSQL accepts. Returns how many entries changed hands; throws `refuse(message)` when an
 * entry belongs to another user.
 */
export function fixPgdataOwnership(pgdata: string, owner: PgdataOwner, refuse: (message: string) => Error): number {
  let changed = 0
  const foreign: string[] = []
  const visit = (path: string) => {
    const stat = lstatSync(path, { throwIfNoEntry: false })
    if (!stat) return // gone since its folder was listed
    if (stat.uid !== owner.uid) {
      if (stat.uid === 0) {
        lchownSync(path, owner.uid, owner.gid)
        changed++
      } else if (foreign.length < 3) foreign.push(`${path} (uid ${stat.uid})`)
    }
    if (stat.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name))
  }
  visit(pgdata)
  if (foreign.length) {
    throw refuse(
      `${pgdata} holds files of another user (${foreign.join(', ')}); the embedded PostgreSQL runs as "postgres" and must own all of it. ` +
        `If this is your knowagent data, run: chown -R postgres:postgres ${pgdata} && chmod 700 ${pgdata}`,
    )
  }
  const mode = lstatSync(pgdata).mode & 0o777
  if (!ACCEPTED_MODES.includes(mode)) chmodSync(pgdata, 0o700)
  return changed
}
