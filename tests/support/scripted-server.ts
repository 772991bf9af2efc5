// The real app (startTestServer) with the scripted provider behind its configured models: the
// setup of every HTTP suite whose turns reach a remote model.
import type { ModelConfig } from '../../src/effects/llm/model-config.ts'
import { type ScriptedProvider, scriptedModel, startScriptedProvider } from './scripted-provider.ts'
import { startTestServer, type TestServer, type TestServerOptions } from './test-server.ts'

export interface ScriptedServerOptions extends TestServerOptions {
  /** The configuration file's models, served by the provider. Default: `[scriptedModel(provider)]` (`remote`). */
  readonly models?: (provider: ScriptedProvider) => ReadonlyArray<ModelConfig>
  /** Default 1000: suites stream many turns for one user; a test of the limit sets its own. */
  readonly streamsPerMinute?: number
  /** A provider already running (another server behind the same provider); not closed by `close`. */
  readonly provider?: ScriptedProvider
}

export interface ScriptedServer {
  readonly server: TestServer
  readonly provider: ScriptedProvider
  /** Closes the server, then the provider if this fixture started it. */
  readonly close: () => Promise<void>
}

/** The models and the stream limit are set first; `configure`, when given, has the last word. */
export async function startScriptedServer({
  models = (provider) => [scriptedModel(provider)],
  streamsPerMinute = 1000,
  provider: shared,
  configure,
  ...options
}: ScriptedServerOptions = {}): Promise<ScriptedServer> {
  const provider = shared ?? (await startScriptedProvider())
  try {
    const server = await startTestServer({
      ...options,
      configure: (config) => {
        const scripted = { ...config, streamsPerMinute, file: { ...config.file, models: models(provider) } }
        return configure ? configure(scripted) : scripted
      },
    })
    return {
      server,
      provider,
      close: async () => {
        await server.close()
        if (!shared) await provider.close()
      },
    }
  } catch (error) {
    if (!shared) await provider.close()
    throw error
  }
}
