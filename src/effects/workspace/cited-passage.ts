// The passage a citation or a search hit points at: from its code-point offset to the end of that
// paragraph (or sentence, or line), bounded, with text around it to read it in. Pure.
import { codePointLength, sliceCodePoints } from './text-paging.ts'

const LOOK_AHEAD = 600
const MIN_PASSAGE = 40
const FALLBACK_PASSAGE = 300
const BEFORE = 20_000
const AFTER = 60_000

export interface CitedWindow {
  readonly windowStart: number
  readonly offset: number
  readonly total: number
  readonly before: string
  readonly passage: string
  readonly after: string
}

/** Code points from `offset` to the end of its passage: a blank line, else a sentence end past a few words, else a line end. */
export function passageLength(text: string, offset: number): number {
  const ahead = sliceCodePoints({ text, start: offset, end: offset + LOOK_AHEAD })
  const chars = Array.from(ahead)
  const joined = chars.join('')
  const paragraph = /\n\s*\n/.exec(joined)
  if (paragraph && paragraph.index > 0) return Array.from(joined.slice(0, paragraph.index)).length
  const sentence = new RegExp(`^[\\s\\S]{${MIN_PASSAGE},}?[.!?。！？](?=\\s|$)`, 'u').exec(joined)
  if (sentence) return Array.from(sentence[0]).length
  const line = joined.indexOf('\n', 1)
  if (line > 0) return Array.from(joined.slice(0, line)).length
  return Math.min(chars.length, FALLBACK_PASSAGE)
}

/** The text around `offset` (clamped to the text), split into before / passage / after. */
export function citedWindow({ text, offset }: { text: string; offset: number }): CitedWindow {
  const total = codePointLength(text)
  const at = Math.max(0, Math.min(Math.floor(offset), total))
  const end = at + passageLength(text, at)
  const windowStart = Math.max(0, at - BEFORE)
  return {
    windowStart,
    offset: at,
    total,
    before: sliceCodePoints({ text, start: windowStart, end: at }),
    passage: sliceCodePoints({ text, start: at, end }),
    after: sliceCodePoints({ text, start: end, end: Math.min(total, end + AFTER) }),
  }
}
