// The checkout's root directory, for the files the server reads at run time (migrations, samples,
// skills, static assets, the parser process's entry). This module sits one level below the root,
// and so does the server bundle (`.build/server.mjs`, bin/server-bundle.mjs) into which it is
// compiled: `../` from either is the root. Paths elsewhere are built from here, never from the
// importing module's own URL, which inside the bundle would be the bundle's.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export const PROJECT_ROOT_URL = new URL('../', import.meta.url)

/** An absolute path below the checkout's root (`projectPath('migrations')`). */
export const projectPath = (relative: string): string => fileURLToPath(new URL(relative, PROJECT_ROOT_URL))

/** package.json's version: what `knowagent --version` prints and a backup records. */
export const packageVersion = (): string => (JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version
