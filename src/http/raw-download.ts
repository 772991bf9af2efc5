// A file's raw bytes streamed to the client a slice at a time (GET /api/v1/workspace/raw): each
// slice is one short query on a pooled connection and is written before the next is read, so a
// download holds one slice of memory and no connection between slices, whatever the file's size
// or the number of downloads at once (a whole 50 MB value read in one query held ~2–3× its size,
// and twelve at once had taken the server past 1.3 GB and the pool dry).
//
// Stored bytes are the user's (or an attacker's) content, served from the app's own origin, whose
// policy allows `script-src 'self'`: one HTML injection anywhere could load an uploaded `.js` as
// the app's script (issue 34). So a raw answer can never execute or render as active content:
// only passive types keep their type (images for the previews, PDF, plain text and data, office
// documents, audio, video); JavaScript, HTML, XML, CSS and the like are sent as text/plain, unknown
// binary as application/octet-stream — with nosniff, a browser refuses either as a script or a
// stylesheet — always as an attachment (a download, never a page), and under a policy that
// sandboxes the document and allows no script should a browser render it anyway.
import type { ServerResponse } from 'node:http'
import { readRawSlice, type RawVersion } from '../effects/workspace/file-contents.ts'
import type { Db } from '../effects/db/schema.ts'
import { essenceOf, isTextMime, OCTET_STREAM } from '../effects/workspace/mime.ts'
import { whenClientGone } from './client-gone.ts'

export const RAW_SLICE_BYTES = 1 << 20

/** The policy of every raw answer: a sandboxed document that may show images and nothing active. */
export const RAW_CONTENT_SECURITY_POLICY = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox"

const PASSIVE_TYPES: ReadonlySet<string> = new Set([
  'text/plain',
  'text/markdown',
  'text/csv',
  'text/tab-separated-values',
  'text/calendar',
  'text/vtt',
  'application/json',
  'application/pdf',
  'application/zip',
  'application/gzip',
  'application/epub+zip',
  'application/msword',
  'application/rtf',
  OCTET_STREAM,
])

/** The Content-Type a file stored as `mime` is sent with: its own when passive, else text/plain or application/octet-stream. */
export function rawResponseType(mime: string): string {
  const essence = essenceOf(mime)
  const passive =
    PASSIVE_TYPES.has(essence) ||
    /^(image|audio|video)\/[a-z0-9.+-]+$/.test(essence) ||
    /^application\/vnd\.(openxmlformats-officedocument|oasis\.opendocument|ms-excel|ms-powerpoint)[a-z0-9.+-]*$/.test(essence)
  if (passive) return mime
  return isTextMime(mime) ? 'text/plain; charset=utf-8' : OCTET_STREAM
}

/** A name as an RFC 5987 ext-value: percent-encoded UTF-8, with `'`, `(`, `)` and `*` encoded too (encodeURIComponent leaves them). */
function rfc5987(name: string): string {
  return encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

/** A download's Content-Disposition: an attachment named by an RFC 5987 ext-value (any name, CJK, quotes, spaces). */
export function attachmentDisposition(fileName: string): string {
  return `attachment; filename*=UTF-8''${rfc5987(fileName)}`
}

/** The headers of a raw answer, besides its length: see the top of this file. */
export function rawResponseHeaders({ mime, fileName }: { readonly mime: string; readonly fileName: string }): Record<string, string> {
  return {
    'Content-Type': rawResponseType(mime),
    'Content-Disposition': attachmentDisposition(fileName),
    'Content-Security-Policy': RAW_CONTENT_SECURITY_POLICY,
    'X-Content-Type-Options': 'nosniff',
    'Cross-Origin-Resource-Policy': 'same-origin',
  }
}

/** Writes `version`'s bytes after the caller has set the headers; ends the response, or destroys it when the version vanished mid-way. */
export async function streamRawVersion(
  db: Db,
  res: ServerResponse,
  version: RawVersion,
  {
    sliceBytes = RAW_SLICE_BYTES,
    readSlice = readRawSlice,
  }: {
    sliceBytes?: number
    /** How a slice is read (tests hold the stream between two slices). */
    readSlice?: typeof readRawSlice
  } = {},
): Promise<void> {
  let gone = false
  let wake: (() => void) | undefined
  const unwatch = whenClientGone(res, () => {
    gone = true
    wake?.()
  })
  try {
    res.setHeader('Content-Length', String(version.length))
    res.flushHeaders()
    for (let offset = 0; offset < version.length && !gone; offset += sliceBytes) {
      const slice = await readSlice(db, { versionId: version.versionId, offset, length: Math.min(sliceBytes, version.length - offset) })
      if (slice === undefined || gone) {
        // The file was deleted while it was sent: the client sees a body shorter than its Content-Length, never a mix.
        res.destroy()
        return
      }
      if (!res.write(slice)) {
        await new Promise<void>((resolve) => {
          wake = resolve
          res.once('drain', resolve)
        })
        wake = undefined
      }
    }
    if (!gone) res.end()
  } finally {
    unwatch()
  }
}
