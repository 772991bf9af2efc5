import { type Kysely } from 'kysely'
import { type Migration, type MigrationProvider, type MigrationResultSet, Migrator } from 'kysely/migration'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { projectPath } from '../../project-root.ts'
import { BUNDLED_MIGRATIONS } from './bundled-migrations.ts'

export const MIGRATIONS_DIR = projectPath('migrations/')

export const MIGRATION_FILE = /^\d{14}_[\w-]+\.ts$/

/**
 * `migrations/*.ts` by file name order; the file name (without extension) is the migration name.
 * In the server bundle the same files are compiled in (bundled-migrations.ts), so that they share
 * the bundle's kysely instead of loading a second copy from node_modules.
 */
const migrationFiles: MigrationProvider = {
  async getMigrations(): Promise<Record<string, Migration>> {
    if (BUNDLED_MIGRATIONS !== undefined) return { ...BUNDLED_MIGRATIONS }
    const files = (await readdir(MIGRATIONS_DIR)).filter((f) => MIGRATION_FILE.test(f)).sort()
    const migrations: Record<string, Migration> = {}
    for (const file of files) {
      const module = (await import(pathToFileURL(join(MIGRATIONS_DIR, file)).href)) as Migration
      migrations[file.replace(/\.ts$/, '')] = module
    }
    return migrations
  },
}

export class MigrationFailed extends Error {
  override readonly name = 'MigrationFailed'
}

/** The names of the migrations this code knows, in the order they apply. */
export async function knownMigrations(): Promise<string[]> {
  return Object.keys(await migrationFiles.getMigrations()).sort()
}

export async function migrateToLatest(db: Kysely<any>): Promise<{ applied: string[] }> {
  return outcome(await new Migrator({ db, provider: migrationFiles }).migrateToLatest())
}

/** Applies the migrations up to `name`, inclusive (a restore: the schema its backup was taken with). */
export async function migrateTo(db: Kysely<any>, name: string): Promise<{ applied: string[] }> {
  return outcome(await new Migrator({ db, provider: migrationFiles }).migrateTo(name))
}

function outcome({ error, results }: MigrationResultSet): { applied: string[] } {
  const failed = results?.find((r) => r.status === 'Error')
  if (error || failed) {
    throw new MigrationFailed(
      `migration ${failed?.migrationName ?? '(unknown)'} failed: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
  return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) }
}
