import { describe, expect, test } from 'vitest'
import type { ChatMessage } from '../../machines/index.ts'
import { scanForServiceChanges } from './bl-command-scan.ts'

const call = (id: string, args: unknown, result: string | null = '{"ok":true}', name = 'shell'): ChatMessage[] => [
  { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) } }] },
  ...(result === null ? [] : [{ role: 'tool' as const, tool_call_id: id, content: result }]),
]

describe('scanForServiceChanges', () => {
  test.each([
    ['create', { command: 'bl knowledge service create --name "HR" --scene search' }],
    ['deploy', { command: 'bl knowledge service deploy --agent-id a1' }],
    ['delete', { cmd: 'bl   knowledge  service delete --agent-id a1 --yes' }],
    ['copy', { script: 'set -e\nbl knowledge service copy --agent-id a1' }],
    ['an argument vector', { args: ['bl', 'knowledge', 'service', 'create'] }],
    ['any tool name', { input: 'run: bl knowledge service create' }],
  ])('%s counts', (_name, args) => {
    expect(scanForServiceChanges({ messages: call('c1', args), seen: new Set() })).toEqual({ changed: true, finishedCallIds: ['c1'] })
  })

  test.each([
    ['a read-only command', { command: 'bl knowledge service list --scene search' }],
    ['another tool', { uri: 'kb://me/notes/bl knowledge.md' }],
    ['no word boundary', { command: 'xbl knowledge service create' }],
  ])('%s does not count', (_name, args) => {
    expect(scanForServiceChanges({ messages: call('c1', args), seen: new Set() }).changed).toBe(false)
  })

  test('a call counts only once its result is in, and not when the tool failed', () => {
    const args = { command: 'bl knowledge service create' }
    expect(scanForServiceChanges({ messages: call('c1', args, null), seen: new Set() })).toEqual({ changed: false, finishedCallIds: [] })
    expect(scanForServiceChanges({ messages: call('c1', args, '{"error":{"code":"x","message":"y"}}'), seen: new Set() })).toEqual({ changed: false, finishedCallIds: ['c1'] })
  })

  test('calls already seen are skipped', () => {
    expect(scanForServiceChanges({ messages: call('c1', { command: 'bl knowledge service create' }), seen: new Set(['c1']) })).toEqual({ changed: false, finishedCallIds: [] })
  })
})
