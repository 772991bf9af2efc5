// A folder's compiled pages written as a compile job publishes them (compile-artifacts.ts): a
// summary per source in `<folder>/summaries/`, the folder's `.overview.md` and `.abstract.md`, each
// marked generated and recording what it was built from — for tests of what reads the layers
// (search, the tools, the local model) without running a queue and a worker.
import type { Kysely } from 'kysely'
import { recordLayerSources } from '../../src/effects/compile/layer-freshness.ts'
import { ABSTRACT_FILE, OVERVIEW_FILE, SUMMARIES_DIR, summaryFileName } from '../../src/effects/compile/compile-artifacts.ts'
import { abstractPage, overviewPage, summaryPage } from '../../src/effects/compile/compile-prompts.ts'
import type { DB, GeneratedKind, Owner } from '../../src/effects/db/schema.ts'
import { getNode, putFileInTransaction } from '../../src/effects/workspace/store.ts'
import { formatKbUri } from '../../src/effects/workspace/uri.ts'

export interface CompiledFolder {
  readonly owner: Owner
  readonly folder: ReadonlyArray<string>
  /** Source file name → its summary text. */
  readonly summaries: Readonly<Record<string, string>>
  readonly overview: string
  readonly abstract: string
  readonly engine?: string
}

export async function writeCompiledFolder(db: Kysely<DB>, { owner, folder, summaries, overview, abstract, engine = 'test engine' }: CompiledFolder): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const uriOf = (segments: ReadonlyArray<string>, directory = false) => formatKbUri({ login: owner.login, segments, directory })
    const put = async (segments: string[], text: string, kind: GeneratedKind, source: string | undefined, sourceIds: ReadonlyArray<string>) => {
      const { node } = await putFileInTransaction(trx, { owner, segments, bytes: new TextEncoder().encode(text), parsed: { ok: true, mime: 'text/markdown', text } })
      await trx.updateTable('nodes').set({ generated: kind, generated_from: source ?? null }).where('id', '=', node.id).execute()
      await recordLayerSources(trx, { pageId: node.id, sourceIds })
    }
    const sources = []
    for (const [name, summary] of Object.entries(summaries)) {
      const source = await getNode(trx, owner, [...folder, name])
      const segments = [...folder, SUMMARIES_DIR, summaryFileName(name)]
      await put(segments, summaryPage({ name, uri: source.uri, summary, engine }), 'summary', source.id, [source.id])
      sources.push({ id: source.id, name, uri: source.uri, summaryUri: uriOf(segments) })
    }
    const ids = sources.map((source) => source.id)
    const directoryName = folder.at(-1) ?? owner.login
    await put([...folder, OVERVIEW_FILE], overviewPage({ directoryName, directoryUri: uriOf(folder, true), overview, sources, engine }), 'overview', undefined, ids)
    await put([...folder, ABSTRACT_FILE], abstractPage({ directoryName, overviewUri: uriOf([...folder, OVERVIEW_FILE]), abstract, engine }), 'abstract', undefined, ids)
  })
}
