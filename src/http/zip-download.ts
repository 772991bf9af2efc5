// A folder's zip streamed to the client (GET /api/v1/workspace/export): the export use case
// (src/effects/workspace/export-zip.ts) written straight into the response, with no length (the
// zip's size is known only at its end). A client that goes away aborts it: no slice is read after
// that, and no database connection is held. A failure once bytes are out destroys the response, so
// the client sees a failed download, never a short zip that looks whole (the error handler would end it).
import type { ServerResponse } from 'node:http'
import type { Db, Owner } from '../effects/db/schema.ts'
import type { Logger } from '../effects/logging/logger.ts'
import { exportFileName, writeFolderZip } from '../effects/workspace/export-zip.ts'
import type { readRawSlice } from '../effects/workspace/file-contents.ts'
import type { WorkspaceNode } from '../effects/workspace/store.ts'
import { whenClientGone } from './client-gone.ts'
import { attachmentDisposition, RAW_CONTENT_SECURITY_POLICY } from './raw-download.ts'

export function zipResponseHeaders({ fileName }: { readonly fileName: string }): Record<string, string> {
  return {
    'Content-Type': 'application/zip',
    'Content-Disposition': attachmentDisposition(fileName),
    'Content-Security-Policy': RAW_CONTENT_SECURITY_POLICY,
    'X-Content-Type-Options': 'nosniff',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'Cache-Control': 'no-store',
  }
}

/** Sends `folder` as a zip after the caller has resolved and admitted it; settles when the response is done or abandoned. */
export async function streamFolderZip(
  db: Db,
  res: ServerResponse,
  {
    owner,
    folder,
    logger,
    sliceBytes,
    readSlice,
  }: {
    owner: Owner
    folder: WorkspaceNode
    logger: Logger
    sliceBytes?: number
    /** How a slice is read (tests hold the export between two slices). */
    readSlice?: typeof readRawSlice
  },
): Promise<void> {
  const controller = new AbortController()
  const unwatch = whenClientGone(res, () => controller.abort(new Error('the client went away')))
  try {
    for (const [name, value] of Object.entries(zipResponseHeaders({ fileName: exportFileName({ owner, folder }) }))) res.setHeader(name, value)
    res.flushHeaders()
    await writeFolderZip(db, { owner, folder, output: res, signal: controller.signal, sliceBytes, readSlice })
  } catch (error) {
    if (!controller.signal.aborted) logger.warn('zip export failed mid-way', { error: error instanceof Error ? error.message : String(error) })
    res.destroy()
  } finally {
    unwatch()
  }
}
