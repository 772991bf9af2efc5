// The server side of a chat scenario: the real app over a fresh test database, a scripted model
// provider behind two models (one with tools, one text only) and the user alice with a few
// documents. Browser tests get it through useBrowserFixture (tests/support/browser.ts).
import { putFile } from '../../src/effects/workspace/store.ts'
import type { WorkspaceApp } from './browser.ts'
import { addUserWithToken, startTestServer } from './test-server.ts'
import { startScriptedProvider, type ScriptedProvider } from './scripted-provider.ts'

export interface ChatWorkspace extends WorkspaceApp {
  readonly provider: ScriptedProvider
  /** Stores a parsed text file for alice at `segments` under her root. */
  readonly putText: (segments: ReadonlyArray<string>, text: string) => Promise<void>
}

export const REMOTE_MODEL = 'remote'
export const TEXT_ONLY_MODEL = 'text-only'

export async function startChatWorkspace(): Promise<ChatWorkspace> {
  const provider = await startScriptedProvider()
  const model = { profile: 'scripted', baseUrl: provider.baseUrl, model: 'm', contextWindow: 32768, maxOutputTokens: 1024, maxRetries: 0 }
  const server = await startTestServer({
    compile: { worker: false }, // the compile form and its job list (nothing here runs a job)
    configure: (config) => ({
      ...config,
      streamsPerMinute: 1000,
      file: {
        models: [
          { id: REMOTE_MODEL, name: 'Remote', supportsNativeToolCalling: true, ...model },
          { id: TEXT_ONLY_MODEL, name: 'Text only', supportsNativeToolCalling: false, ...model },
        ],
      },
    }),
  })
  const alice = await addUserWithToken(server, 'alice')
  const putText = async (segments: ReadonlyArray<string>, text: string) => {
    const mime = segments.at(-1)!.endsWith('.md') ? 'text/markdown' : 'text/plain'
    await putFile(server.database.db, { owner: alice.user, segments: [...segments], bytes: new TextEncoder().encode(text), parsed: { ok: true, mime, text } })
  }
  await putText(['docs', 'a.md'], '# Alpha\n\nThe answer is **forty-two**.\n')
  await putText(['docs', 'b.txt'], 'Bravo notes: streaming ends with done.\n')
  await putText(['docs', 'deep', 'c.md'], 'Charlie in a subdirectory.\n')
  await putText(['other', 'd.md'], 'Delta lives elsewhere.\n')
  return {
    server,
    provider,
    login: 'alice',
    password: alice.password,
    putText,
    close: async () => {
      await server.close()
      await provider.close()
    },
  }
}
