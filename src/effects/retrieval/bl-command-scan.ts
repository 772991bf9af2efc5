// Did a tool run a `bl knowledge service create|deploy|delete|copy` since we last looked? The
// command is searched in the serialised arguments of every tool call (the agent may run `bl`
// through any shell-like tool, under any name); a loose match is deliberate: a false positive
// costs one list request, a miss waits for the TTL. A call counts once its result is in the
// context and is not a tool error.
import type { ChatMessage } from '../../machines/index.ts'

export const BL_SERVICE_CHANGE = /\bbl\s+knowledge\s+service\s+(create|deploy|delete|copy)\b/

export interface ServiceChangeScan {
  /** A finished call changed the deployed services. */
  readonly changed: boolean
  /** Ids of the calls with results, to remember as seen. */
  readonly finishedCallIds: ReadonlyArray<string>
}

export function scanForServiceChanges({
  messages,
  seen,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly seen: ReadonlySet<string>
}): ServiceChangeScan {
  const results = new Map<string, string>()
  for (const message of messages) if (message.role === 'tool') results.set(message.tool_call_id, message.content)
  let changed = false
  const finishedCallIds: string[] = []
  for (const message of messages) {
    if (message.role !== 'assistant') continue
    for (const call of message.tool_calls ?? []) {
      if (seen.has(call.id)) continue
      const result = results.get(call.id)
      if (result === undefined) continue
      finishedCallIds.push(call.id)
      if (isToolError(result)) continue
      // The arguments as the model wrote them, and once more decoded (escaped quotes, \n …).
      if (BL_SERVICE_CHANGE.test(call.function.arguments) || BL_SERVICE_CHANGE.test(decodedText(call.function.arguments))) changed = true
    }
  }
  return { changed, finishedCallIds }
}

function isToolError(content: string): boolean {
  return /^\s*\{\s*"error"\s*:/.test(content)
}

function decodedText(json: string): string {
  try {
    const strings: string[] = []
    const walk = (value: unknown): void => {
      if (typeof value === 'string') strings.push(value)
      else if (Array.isArray(value)) value.forEach(walk)
      else if (value !== null && typeof value === 'object') Object.values(value).forEach(walk)
    }
    walk(JSON.parse(json))
    return strings.join(' ')
  } catch {
    return ''
  }
}
