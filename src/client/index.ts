export * from './knowagent-client.ts'
export { createSseDecoder, decodeSseStream, type SseEvent } from '../sse/sse-decoder.ts'
