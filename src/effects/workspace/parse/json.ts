// JSON: validated (the first syntax error located by line, column and code-point position) and
// re-indented with every string and number token copied verbatim.
import { codePointLength } from '../text-paging.ts'
import { failure, messageOf, success, type FormatInput, type ParseOutcome } from './parse-outcome.ts'
import { decodeText } from './text-decoding.ts'

export interface JsonSyntaxError {
  /** UTF-16 index of the offending character (text.length at an unexpected end). */
  readonly index: number
  readonly reason: string
}

const describeChar = (text: string, index: number): string => {
  const ch = String.fromCodePoint(text.codePointAt(index) ?? 0)
  return /^[\x21-\x7e]$/.test(ch) ? `'${ch}'` : `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`
}

/**
 * Locates the first syntax error in `text` under RFC 8259, without recursion (deep nesting
 * must not overflow the stack). Returns undefined for valid JSON. Used only after `JSON.parse`
 * failed, whose messages do not always say where.
 */
export const findJsonSyntaxError = (text: string): JsonSyntaxError | undefined => {
  type State = 'value' | 'firstValue' | 'firstKey' | 'key' | 'colon' | 'after'
  const stack: Array<'{' | '['> = []
  let state: State = 'value'
  let i = 0
  const n = text.length
  const skipSpace = (): void => {
    while (i < n) {
      const c = text.charCodeAt(i)
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break
      i++
    }
  }
  const unexpected = (expected: string): JsonSyntaxError =>
    i >= n ? { index: n, reason: `unexpected end of input, expected ${expected}` } : { index: i, reason: `unexpected ${describeChar(text, i)}, expected ${expected}` }
  const scanString = (): JsonSyntaxError | undefined => {
    i++ // opening quote
    while (i < n) {
      const c = text.charCodeAt(i)
      if (c === 0x22) {
        i++
        return undefined
      }
      if (c < 0x20) return { index: i, reason: `unescaped control character ${describeChar(text, i)} in a string` }
      if (c === 0x5c) {
        const e = text[i + 1]
        if (e === undefined) break
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return { index: i, reason: 'invalid \\u escape in a string (needs 4 hex digits)' }
          i += 6
          continue
        }
        if (!'"\\/bfnrt'.includes(e)) return { index: i, reason: `invalid escape '\\${e}' in a string` }
        i += 2
        continue
      }
      i++
    }
    return { index: n, reason: 'unterminated string' }
  }
  const scanNumber = (): JsonSyntaxError | undefined => {
    const match = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y
    match.lastIndex = i
    const found = match.exec(text)
    if (found === null || found[0] === '-' || found[0] === '') return unexpected('a value')
    i += found[0].length
    // '01', '1.', '1e' leave a digit, '.', or 'e' behind that nothing else accepts.
    const next = text[i]
    if (next !== undefined && /[0-9.eE+-]/.test(next)) return { index: i, reason: `invalid number (unexpected ${describeChar(text, i)})` }
    return undefined
  }
  while (true) {
    skipSpace()
    const ch = text[i]
    switch (state) {
      case 'firstValue':
        if (ch === ']') {
          stack.pop()
          i++
          state = 'after'
          continue
        }
      // falls through
      case 'value': {
        if (ch === '{') {
          stack.push('{')
          i++
          state = 'firstKey'
          continue
        }
        if (ch === '[') {
          stack.push('[')
          i++
          state = 'firstValue'
          continue
        }
        let error: JsonSyntaxError | undefined
        if (ch === '"') error = scanString()
        else if (ch !== undefined && /[-0-9]/.test(ch)) error = scanNumber()
        else {
          const literal = ['true', 'false', 'null'].find((word) => text.startsWith(word, i))
          if (literal === undefined) return unexpected('a value')
          i += literal.length
        }
        if (error !== undefined) return error
        state = 'after'
        continue
      }
      case 'firstKey':
        if (ch === '}') {
          stack.pop()
          i++
          state = 'after'
          continue
        }
      // falls through
      case 'key': {
        if (ch !== '"') return unexpected(state === 'firstKey' ? "a property name in double quotes or '}'" : 'a property name in double quotes')
        const error = scanString()
        if (error !== undefined) return error
        state = 'colon'
        continue
      }
      case 'colon':
        if (ch !== ':') return unexpected("':' after a property name")
        i++
        state = 'value'
        continue
      case 'after': {
        const top = stack.at(-1)
        if (top === undefined) return ch === undefined ? undefined : unexpected('the end of the input (there is more than one value)')
        const close = top === '{' ? '}' : ']'
        if (ch === ',') {
          i++
          state = top === '{' ? 'key' : 'value'
          continue
        }
        if (ch === close) {
          stack.pop()
          i++
          continue
        }
        return unexpected(`',' or '${close}'`)
      }
    }
  }
}

/** Re-indents valid JSON with two spaces, copying every string and number token verbatim
 *  (`JSON.stringify(JSON.parse(…))` would turn 1e400 into null and round big integers). */
export const prettyPrintJson = (text: string): string => {
  const out: string[] = []
  const space = /[ \t\n\r]*/y
  const bare = /[^ \t\n\r,:{}[\]"]+/y // numbers, true, false, null
  let depth = 0
  let i = 0
  const n = text.length
  const newline = (): void => {
    out.push('\n', '  '.repeat(depth))
  }
  const skipSpace = (from: number): number => {
    space.lastIndex = from
    space.exec(text)
    return space.lastIndex
  }
  while (i < n) {
    const ch = text[i]
    if (ch === '"') {
      // The closing quote is the first one preceded by an even number of backslashes.
      let close = text.indexOf('"', i + 1)
      for (;;) {
        let backslashes = 0
        while (text[close - 1 - backslashes] === '\\') backslashes++
        if (close === -1 || backslashes % 2 === 0) break
        close = text.indexOf('"', close + 1)
      }
      const end = close === -1 ? n : close + 1
      out.push(text.slice(i, end))
      i = end
    } else if (ch === '{' || ch === '[') {
      const next = skipSpace(i + 1)
      if (text[next] === (ch === '{' ? '}' : ']')) {
        out.push(ch === '{' ? '{}' : '[]')
        i = next + 1
      } else {
        out.push(ch)
        depth++
        newline()
        i++
      }
    } else if (ch === '}' || ch === ']') {
      depth--
      newline()
      out.push(ch)
      i++
    } else if (ch === ',') {
      out.push(',')
      newline()
      i++
    } else if (ch === ':') {
      out.push(': ')
      i++
    } else if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      i = skipSpace(i)
    } else {
      bare.lastIndex = i
      const token = bare.exec(text)
      const length = token === null ? 1 : token[0].length
      out.push(text.slice(i, i + length))
      i += length
    }
  }
  return out.join('')
}

const lineAndColumn = (text: string, index: number): { line: number; column: number } => {
  const before = text.slice(0, index)
  const lastBreak = before.lastIndexOf('\n')
  return { line: before.split('\n').length, column: codePointLength(before.slice(lastBreak + 1)) + 1 }
}

export const parseJson = ({ bytes, mime }: FormatInput): ParseOutcome => {
  const decoded = decodeText(bytes, { allowNul: 'never' })
  if (!decoded.ok) return failure(mime, decoded.code, decoded.error)
  const text = decoded.text.replace(/^\uFEFF/, '')
  try {
    JSON.parse(text)
    return success(mime, 'json', prettyPrintJson(text))
  } catch (cause) {
    const located = findJsonSyntaxError(text)
    if (located === undefined) return failure(mime, 'invalid_json', `invalid JSON: ${messageOf(cause)}`)
    const { line, column } = lineAndColumn(text, located.index)
    const position = codePointLength(text.slice(0, located.index))
    return failure(mime, 'invalid_json', `invalid JSON at line ${line}, column ${column} (position ${position}): ${located.reason}`)
  }
}
