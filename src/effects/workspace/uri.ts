// Logical workspace URIs (SPEC §1). `kb://users/<login>/<path…>`; `kb://users/` and `kb://me/`
// normalise to the caller's own root. A URI is never a disk path: anything that could be read
// as traversal or an escape is refused with a clear reason.
import { InvalidUri, OutsideScope } from './workspace-errors.ts'
import { INVISIBLE } from './name-display.ts'

export const URI_SCHEME = 'kb://'
export const MAX_URI_LENGTH = 4096
export const MAX_SEGMENT_BYTES = 255
export const MAX_DEPTH = 64
const LOGIN_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/
const RESERVED_LOGINS = new Set(['me', 'users'])

export interface WorkspacePath {
  /** Owner login. */
  readonly login: string
  /** Decoded, validated segments below the owner's root ([] = the root). */
  readonly segments: ReadonlyArray<string>
}

export function validateLogin(login: string): string | undefined {
  if (!LOGIN_PATTERN.test(login)) {
    return 'a login is 1–63 characters of lowercase letters, digits, "-" and "_", starting with a letter or digit'
  }
  if (RESERVED_LOGINS.has(login)) return `"${login}" is reserved`
  return undefined
}

/** Why a (decoded) name may not be a node name, or undefined when it may. */
export function validateSegment(name: string): string | undefined {
  if (name.length === 0) return 'empty path segment'
  if (name === '.' || name === '..') return `"${name}" segments are not allowed`
  if (/[\/\\]/.test(name)) return 'slashes and backslashes are not allowed inside a name'
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'control characters (including NUL) are not allowed'
  if (/%[0-9a-f]{2}/i.test(name)) return 'percent-encoded sequences are not allowed inside a name (double encoding)'
  if (name !== name.trim()) return 'names may not start or end with whitespace'
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(name)) {
    return 'names must be valid Unicode'
  }
  if (Buffer.byteLength(name, 'utf8') > MAX_SEGMENT_BYTES) return `names are at most ${MAX_SEGMENT_BYTES} bytes`
  return undefined
}

const codePointLabel = (ch: string): string => `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`

export type NodeNameCheck = { readonly ok: true; readonly name: string } | { readonly ok: false; readonly reason: string }

/**
 * The one rule for a name a user creates (upload, import, any new node): validated as given,
 * never rewritten, except into Unicode NFC, so that "café.md" composed and decomposed are one
 * name. Returns the name to store, or why it is refused.
 */
export function checkNodeName(raw: string): NodeNameCheck {
  if (/[\/\\]/.test(raw)) return { ok: false, reason: 'a name cannot hold a folder part ("/" or "\\"); upload or create the folder first' }
  const invisible = INVISIBLE.exec(raw)
  if (invisible) return { ok: false, reason: `invisible or control character ${codePointLabel(invisible[0])} is not allowed in a name` }
  const name = raw.normalize('NFC')
  const reason = validateSegment(name)
  return reason === undefined ? { ok: true, name } : { ok: false, reason }
}

function decodeSegment(raw: string, uri: string): string {
  let decoded: string
  try {
    decoded = decodeURIComponent(raw)
  } catch {
    throw new InvalidUri({ uri, reason: `malformed percent-encoding in "${raw}"` })
  }
  const reason = validateSegment(decoded)
  if (reason) throw new InvalidUri({ uri, reason })
  // Names are stored in NFC (checkNodeName), so a URI typed in another form finds them.
  return decoded.normalize('NFC')
}

/**
 * Parses and normalises a logical URI for `callerLogin`. Throws InvalidUri (malformed, traversal,
 * not a kb:// URI) or OutsideScope (another user's root).
 */
export function parseKbUri({ uri, callerLogin }: { uri: string; callerLogin: string }): WorkspacePath {
  if (typeof uri !== 'string') throw new InvalidUri({ uri: String(uri), reason: 'a URI must be a string' })
  if (uri.length > MAX_URI_LENGTH) throw new InvalidUri({ uri, reason: `longer than ${MAX_URI_LENGTH} characters` })
  if (uri.slice(0, URI_SCHEME.length).toLowerCase() !== URI_SCHEME) {
    throw new InvalidUri({
      uri,
      reason: 'expected a kb:// URI such as kb://me/notes/ (disk paths and other schemes are never accepted)',
    })
  }
  const rest = uri.slice(URI_SCHEME.length)
  if (/[?#]/.test(rest)) throw new InvalidUri({ uri, reason: 'query strings and fragments are not allowed' })
  if (rest.includes('\\')) throw new InvalidUri({ uri, reason: 'backslashes are not allowed' })
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(rest)) throw new InvalidUri({ uri, reason: 'control characters (including NUL) are not allowed' })
  const parts = rest.split('/')
  if (parts.at(-1) === '') parts.pop() // one trailing slash marks a directory; it is optional
  const authority = parts.shift()
  let login: string
  if (authority === 'me') {
    login = callerLogin
  } else if (authority === 'users') {
    const owner = parts.shift()
    if (owner === undefined) {
      login = callerLogin
    } else {
      const decodedOwner = decodeSegment(owner, uri)
      if (validateLogin(decodedOwner) !== undefined && decodedOwner !== callerLogin) {
        throw new InvalidUri({ uri, reason: `"${decodedOwner}" is not a valid user login` })
      }
      if (decodedOwner !== callerLogin) {
        throw new OutsideScope({ uri, reason: `kb://users/${decodedOwner}/ is another user's workspace` })
      }
      login = decodedOwner
    }
  } else if (authority === '') {
    throw new InvalidUri({ uri, reason: 'absolute paths are not allowed; start with kb://me/ or kb://users/<login>/' })
  } else {
    throw new InvalidUri({ uri, reason: `unknown root "${authority ?? ''}"; use kb://me/ or kb://users/<login>/` })
  }
  if (parts.length > MAX_DEPTH) throw new InvalidUri({ uri, reason: `deeper than ${MAX_DEPTH} levels` })
  const segments = parts.map((part) => decodeSegment(part, uri))
  return { login, segments }
}

/** Encodes a segment for display in a URI: only what would break parsing is escaped. */
function encodeSegment(segment: string): string {
  return segment.replace(/[%?#]/g, (c) => encodeURIComponent(c))
}

/** The canonical URI; directories (and the root) end with "/". */
export function formatKbUri({
  login,
  segments,
  directory,
}: {
  login: string
  segments: ReadonlyArray<string>
  directory: boolean
}): string {
  const path = segments.map(encodeSegment).join('/')
  if (segments.length === 0) return `${URI_SCHEME}users/${login}/`
  return `${URI_SCHEME}users/${login}/${path}${directory ? '/' : ''}`
}

/**
 * A canonical URI as written into text (compiled pages, what models read): whitespace and the
 * characters that end a URI in prose (quotes, brackets, `<`, `>`) percent-encoded, so the whole URI
 * is one token a reader, a renderer or a model can take as it is. `parseKbUri` reads it back to
 * the same node.
 */
export function linkableKbUri(uri: string): string {
  return uri.replace(/[\s<>"'`()[\]]/gu, (c) => encodeURIComponent(c).replace(/[!'()*]/g, (d) => `%${d.charCodeAt(0).toString(16).toUpperCase()}`))
}

/** The store's path key for a set of segments ("" is the root). */
export function segmentsToPath(segments: ReadonlyArray<string>): string {
  return segments.join('/')
}

export function pathToSegments(path: string): string[] {
  return path === '' ? [] : path.split('/')
}

/** True when `inner` is `outer` or lies below it. */
export function isWithin({ outer, inner }: { outer: WorkspacePath; inner: WorkspacePath }): boolean {
  if (outer.login !== inner.login) return false
  if (inner.segments.length < outer.segments.length) return false
  return outer.segments.every((segment, i) => inner.segments[i] === segment)
}
