import { describe, expect, it } from 'vitest'
import { decodeChatCompletionRequest, readChatTurnRequest, type OpenAiRequestError } from './openai-chat-request.ts'

const read = (body: unknown, maxMessageChars = 1000) => readChatTurnRequest(decodeChatCompletionRequest(body), { maxMessageChars })
const refusal = (body: unknown, maxMessageChars?: number) => {
  try {
    read(body, maxMessageChars)
  } catch (error) {
    const e = error as OpenAiRequestError
    return { status: e.status, code: e.code, param: e.param ?? null, message: e.message }
  }
  throw new Error('expected a refusal')
}

const user = (content: unknown) => ({ role: 'user', content })

describe('readChatTurnRequest', () => {
  it('reads model, scope, preferences, history and question; other fields are ignored', () => {
    expect(
      read({
        model: 'knowagent/local',
        stream: true,
        stream_options: { include_usage: true },
        temperature: 0.2,
        user: 'u-1',
        max_tokens: 100,
        kb_uri: 'kb://me/docs/',
        messages: [
          { role: 'system', content: 'Answer in French.' },
          user('first question'),
          { role: 'assistant', content: 'first answer', name: 'bot' },
          { role: 'developer', content: [{ type: 'text', text: 'Be brief.' }] },
          user([{ type: 'text', text: 'second' }, { type: 'text', text: 'question' }]),
        ],
      }),
    ).toEqual({
      modelId: 'local',
      uri: 'kb://me/docs/',
      stream: true,
      includeUsage: true,
      preferences: 'Answer in French.\n\nBe brief.',
      history: [{ role: 'user', content: 'first question' }, { role: 'assistant', content: 'first answer' }],
      question: 'second\nquestion',
    })
  })

  it('defaults: the caller root, not streaming, no usage chunk, no preferences; model ids may contain slashes', () => {
    expect(read({ model: 'knowagent/org/qwen-plus', messages: [user('hi')] })).toEqual({
      modelId: 'org/qwen-plus', uri: 'kb://me/', stream: false, includeUsage: false, preferences: undefined, history: [], question: 'hi',
    })
  })

  it('takes the scope from metadata.kb_uri too, and refuses two different scopes', () => {
    expect(read({ model: 'knowagent/local', metadata: { kb_uri: 'kb://me/a/', other: 'x' }, messages: [user('q')] }).uri).toBe('kb://me/a/')
    expect(read({ model: 'knowagent/local', kb_uri: 'kb://me/a/', metadata: { kb_uri: 'kb://me/a/' }, messages: [user('q')] }).uri).toBe('kb://me/a/')
    expect(refusal({ model: 'knowagent/local', kb_uri: 'kb://me/a/', metadata: { kb_uri: 'kb://me/b/' }, messages: [user('q')] })).toMatchObject({ status: 400, param: 'kb_uri' })
    expect(refusal({ model: 'knowagent/local', metadata: { kb_uri: 7 }, messages: [user('q')] })).toMatchObject({ status: 400, param: 'metadata.kb_uri' })
  })

  it.each([
    ['a model without the knowagent/ prefix', { model: 'gpt-4o', messages: [user('q')] }, 404, 'model_not_found', 'model'],
    ['the bare prefix', { model: 'knowagent/', messages: [user('q')] }, 404, 'model_not_found', 'model'],
    ['client tools', { model: 'knowagent/local', tools: [{ type: 'function', function: { name: 'f' } }], messages: [user('q')] }, 400, 'tools_not_supported', 'tools'],
    ['a forced tool choice', { model: 'knowagent/local', tool_choice: 'required', messages: [user('q')] }, 400, 'tools_not_supported', 'tool_choice'],
    ['legacy functions', { model: 'knowagent/local', functions: [{ name: 'f' }], messages: [user('q')] }, 400, 'tools_not_supported', 'functions'],
    ['a legacy function_call', { model: 'knowagent/local', function_call: { name: 'f' }, messages: [user('q')] }, 400, 'tools_not_supported', 'function_call'],
    ['a tool message', { model: 'knowagent/local', messages: [user('q'), { role: 'tool', tool_call_id: 'c', content: 'r' }, user('q2')] }, 400, 'tools_not_supported', 'messages[1].role'],
    ['assistant tool calls', { model: 'knowagent/local', messages: [user('q'), { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] }, user('q2')] }, 400, 'tools_not_supported', 'messages[1].tool_calls'],
    ['an image part', { model: 'knowagent/local', messages: [user([{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }])] }, 400, 'unsupported_content', 'messages[0].content[1]'],
    ['an audio part', { model: 'knowagent/local', messages: [user([{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }])] }, 400, 'unsupported_content', 'messages[0].content[0]'],
    ['a text part without text', { model: 'knowagent/local', messages: [user([{ type: 'text' }])] }, 400, 'invalid_request', 'messages[0].content[0].text'],
    ['n > 1', { model: 'knowagent/local', n: 2, messages: [user('q')] }, 400, 'unsupported_parameter', 'n'],
    ['a JSON response format', { model: 'knowagent/local', response_format: { type: 'json_object' }, messages: [user('q')] }, 400, 'unsupported_parameter', 'response_format'],
    ['logprobs', { model: 'knowagent/local', logprobs: true, messages: [user('q')] }, 400, 'unsupported_parameter', 'logprobs'],
    ['audio output', { model: 'knowagent/local', modalities: ['text', 'audio'], messages: [user('q')] }, 400, 'unsupported_parameter', 'modalities'],
    ['an unknown role', { model: 'knowagent/local', messages: [{ role: 'wizard', content: 'x' }, user('q')] }, 400, 'invalid_request', 'messages[0].role'],
    ['no question last', { model: 'knowagent/local', messages: [user('q'), { role: 'assistant', content: 'a' }] }, 400, 'invalid_request', 'messages'],
    ['only system messages', { model: 'knowagent/local', messages: [{ role: 'system', content: 'x' }] }, 400, 'invalid_request', 'messages'],
    ['an empty question', { model: 'knowagent/local', messages: [user('  ')] }, 400, 'invalid_request', 'messages'],
    ['a question over the limit', { model: 'knowagent/local', messages: [user('x'.repeat(1001))] }, 400, 'message_too_large', 'messages'],
    ['preferences over the limit', { model: 'knowagent/local', messages: [{ role: 'system', content: 'x'.repeat(1001) }, user('q')] }, 400, 'message_too_large', 'messages'],
  ])('refuses %s', (_what, body, status, code, param) => {
    expect(refusal(body)).toMatchObject({ status, code, param })
  })

  it('accepts the harmless forms of the tool parameters: empty lists, "none", "auto", n = 1, text format', () => {
    const request = read({
      model: 'knowagent/local', tools: [], tool_choice: 'auto', functions: [], function_call: 'none', n: 1,
      response_format: { type: 'text' }, modalities: ['text'], logprobs: false, parallel_tool_calls: false,
      messages: [user('q'), { role: 'assistant', content: 'a', tool_calls: [] }, user('q2')],
    })
    expect(request.question).toBe('q2')
    expect(request.history).toEqual([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }])
  })

  it.each([
    ['not an object', [1, 2], 'invalid_body'],
    ['no messages', { model: 'knowagent/local', messages: [] }, 'invalid_request'],
    ['messages of the wrong type', { model: 'knowagent/local', messages: 'hi' }, 'invalid_request'],
    ['content of the wrong type', { model: 'knowagent/local', messages: [{ role: 'user', content: 42 }] }, 'invalid_request'],
    ['no model', { messages: [user('q')] }, 'invalid_request'],
  ])('a malformed body (%s) is a 400', (_what, body, code) => {
    expect(refusal(body)).toMatchObject({ status: 400, code })
  })

  it('checks the history like the stream API: at most 400 earlier messages and 1.5 MB', () => {
    const turns = (count: number, chars: number) =>
      Array.from({ length: count }, (_, i) => (i % 2 === 0 ? user('y'.repeat(chars)) : { role: 'assistant', content: 'y'.repeat(chars) }))
    expect(refusal({ model: 'knowagent/local', messages: [...turns(401, 1), user('q')] })).toMatchObject({ status: 400, code: 'history_too_large' })
    const bytes = refusal({ model: 'knowagent/local', messages: [...turns(300, 6000), user('q')] })
    expect(bytes).toMatchObject({ status: 400, code: 'history_too_large' })
    expect(bytes.message).toContain('bytes')
    expect(read({ model: 'knowagent/local', messages: [...turns(400, 1), user('q')] }).history).toHaveLength(400)
  })
})
