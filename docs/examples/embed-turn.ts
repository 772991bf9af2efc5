// Run a knowagent turn inside your own backend, with your own model and tools (no knowagent I/O).
import { createActor, fromPromise } from 'xstate'
import { turnMachine, type CallModelInput, type CallModelOutput, type CompactInput, type CompactOutput, type PreStepInput, type PreStepOutput, type PrepareInput, type PrepareOutput, type RunToolInput, type RunToolOutput, type TurnOutput } from '../../src/machines/index.ts'

const tools = [{ type: 'function' as const, function: { name: 'lookup', description: 'Look a word up', parameters: { type: 'object', properties: { word: { type: 'string' } } } } }]

const machine = turnMachine.provide({
  actors: {
    prepare: fromPromise<PrepareOutput, PrepareInput>(async ({ input }) => ({
      ok: true, scopeUri: input.uri, scopeKind: 'directory', tools,
      messages: [{ role: 'system', content: 'Answer with the lookup tool.' }, ...input.history, { role: 'user', content: input.question }],
    })),
    preStep: fromPromise<PreStepOutput, PreStepInput>(async () => ({})), // no context blocks
    // Your model: here a fake that asks for one lookup, then answers with what it got back.
    callModel: fromPromise<CallModelOutput, CallModelInput>(async ({ input }) => {
      const last = input.messages.at(-1)!
      if (last.role !== 'tool') {
        return { ok: true, result: { text: '', thinking: '', finishReason: 'tool_calls', rawFinishReason: 'tool_calls', usage: undefined,
          toolCalls: [{ index: 0, id: 'call_1', name: 'lookup', rawArguments: '{"word":"turn"}', argumentsJson: '{"word":"turn"}', argumentsError: undefined }] } }
      }
      input.parent.send({ type: 'model.delta', text: `A turn is ${last.content}.` })
      return { ok: true, result: { text: `A turn is ${last.content}.`, thinking: '', toolCalls: [], finishReason: 'stop', rawFinishReason: 'stop', usage: undefined } }
    }),
    compact: fromPromise<CompactOutput, CompactInput>(async () => ({ ok: false, code: 'unsupported', message: 'no compaction here' })),
    // Your tools: any code; errors are results the model sees.
    runTool: fromPromise<RunToolOutput, RunToolInput>(async ({ input }) => ({ ok: true, content: JSON.stringify(`one question and its answer (${String(input.call.arguments.word)})`), summary: 'looked up' })),
  },
})

export async function runEmbeddedTurn(question: string): Promise<{ output: TurnOutput; streamed: string }> {
  const actor = createActor(machine, { input: { turnId: 't1', uri: 'app://docs/', question, history: [], model: { contextWindow: 8192, maxOutputTokens: 1024, supportsNativeToolCalling: true } } })
  let streamed = ''
  actor.on('delta', (event) => (streamed += event.text)) // also: tool, context, thinking, warning, done, error
  const done = new Promise<TurnOutput>((resolve) => actor.subscribe({ complete: () => resolve(actor.getSnapshot().output as TurnOutput) }))
  actor.start() // to stop it: actor.send({ type: 'user.stop' }) → status 'cancelled'
  return { output: await done, streamed }
}
