// The server, scripted provider and workspace shared by the chat scenarios of one test file.
import { putFile } from '../../src/effects/workspace/store.ts'
import type { User } from '../../src/effects/auth/users.ts'
import { addUserWithToken, startTestServer, type TestServer } from '../support/test-server.ts'
import { startScriptedProvider, type ScriptedProvider } from '../support/scripted-provider.ts'

export interface ChatFixture {
  readonly server: TestServer
  readonly provider: ScriptedProvider
  readonly alice: { readonly user: User; readonly password: string }
  readonly putText: (segments: ReadonlyArray<string>, text: string) => Promise<void>
  readonly close: () => Promise<void>
}

export const REMOTE_MODEL = 'remote'
export const TEXT_ONLY_MODEL = 'text-only'

export async function startChatFixture(): Promise<ChatFixture> {
  const provider = await startScriptedProvider()
  const model = { profile: 'scripted', baseUrl: provider.baseUrl, model: 'm', contextWindow: 32768, maxOutputTokens: 1024, maxRetries: 0 }
  const server = await startTestServer({
    compile: {}, // the compile form and its job list (no worker: nothing here runs a job)
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
    alice: { user: alice.user, password: alice.password },
    putText,
    close: async () => {
      await server.close()
      await provider.close()
    },
  }
}
