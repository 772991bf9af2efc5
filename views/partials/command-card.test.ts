import { describe, expect, it } from 'vitest'
import { renderFragmentSync } from '../render.ts'
import { CommandCard } from './command-card.tsx'

describe('CommandCard', () => {
  it('shows a failed /read once, with a hint to list the folder', () => {
    const message = 'kb://users/alice/missing.md does not exist'
    const html = renderFragmentSync(
      CommandCard({ outcome: { command: 'read', ok: false, summary: `not_found: ${message}`, result: { error: { code: 'not_found', message } } } }),
    )
    expect(html.split(message)).toHaveLength(2) // exactly once
    expect(html).toContain('<code>not_found</code>')
    expect(html).toMatch(/Try <button type="button" class="run-command" data-run-command="ls"[^>]*>\/ls<\/button> to see the names in this folder\./)
  })

  it('gives no listing hint where a listing does not help, and keeps the summary of a success', () => {
    const failed = renderFragmentSync(CommandCard({ outcome: { command: 'read', ok: false, summary: 'x', result: { error: { code: 'outside_scope', message: 'not yours' } } } }))
    expect(failed).not.toContain('card-hint')
    const ok = renderFragmentSync(CommandCard({ outcome: { command: 'ls', ok: true, summary: '2 entries', result: { uri: 'kb://users/a/', entries: [], next_offset: null, total: 0 } } }))
    expect(ok).toContain('<p class="card-summary">2 entries</p>')
  })
})
