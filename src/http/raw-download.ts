// A file's raw bytes streamed to the client a slice at a time (GET /api/v1/workspace/raw): each
// slice is one short query on a pooled connection and is written before the next is read, so a
// download holds one slice of memory and no connection between slices, whatever the file's size
// or the number of downloads at once (a whole 50 MB value read in one query held ~2–3× its size,
// and twelve at once had taken the server past 1.3 GB and the pool dry).
import type { ServerResponse } from 'node:http'
import { readRawSlice, type RawVersion } from '../effects/workspace/file-contents.ts'
import type { Db } from '../effects/db/schema.ts'
import { whenClientGone } from './client-gone.ts'

export const RAW_SLICE_BYTES = 1 << 20

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
