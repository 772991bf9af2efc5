export * from './knowagent-client.ts'
export { createSseDecoder, decodeSseStream, type SseEvent } from '../effects/llm/sse-decoder.ts'
