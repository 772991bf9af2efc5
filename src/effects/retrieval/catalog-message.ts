// What the model reads about the deployed retrieval services (SPEC §9), pure. The policy:
// - no cache document (first fetch pending or failing) → nothing (the tools still work);
// - a document with no service at all → a notice that forbids inventing ids and says how to
//   create and deploy a service;
// - per scene (an empty scene is omitted entirely):
//   a default service configured and deployed → only that one, and how many others exist;
//   otherwise ≤ 10 deployed (and the listing complete) → all of them;
//   otherwise → the 10 most recently modified, saying the list is cut and the total.
// English framing, service names verbatim (one line each, control characters blanked). Wherever
// the text recommends the `bl` CLI it also says how to install it: the tools call the API
// directly, so a deployment may have no `bl` at all.
import type { CatalogEntry, Scene } from './bailian-client.ts'
import type { CatalogDocument } from './catalog-store.ts'

export const CATALOG_SOURCE = 'retrieval-catalog'
export const CATALOG_ENTRY_LIMIT = 10
const NAME_LIMIT = 200
const DESCRIPTION_LIMIT = 200

export const BL_INSTALL_NOTE = '`bl` is the Bailian CLI; if it is not installed, install it with `npm install -g bailian-cli`.'
const CONSOLE = 'the Bailian console (https://bailian.console.aliyun.com/)'

const SCENE_LABEL: Record<Scene, string> = {
  search: 'For kb_search (retrieval: returns passages to read and cite)',
  chat: 'For kb_chat (grounded Q&A: returns a finished answer)',
}

/** The explicitly configured default services (never the sole-service fallback). */
export interface CatalogDefaults {
  readonly defaultRetrieveAgentId?: string | undefined
  readonly defaultChatAgentId?: string | undefined
}

export function buildCatalogMessage(document: CatalogDocument | undefined, defaults: CatalogDefaults): string | undefined {
  if (document === undefined) return undefined
  if (document.entries.length === 0) return buildNoServiceNotice()
  const sections = (['search', 'chat'] as const).flatMap((scene) => {
    const section = renderScene({
      scene,
      entries: document.entries.filter((entry) => entry.scene === scene),
      total: document.scenes[scene].total,
      truncated: document.scenes[scene].truncated,
      defaultId: scene === 'search' ? defaults.defaultRetrieveAgentId : defaults.defaultChatAgentId,
    })
    return section === undefined ? [] : [section]
  })
  if (sections.length === 0) return buildNoServiceNotice()
  const recommendsBl = sections.some((section) => section.recommendsBl)
  return [
    'Bailian knowledge services deployed in this workspace, grouped by the tool that accepts them. ' +
      "Pass an id from the matching group as that tool's `agent_id` argument; ids cannot be guessed.",
    ...sections.flatMap((section) => ['', ...section.lines]),
    '',
    'If none of these services covers what the user asks about, say so plainly instead of trying the closest-looking id: ' +
      'an unrelated retrieval result is worse than none.',
    ...(recommendsBl ? [BL_INSTALL_NOTE] : []),
  ].join('\n')
}

export function buildNoServiceNotice(): string {
  return [
    'The Bailian knowledge tools (kb_search, kb_chat) are configured, but this workspace has no deployed knowledge service, ' +
      'so neither tool can be used: both need an `agent_id` and there is none. Do not call them and do not invent an id.',
    '',
    'If the user asks for something that should come from their knowledge base, tell them a service has to be created and deployed first: ' +
      `in ${CONSOLE}, or with \`bl knowledge service create\` followed by \`bl knowledge service deploy\`. ${BL_INSTALL_NOTE}`,
  ].join('\n')
}

/** Appended to a kb_* error after a 4xx: the services of that scene, re-read just now. */
export function buildRefreshedSceneList(scene: Scene, entries: ReadonlyArray<CatalogEntry>, total = entries.length): string {
  if (entries.length === 0) return buildNoSceneServiceNotice(scene)
  const shown = sortByRecency(entries).slice(0, CATALOG_ENTRY_LIMIT)
  const more = Math.max(total, entries.length) - shown.length
  return [
    `The deployed ${scene} services of this workspace, re-read just now (use one of these ids, or tell the user none fits):`,
    ...shown.map(renderEntry),
    ...(more > 0 ? [`(and ${more} more: run \`bl knowledge service list --scene ${scene}\` to see them. ${BL_INSTALL_NOTE})`] : []),
  ].join('\n')
}

function buildNoSceneServiceNotice(scene: Scene): string {
  return (
    `This workspace has no deployed ${scene} service at all (re-checked just now), so no agent_id can work: do not retry with another id. ` +
    `Tell the user one has to be created and deployed first, in ${CONSOLE} or with \`bl knowledge service create\` ` +
    `followed by \`bl knowledge service deploy\`. ${BL_INSTALL_NOTE}`
  )
}

interface Section {
  readonly lines: ReadonlyArray<string>
  readonly recommendsBl: boolean
}

function renderScene({
  scene,
  entries,
  total,
  truncated,
  defaultId,
}: {
  readonly scene: Scene
  readonly entries: ReadonlyArray<CatalogEntry>
  readonly total: number
  readonly truncated: boolean
  readonly defaultId: string | undefined
}): Section | undefined {
  if (entries.length === 0) return undefined
  const known = Math.max(total, entries.length)
  const header = `${SCENE_LABEL[scene]}:`
  const configured = defaultId === undefined ? undefined : entries.find((entry) => entry.agentId === defaultId)
  if (configured !== undefined) {
    const others = known - 1
    if (others === 0) return { lines: [header, `${renderEntry(configured)} (the default service)`], recommendsBl: false }
    return {
      lines: [
        header,
        `${renderEntry(configured)} (the default service)`,
        `(${others} more deployed ${scene} service${others === 1 ? '' : 's'} exist${others === 1 ? 's' : ''}: run \`bl knowledge service list --scene ${scene}\` to see them.)`,
      ],
      recommendsBl: true,
    }
  }
  if (entries.length <= CATALOG_ENTRY_LIMIT && !truncated) return { lines: [header, ...entries.map(renderEntry)], recommendsBl: false }
  const shown = sortByRecency(entries).slice(0, CATALOG_ENTRY_LIMIT)
  return {
    lines: [
      header,
      ...shown.map(renderEntry),
      `(The list is truncated: showing the ${shown.length} most recently modified of ${truncated ? 'more than ' : ''}${known} deployed ${scene} services. ` +
        `Run \`bl knowledge service list --scene ${scene} --name <keyword>\` to look for others.)`,
    ],
    recommendsBl: true,
  }
}

function renderEntry(entry: CatalogEntry): string {
  const name = oneLine(entry.agentName, NAME_LIMIT) || '(unnamed)'
  const description = entry.description === undefined ? '' : oneLine(entry.description, DESCRIPTION_LIMIT)
  return `- ${oneLine(entry.agentId, NAME_LIMIT)}: ${name}${description === '' ? '' : ` (${description})`}`
}

/** Blanks control characters (a name cannot start a new line of the list) and cuts long text. */
function oneLine(text: string, limit: number): string {
  const flat = text.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').trim()
  const points = Array.from(flat)
  return points.length <= limit ? flat : `${points.slice(0, limit - 1).join('')}…`
}

/** Most recently modified first; entries without a readable time last, in their listed order. */
export function sortByRecency(entries: ReadonlyArray<CatalogEntry>): CatalogEntry[] {
  return entries
    .map((entry, index) => ({ entry, index, time: timeOf(entry.modifyTime) }))
    .sort((a, b) => {
      if (a.time === b.time) return a.index - b.index
      if (a.time === undefined) return 1
      if (b.time === undefined) return -1
      return b.time - a.time
    })
    .map(({ entry }) => entry)
}

function timeOf(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined
  if (/^\d+$/.test(value)) {
    const number = Number(value)
    return number < 1e11 ? number * 1000 : number // seconds or milliseconds since the epoch
  }
  const parsed = Date.parse(/^\d{4}-\d{2}-\d{2} \d/.test(value) ? value.replace(' ', 'T') : value)
  return Number.isNaN(parsed) ? undefined : parsed
}
