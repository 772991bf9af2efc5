// The migrations compiled into the server bundle. Run from the sources there are none, and
// migrate.ts reads migrations/ itself; bin/server-bundle.mjs builds the bundle with this module
// replaced by one that imports every file of migrations/ statically, keyed by its name.
import type { Migration } from 'kysely/migration'

export const BUNDLED_MIGRATIONS: Readonly<Record<string, Migration>> | undefined = undefined
