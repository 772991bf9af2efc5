import { type Kysely } from 'kysely'
import { type Migration, type MigrationProvider, type MigrationResultSet, Migrator } from 'kysely/migration'
import { readdir } from 'node:fs/promises'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { join } from 'node:path'

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../migrations/', import.meta.url))

/** Loads `migrations/*.ts` by file name order; the file name (without extension) is the migration name. */
class FolderMigrationProvider implements MigrationProvider {
  private readonly folder: string
  constructor(folder: string) {
    this.folder = folder
  }
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(this.folder)).filter((f) => /^\d{14}_[\w-]+\.ts$/.test(f)).sort()
    const migrations: Record<string, Migration> = {}
    for (const file of files) {
      const module = (await import(pathToFileURL(join(this.folder, file)).href)) as Migration
      migrations[file.replace(/\.ts$/, '')] = module
    }
    return migrations
  }
}

export class MigrationFailed extends Error {
  override readonly name = 'MigrationFailed'
}

export async function migrateToLatest(db: Kysely<any>): Promise<{ applied: string[] }> {
  const migrator = new Migrator({ db, provider: new FolderMigrationProvider(MIGRATIONS_DIR) })
  const { error, results }: MigrationResultSet = await migrator.migrateToLatest()
  const failed = results?.find((r) => r.status === 'Error')
  if (error || failed) {
    throw new MigrationFailed(
      `migration ${failed?.migrationName ?? '(unknown)'} failed: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
  return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) }
}
