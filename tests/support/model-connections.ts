// A local OpenAI-compatible provider for the Admin → Model connections tests (HTTP, two
// processes, browser): GET /v1/models lists three models, POST /v1/chat/completions streams
// "Answer from <model>." — both only with the expected key (else 401, as a real provider).
import { chatCompletionSse, httpResponseScript, type ScriptedProvider, startScriptedProvider, streamScript } from './scripted-provider.ts'

export const PROVIDER_MODELS = [{ id: 'gpt-4o' }, { id: 'qwen-plus' }, { id: 'tiny-local', context_length: 4096 }] as const

export async function startKeyedProvider({ apiKey }: { readonly apiKey: string }): Promise<ScriptedProvider> {
  return startScriptedProvider({
    handler: (request) => {
      if (request.headers.authorization !== `Bearer ${apiKey}`) {
        return httpResponseScript(401, { error: { code: 'invalid_api_key', message: 'Incorrect API key provided.' } })
      }
      if (request.method === 'GET' && request.path === '/v1/models') return httpResponseScript(200, { object: 'list', data: PROVIDER_MODELS.map((model) => ({ object: 'model', ...model })) })
      if (request.method === 'POST' && request.path === '/v1/chat/completions') {
        const model = (request.body as { model?: string } | undefined)?.model ?? '?'
        return streamScript(chatCompletionSse([{ text: `Answer from ${model}.` }, { finish: 'stop' }, 'done']))
      }
      return httpResponseScript(404, { error: { message: `no route ${request.method} ${request.path}` } })
    },
  })
}

/** The form fields that enable `enabled` of a connection's models (as the page lists them) and leave the rest off. */
export function modelsForm(rows: ReadonlyArray<{ readonly providerModel: string; readonly displayName: string; readonly contextWindow: number; readonly maxOutputTokens: number; readonly supportsNativeToolCalling: boolean }>, enabled: ReadonlyArray<string>): Record<string, string> {
  const form: Record<string, string> = { model_count: String(rows.length) }
  rows.forEach((row, index) => {
    form[`model_${index}_provider`] = row.providerModel
    form[`model_${index}_name`] = row.displayName
    form[`model_${index}_window`] = String(row.contextWindow)
    form[`model_${index}_reserve`] = String(row.maxOutputTokens)
    if (row.supportsNativeToolCalling) form[`model_${index}_tools`] = 'on'
    if (enabled.includes(row.providerModel)) form[`model_${index}_enabled`] = 'on'
  })
  return form
}
