// The ids of a message's parts. The page's <template>s mark parts with `data-part`; chat.js gives
// each clone the id `<prefix>-<key>` and each part `<prefix>-<key>-<part>`; the server targets
// those ids with its stream fragments. Keys are display keys made by the browser, never credentials.
export const MESSAGE_KEY_PATTERN = /^[A-Za-z0-9-]{1,64}$/

export function isMessageKey(value: unknown): value is string {
  return typeof value === 'string' && MESSAGE_KEY_PATTERN.test(value)
}

/** `outcome`: where the server puts how the answer ended (a notice that a resumed stream may send again: swapped, not appended). */
export type AssistantPart = 'thinking' | 'body' | 'outcome' | 'status'

export function assistantIds(key: string) {
  const base = `a-${key}`
  return {
    article: base,
    part: (part: AssistantPart) => `${base}-${part}`,
    thinkingText: `${base}-thinking-text`,
    segment: (n: number) => `${base}-s${n}`,
    tool: (n: number) => `${base}-t${n}`,
    toolSummary: (n: number) => `${base}-t${n}-summary`,
    toolResult: (n: number) => `${base}-t${n}-result`,
  }
}
export type AssistantIds = ReturnType<typeof assistantIds>
