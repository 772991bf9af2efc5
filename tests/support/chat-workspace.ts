// The server side of a chat scenario: the real app over a fresh test database, a scripted model
// provider behind two models (one with tools, one text only) and the user alice with a few
// documents. Browser tests get it through useBrowserFixture (tests/support/browser.ts).
import type { WorkspaceApp } from './browser.ts'
import { addUserWithToken } from './test-server.ts'
import { type ScriptedProvider, scriptedModel } from './scripted-provider.ts'
import { startScriptedServer } from './scripted-server.ts'
import { putText } from './text-file.ts'

export interface ChatWorkspace extends WorkspaceApp {
  readonly provider: ScriptedProvider
  /** Stores a parsed text file for alice at `segments` under her root. */
  readonly putText: (segments: ReadonlyArray<string>, text: string) => Promise<void>
}

export const REMOTE_MODEL = 'remote'
export const TEXT_ONLY_MODEL = 'text-only'

export async function startChatWorkspace(): Promise<ChatWorkspace> {
  const { server, provider, close } = await startScriptedServer({
    compile: { worker: false }, // the compile form and its job list (nothing here runs a job)
    models: (provider) => [
      scriptedModel(provider, { id: REMOTE_MODEL }), // native tool calls
      scriptedModel(provider, { id: TEXT_ONLY_MODEL, name: 'Text only', supportsNativeToolCalling: false }),
    ],
  })
  const alice = await addUserWithToken(server, 'alice')
  const putAlicesText = async (segments: ReadonlyArray<string>, text: string) => {
    await putText(server.database.db, { owner: alice.user, segments, text })
  }
  await putAlicesText(['docs', 'a.md'], '# Alpha\n\nThe answer is **forty-two**.\n')
  await putAlicesText(['docs', 'b.txt'], 'Bravo notes: streaming ends with done.\n')
  await putAlicesText(['docs', 'deep', 'c.md'], 'Charlie in a subdirectory.\n')
  await putAlicesText(['other', 'd.md'], 'Delta lives elsewhere.\n')
  return { server, provider, login: 'alice', password: alice.password, putText: putAlicesText, close }
}
