// One-time adoption of the `bl` CLI's login (`~/.bailian/config.json`, written by `bl auth login`):
// a user for whom the API key or the workspace id is configured nowhere gets it from that file once.
// `seeded_fields` records each field consumed — or found already managed elsewhere — so a value the
// user later clears is never filled back. The file's default profile is at the top level:
// `{"api_key": "sk-…", "workspace_id": "llm-…"}`; anything else in it is ignored.
import { readFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { isValidWorkspaceId } from './bailian-endpoint.ts'

export type SeedField = 'apiKey' | 'workspaceId'

export interface BlCliConfig {
  readonly apiKey?: string | undefined
  readonly workspaceId?: string | undefined
}

export function defaultBlConfigPath(): string {
  return join(homedir(), '.bailian', 'config.json')
}

/** Best-effort: a malformed file reads as empty, like one that does not exist. */
export function parseBlCliConfig(text: string): BlCliConfig {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return {}
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {}
  const record = parsed as Record<string, unknown>
  const text_ = (value: unknown) => (typeof value === 'string' && value.trim() !== '' && value.length <= 512 ? value.trim() : undefined)
  const apiKey = text_(record['api_key'])
  const workspaceId = text_(record['workspace_id'])
  return {
    ...(apiKey !== undefined && !/\s/.test(apiKey) ? { apiKey } : {}),
    ...(workspaceId !== undefined && isValidWorkspaceId(workspaceId) ? { workspaceId } : {}),
  }
}

export async function readBlCliConfig(path: string): Promise<BlCliConfig> {
  try {
    return parseBlCliConfig(await readFile(path, 'utf8'))
  } catch {
    return {}
  }
}

export interface BlImportPlan {
  readonly apiKey: string | undefined
  readonly workspaceId: string | undefined
  /** Fields to add to `seeded_fields`. */
  readonly mark: ReadonlyArray<SeedField>
}

/**
 * Per field: already consumed → nothing; configured somewhere → mark it (user-managed, never
 * import later); else, if the file has it → import it and mark it; else leave it unmarked, so a
 * later `bl auth login` can still seed it.
 */
export function planBlImport({
  seeded,
  configured,
  file,
}: {
  readonly seeded: ReadonlyArray<string>
  readonly configured: Readonly<Record<SeedField, boolean>>
  readonly file: BlCliConfig
}): BlImportPlan {
  const mark: SeedField[] = []
  const take = (field: SeedField): string | undefined => {
    if (seeded.includes(field)) return undefined
    if (configured[field]) {
      mark.push(field)
      return undefined
    }
    const value = file[field]
    if (value !== undefined) mark.push(field)
    return value
  }
  const apiKey = take('apiKey')
  const workspaceId = take('workspaceId')
  return { apiKey, workspaceId, mark }
}
