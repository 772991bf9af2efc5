// Compile skills (SPEC §8): a SKILL.md with YAML front matter (`name`, `description` — the single
// source of both) and a body of instructions the model sees (without the front matter). Bundled
// compile skills ship in skills/*/SKILL.md marked `use: compile` (the folder also holds skills for
// the agent, e.g. bailian-kb, which are not compile skills); a person keeps their own in
// kb://me/.skills/<name>/SKILL.md, read only for that person (a user's skill never reaches another
// user's jobs).
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import * as Data from 'effect/Data'
import * as Schema from 'effect/Schema'
import { parse as parseYaml } from 'yaml'
import type { WorkspaceNode } from '../workspace/store.ts'
import type { Db, Owner } from '../db/schema.ts'
import { findNode } from '../workspace/store.ts'
import { listChildren } from '../workspace/folder-listing.ts'
import { currentVersionKeys, readSmallVersionBodies } from '../workspace/file-contents.ts'
import { formatKbUri } from '../workspace/uri.ts'
import { projectPath } from '../../project-root.ts'

export const BUNDLED_SKILLS_DIR = projectPath('skills/')
/** Where a person's own skills live, below their root. */
export const USER_SKILLS_DIR = '.skills'
export const SKILL_FILE = 'SKILL.md'
export const USER_SKILL_PREFIX = 'user:'
/** The compile skill of a request that names none (when it is bundled). */
export const DEFAULT_SKILL = 'wiki-default'
const MAX_FRONT_MATTER_CHARS = 4_000
export const MAX_SKILL_BODY_CHARS = 16_000
/** How many of a person's skill folders one listing reads (a listing runs on every options call and compile form). */
export const MAX_USER_SKILLS = 100
/**
 * How deep the front matter may nest, counted by `frontMatterNesting` (an upper bound). Front matter
 * is flat `key: value` lines; the YAML parser recurses per level and overflows its stack at ~2,000
 * levels after ~12 ms of work on the event loop (issue 34), so deeper text is refused unparsed.
 */
export const MAX_FRONT_MATTER_NESTING = 64
/** Parsed user skills kept per process, by stored version (id and text length: `currentVersionKeys`). */
const PARSED_SKILL_CACHE_SIZE = 2_000
/** No valid SKILL.md is longer (front matter, body, the two `---` lines; 4 bytes a character at most): a larger one is refused unread. */
const MAX_SKILL_FILE_BYTES = 4 * (MAX_FRONT_MATTER_CHARS + MAX_SKILL_BODY_CHARS + 16)

export const SKILL_NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,63}$/

export class SkillInvalid extends Data.TaggedError('SkillInvalid')<{ readonly where: string; readonly message: string }> {}

const FrontMatter = Schema.Struct({
  name: Schema.String.check(Schema.isPattern(SKILL_NAME_PATTERN, { message: 'name is 1–64 lowercase letters, digits or "-"' })),
  description: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(1024)),
  /** `compile` marks a bundled compile skill. */
  use: Schema.optional(Schema.String),
})

export interface Skill {
  /** How a request names it: `wiki-default` (bundled) or `user:my-skill` (the caller's own). */
  readonly ref: string
  readonly source: 'bundled' | 'user'
  readonly name: string
  readonly description: string
  /** The instructions the model sees (front matter stripped). */
  readonly body: string
  readonly sha256: string
  /** For a user's skill: its SKILL.md. */
  readonly uri?: string | undefined
}

/** Splits and validates a SKILL.md; the body is everything after the closing `---`. */
export function parseSkillFile({ text, where }: { readonly text: string; readonly where: string }): { name: string; description: string; body: string; use: string | undefined } | SkillInvalid {
  const normalised = text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n')
  const match = /^---\n([\s\S]*?)\n---(?:\n|$)([\s\S]*)$/.exec(normalised)
  if (!match) return new SkillInvalid({ where, message: 'a SKILL.md starts with YAML front matter between two "---" lines' })
  const [, yamlText, rest] = match
  if (yamlText!.length > MAX_FRONT_MATTER_CHARS) return new SkillInvalid({ where, message: `the front matter is longer than ${MAX_FRONT_MATTER_CHARS} characters` })
  const nesting = frontMatterNesting(yamlText!)
  if (nesting > MAX_FRONT_MATTER_NESTING)
    return new SkillInvalid({ where, message: `the front matter nests too deeply (up to ${nesting} levels, at most ${MAX_FRONT_MATTER_NESTING}): it is plain "key: value" lines` })
  let data: unknown
  try {
    data = parseYaml(yamlText!, { maxAliasCount: 0, uniqueKeys: true })
  } catch (error) {
    return new SkillInvalid({ where, message: `the front matter is not valid YAML: ${(error as Error).message.split('\n')[0]}` })
  }
  let fields: typeof FrontMatter.Type
  try {
    fields = Schema.decodeUnknownSync(FrontMatter)(data, { errors: 'all', onExcessProperty: 'ignore' })
  } catch (error) {
    return new SkillInvalid({ where, message: `the front matter needs "name" and "description": ${(error as Error).message.replace(/\n\s*/g, ' ')}` })
  }
  const body = rest!.trim()
  if (body === '') return new SkillInvalid({ where, message: 'the skill has no instructions after its front matter' })
  if (body.length > MAX_SKILL_BODY_CHARS) return new SkillInvalid({ where, message: `the instructions are longer than ${MAX_SKILL_BODY_CHARS} characters` })
  return { name: fields.name, description: fields.description.trim(), body, use: fields.use }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/**
 * An upper bound of how deeply YAML text nests, in one pass and without parsing it. Flow
 * collections: every `[` or `{` counts, wherever it stands (quotes are not trusted to hide one,
 * since telling a quote from an apostrophe would take the parser this guards). Block collections:
 * a line's own `- `, `? ` and `: ` indicators before its content, plus twice its indentation (a
 * nested block needs more indentation than its parent, or at least a new indicator).
 */
export function frontMatterNesting(yamlText: string): number {
  let openers = 0
  let deepestLine = 0
  let lineStart = true
  let indent = 0
  let indicators = 0
  for (let i = 0; i < yamlText.length; i++) {
    const c = yamlText.charCodeAt(i)
    if (c === 0x5b /* [ */ || c === 0x7b /* { */) openers++
    if (c === 0x0a) {
      lineStart = true
      indent = 0
      indicators = 0
      continue
    }
    if (!lineStart) continue
    const next = yamlText.charCodeAt(i + 1)
    if (c === 0x20 /* space */ && indicators === 0) indent++
    else if (c === 0x20) continue
    else if ((c === 0x2d /* - */ || c === 0x3f /* ? */ || c === 0x3a /* : */) && (Number.isNaN(next) || next === 0x20 || next === 0x0a)) indicators++
    else lineStart = false
    deepestLine = Math.max(deepestLine, 2 * indent + indicators)
  }
  return openers + deepestLine
}

type ParsedSkillFile = Exclude<ReturnType<typeof parseSkillFile>, SkillInvalid> | { readonly invalid: string }

/** Parsed user skills by version key, least recently used first (a Map keeps insertion order). */
const parsedSkills = new Map<string, ParsedSkillFile>()

function rememberParsedSkill(versionId: string, parsed: ParsedSkillFile): void {
  parsedSkills.set(versionId, parsed)
  if (parsedSkills.size > PARSED_SKILL_CACHE_SIZE) parsedSkills.delete(parsedSkills.keys().next().value!)
}

function recallParsedSkill(versionId: string): ParsedSkillFile | undefined {
  const parsed = parsedSkills.get(versionId)
  if (parsed !== undefined) {
    parsedSkills.delete(versionId)
    parsedSkills.set(versionId, parsed)
  }
  return parsed
}

/** Lets other requests in between the skills a listing parses: one person's listing never holds the event loop for all of them. */
const yieldToOtherRequests = () => new Promise<void>((resolve) => setImmediate(resolve))

/** The bundled compile skills (`use: compile`); an invalid one is an operator error that stops start-up. */
export function loadBundledSkills(dir: string = BUNDLED_SKILLS_DIR): ReadonlyArray<Skill> {
  if (!existsSync(dir)) return []
  const skills: Skill[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name, SKILL_FILE)
    if (!existsSync(path)) continue
    const parsed = parseSkillFile({ text: readFileSync(path, 'utf8'), where: path })
    if (parsed instanceof SkillInvalid) throw new Error(`invalid bundled skill ${path}: ${parsed.message}`)
    if (parsed.use !== 'compile') continue
    if (skills.some((skill) => skill.name === parsed.name)) throw new Error(`two bundled compile skills are named "${parsed.name}"`)
    skills.push({ ref: parsed.name, source: 'bundled', name: parsed.name, description: parsed.description, body: parsed.body, sha256: sha256(parsed.body) })
  }
  return skills
}

export interface UserSkillListing {
  readonly skills: ReadonlyArray<Skill>
  /** SKILL.md files that could not be read, with the reason (shown in the form). */
  readonly invalid: ReadonlyArray<{ readonly uri: string; readonly message: string }>
}

/** The caller's own skills: kb://me/.skills/<dir>/SKILL.md, read for `owner` only. */
export async function listUserSkills(db: Db, owner: Owner): Promise<UserSkillListing> {
  const root = await findNode(db, owner, [USER_SKILLS_DIR])
  if (!root || root.kind !== 'directory') return { skills: [], invalid: [] }
  const directories = (await listChildren(db, { owner, parent: root, offset: 0, limit: MAX_USER_SKILLS })).entries.filter((node) => node.kind === 'directory')
  const files: WorkspaceNode[] = []
  for (const directory of directories) {
    const file = await findNode(db, owner, [USER_SKILLS_DIR, directory.name, SKILL_FILE])
    if (file?.kind === 'file') files.push(file)
  }
  // Every options call and compile form reads these: a multi-megabyte SKILL.md (invalid anyway) is
  // never loaded, and a version parsed before (valid or not) is neither read nor parsed again.
  const versionOf = await currentVersionKeys(db, owner, files)
  const cached = new Map<string, ParsedSkillFile>()
  for (const { key } of versionOf.values()) {
    const parsed = recallParsedSkill(key)
    if (parsed) cached.set(key, parsed)
  }
  const unread = [...versionOf.values()].filter(({ key }) => !cached.has(key)).map(({ versionId }) => versionId)
  const bodies = await readSmallVersionBodies(db, [...new Set(unread)], { maxBytes: MAX_SKILL_FILE_BYTES })
  const skills: Skill[] = []
  const invalid: Array<{ uri: string; message: string }> = []
  for (const file of files) {
    const version = versionOf.get(file.id)
    let parsed = version === undefined ? undefined : cached.get(version.key)
    if (parsed === undefined) {
      const text = version === undefined ? null : bodies.get(version.versionId)
      if (text == null) parsed = { invalid: 'the file has no readable text' }
      else if (typeof text === 'object') parsed = { invalid: `the file is ${text.bytes} bytes; a SKILL.md is at most ${MAX_FRONT_MATTER_CHARS} characters of front matter and ${MAX_SKILL_BODY_CHARS} of instructions` }
      else {
        await yieldToOtherRequests()
        const result = parseSkillFile({ text, where: file.uri })
        parsed = result instanceof SkillInvalid ? { invalid: result.message } : result
      }
      // Kept under the key read before the body: a body re-parsed in between is read again next time.
      if (version !== undefined && text != null) {
        rememberParsedSkill(version.key, parsed)
        cached.set(version.key, parsed)
      }
    }
    if ('invalid' in parsed) {
      invalid.push({ uri: file.uri, message: parsed.invalid })
    } else if (skills.some((skill) => skill.name === parsed.name)) {
      invalid.push({ uri: file.uri, message: `another of your skills is already named "${parsed.name}"` })
    } else {
      skills.push({ ref: `${USER_SKILL_PREFIX}${parsed.name}`, source: 'user', name: parsed.name, description: parsed.description, body: parsed.body, sha256: sha256(parsed.body), uri: file.uri })
    }
  }
  return { skills, invalid }
}

/** A skill by reference: a bundled name, or `user:<name>` among the owner's own. */
export async function resolveSkill(db: Db, { owner, ref, bundled }: { owner: Owner; ref: string; bundled: ReadonlyArray<Skill> }): Promise<Skill | undefined> {
  if (ref.startsWith(USER_SKILL_PREFIX)) {
    const { skills } = await listUserSkills(db, owner)
    return skills.find((skill) => skill.ref === ref)
  }
  return bundled.find((skill) => skill.ref === ref)
}

export interface SkillDraft {
  readonly name: string
  readonly description: string
  readonly audience: string
  readonly language: string
  readonly keep: string
  readonly instructions?: string | undefined
}

/** A SKILL.md from the compile form's fields (YAML written by quoting, so any text is safe). */
export function renderSkillFile(draft: SkillDraft): string {
  const lines = [
    `Write for: ${draft.audience.trim() || 'a colleague who has not read the source'}.`,
    `Write in: ${draft.language.trim() || 'the language of the source'}.`,
    `Always keep: ${draft.keep.trim() || 'names, numbers, dates, decisions and open questions'}.`,
    'Never invent facts, numbers or sources. Do not add a title or a preamble.',
  ]
  const extra = draft.instructions?.trim()
  return `---\nname: ${JSON.stringify(draft.name)}\ndescription: ${JSON.stringify(draft.description.trim())}\nuse: compile\n---\n${lines.join('\n')}\n${extra ? `\n${extra}\n` : ''}`
}

/** Where a user's skill of this name is stored. */
export function userSkillSegments(name: string): string[] {
  return [USER_SKILLS_DIR, name, SKILL_FILE]
}

export function userSkillUri(owner: Owner, name: string): string {
  return formatKbUri({ login: owner.login, segments: userSkillSegments(name), directory: false })
}
