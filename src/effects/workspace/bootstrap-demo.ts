// The embedded default's first start: a `demo` user and the sample corpus in kb://users/demo/samples/.
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import { projectPath } from '../../project-root.ts'
import { generatePassword } from '../auth/passwords.ts'
import { countUsers, createUser } from '../auth/users.ts'
import { importFolder, type ImportReport } from './import-folder.ts'
import type { DocumentParser } from './parse/document-parser.ts'

export const SAMPLES_DIR = projectPath('samples/')

export interface DemoBootstrap {
  readonly created: boolean
  /** Only when it was generated just now: printed once, never stored in clear. */
  readonly generatedPassword: string | undefined
  readonly report: ImportReport | undefined
}

/** On an empty database only: creates `demo` and imports the samples. */
export async function bootstrapDemo(
  db: Kysely<DB>,
  { demoPassword, maxFileBytes, parser }: { demoPassword: string | undefined; maxFileBytes: number; parser: DocumentParser },
): Promise<DemoBootstrap> {
  if ((await countUsers(db)) > 0) return { created: false, generatedPassword: undefined, report: undefined }
  const password = demoPassword ?? generatePassword()
  const user = await createUser(db, { login: 'demo', password })
  const report = await importFolder(db, { owner: user, folder: SAMPLES_DIR, targetSegments: ['samples'], maxFileBytes, parser })
  return { created: true, generatedPassword: demoPassword ? undefined : password, report }
}
