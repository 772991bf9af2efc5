// Names as they are shown: the characters a name may not hold because they hide or reorder text,
// and a name quoted in a message so that such characters cannot hide or reverse the message.

// Characters that render as nothing (or reorder what follows) let one name pose as another:
// "invoice\u202Efdp.exe" shows as "invoiceexe.pdf". Refused in every name a user creates
// (checkNodeName, uri.ts): controls (Cc), format characters (Cf: bidi overrides and isolates
// U+202A–U+202E and U+2066–U+2069, zero-width U+200B–U+200D, U+2060, U+FEFF, soft hyphen, tags),
// line and paragraph separators, and the Hangul fillers that display as blank.
export const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u115F\u1160\u3164\uFFA0]/u

const EVERY_INVISIBLE = new RegExp(INVISIBLE.source, 'gu')

/**
 * A name as a message quotes it: in double quotes, at most 300 characters, every invisible or
 * reordering character written as its code point (`\u{202E}`), so a refused name cannot reverse
 * or hide the message that refuses it.
 */
export function quotedName(name: string): string {
  return JSON.stringify(name.slice(0, 300)).replace(EVERY_INVISIBLE, (ch) => `\\u{${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase()}}`)
}
