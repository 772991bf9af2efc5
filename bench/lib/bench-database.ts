// A fresh database for a bench run in an external PostgreSQL server (`--database-url`, its admin
// URL): made anew (any left by an earlier run of the same name is dropped first), dropped after.
import pg from 'pg'

export async function createBenchDatabase(adminUrl: string, name: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const run = async (statements: ReadonlyArray<string>) => {
    const admin = new pg.Client({ connectionString: adminUrl })
    await admin.connect()
    try {
      for (const statement of statements) await admin.query(statement)
    } finally {
      await admin.end()
    }
  }
  await run([`drop database if exists ${name} with (force)`, `create database ${name}`])
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => run([`drop database if exists ${name} with (force)`]) }
}
