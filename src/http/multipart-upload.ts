// Reads a multipart upload as it arrives, never more than a small buffer in memory: each file is
// streamed to a private spool folder with a running byte count. Everything is checked before a
// byte of it is kept: the CSRF token of a form (its first part), field names, the number of
// files, each file's size and name. Any problem ends the read at once with a 4xx; a truncated
// or malformed body is a 400 (`bad_multipart`), never an unhandled stream error. The spool
// folder is removed on every path: the caller disposes of a successful read, a failed read
// removes it itself.
import Busboy from 'busboy'
import type { Request } from 'express'
import { createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { checkNodeName } from '../effects/workspace/uri.ts'
import { quotedName } from '../effects/workspace/name-display.ts'
import { HttpError } from './http-errors.ts'

export interface SpooledFile {
  /** The name as given, checked by the node-name rule and in NFC. */
  readonly name: string
  /** Where its bytes are, in the spool folder. */
  readonly path: string
  readonly size: number
}

export interface MultipartUpload {
  readonly files: ReadonlyArray<SpooledFile>
  /** The `uri` field, when the form sent one. */
  readonly uri: string | undefined
  /** The private spool folder (for more files that belong to this request, such as parsed text). */
  readonly directory: string
  /** Removes the spool folder; safe to call more than once. */
  readonly dispose: () => Promise<void>
}

export interface MultipartOptions {
  /** A file of exactly this size is accepted; one byte more is a 413. */
  readonly maxFileBytes: number
  readonly maxFiles: number
  /** The folder under which each request gets its own spool folder. */
  readonly spoolRoot: string
  /**
   * For a cookie session that sent no X-CSRF-Token header: the first part must be the `_csrf`
   * field and pass this check, or the request is refused before any file byte is read.
   */
  readonly csrfFirstPart?: ((token: string) => boolean) | undefined
  /** Aborted when the client goes away. */
  readonly signal?: AbortSignal | undefined
}

const FIELD_LIMIT_BYTES = 4096

export const badMultipart = (detail: string) => new HttpError(400, 'bad_multipart', `malformed multipart request: ${detail}`)
const csrfRefused = () =>
  new HttpError(403, 'csrf', 'missing or invalid CSRF token (send the X-CSRF-Token header, or a _csrf field as the first part of the form)')
const unexpectedField = (name: string) =>
  new HttpError(400, 'unexpected_field', `unexpected field "${name.slice(0, 100)}": an upload has files in "file" and, optionally, "uri" and "_csrf"`)

/**
 * A file name as the user chose it: browsers (and fetch's FormData) send `"` as `%22` and line
 * breaks as `%0D` / `%0A` in a multipart filename, as the HTML standard says; those three are
 * turned back. Any other percent sign stays, and the name rule refuses what looks like an escape.
 */
function htmlFormFileName(sent: string): string {
  return sent.replace(/%(22|0D|0A)/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
}

export async function readMultipartUpload(req: Request, options: MultipartOptions): Promise<MultipartUpload> {
  if (!(req.get('content-type') ?? '').toLowerCase().startsWith('multipart/form-data')) {
    throw new HttpError(415, 'unsupported_media_type', 'send the files as multipart/form-data (field "file")')
  }
  const encoding = (req.get('content-encoding') ?? 'identity').trim().toLowerCase()
  if (encoding !== 'identity') {
    throw new HttpError(415, 'unsupported_content_encoding', `uploads are not accepted with Content-Encoding "${encoding.slice(0, 40)}"; send the files as they are`)
  }
  let parser: Busboy.Busboy
  try {
    parser = Busboy({
      headers: req.headers,
      preservePath: true, // names are checked as given; busboy would silently keep only the last path part
      defParamCharset: 'utf8',
      limits: {
        fileSize: options.maxFileBytes + 1, // busboy stops at this size: a file that reaches it is over the limit
        files: options.maxFiles,
        fields: 2,
        parts: options.maxFiles + 2,
        fieldSize: FIELD_LIMIT_BYTES,
        headerPairs: 16,
      },
    })
  } catch (error) {
    throw badMultipart((error as Error).message)
  }
  const directory = await mkdtemp(join(options.spoolRoot, 'knowagent-upload-'))
  const dispose = (): Promise<void> => rm(directory, { recursive: true, force: true })
  try {
    return await new Promise<MultipartUpload>((resolve, reject) => {
      const files: SpooledFile[] = []
      const names = new Set<string>()
      const writes: Promise<void>[] = []
      let uri: string | undefined
      let expectCsrf = options.csrfFirstPart !== undefined
      let settled = false

      const stop = (error: unknown): void => {
        if (settled) return
        settled = true
        detach()
        req.unpipe(parser)
        parser.destroy() // ends an open file part; its spool write fails and is cleaned up below
        reject(error)
      }
      const onAbort = (): void => stop(new HttpError(499, 'client_closed', 'the client closed the request'))
      const onRequestClose = (): void => {
        if (!req.complete) onAbort()
      }
      const detach = (): void => {
        options.signal?.removeEventListener('abort', onAbort)
        req.off('close', onRequestClose)
        req.off('error', onAbort)
      }
      if (options.signal?.aborted === true) return onAbort()
      options.signal?.addEventListener('abort', onAbort, { once: true })
      req.on('close', onRequestClose)
      req.on('error', onAbort)
      if (req.destroyed && !req.complete) return onAbort() // the client left before the body was read (its 'close' has fired)

      parser.on('field', (name, value, info) => {
        if (settled) return
        if (expectCsrf) {
          expectCsrf = false
          if (name !== '_csrf' || !options.csrfFirstPart!(value)) return stop(csrfRefused())
          return
        }
        if (info.valueTruncated || info.nameTruncated) return stop(new HttpError(400, 'field_too_large', `field "${name.slice(0, 100)}" is longer than ${FIELD_LIMIT_BYTES} bytes`))
        if (name === '_csrf') return
        if (name !== 'uri') return stop(unexpectedField(name))
        if (uri !== undefined) return stop(new HttpError(400, 'duplicate_field', 'the "uri" field appears twice'))
        uri = value
      })

      parser.on('file', (field, stream: Readable, info) => {
        // A part refused below is destroyed with the parser while its data may still be coming:
        // its stream then errors, and an 'error' nobody listens for would end the process.
        stream.on('error', () => {})
        if (settled) return void stream.resume()
        if (expectCsrf) return stop(csrfRefused())
        if (field !== 'file') return stop(unexpectedField(field))
        const sent = info.filename
        if (sent === undefined || sent === '') return stop(new HttpError(400, 'invalid_name', 'a file part needs a filename'))
        // busboy decodes the name as UTF-8, putting U+FFFD where the bytes were not: refused, never stored rewritten.
        if (sent.includes('\uFFFD')) return stop(new HttpError(400, 'invalid_name', `file name ${quotedName(sent)} is not valid UTF-8`))
        const raw = htmlFormFileName(sent)
        const checked = checkNodeName(raw)
        if (!checked.ok) return stop(new HttpError(400, 'invalid_name', `file name ${quotedName(raw)} is not allowed: ${checked.reason}`))
        if (names.has(checked.name)) return stop(new HttpError(400, 'duplicate_name', `${quotedName(checked.name)} appears twice in one upload`))
        names.add(checked.name)
        const path = join(directory, String(files.length))
        let size = 0
        stream.on('data', (chunk: Buffer) => {
          size += chunk.length
        })
        stream.on('limit', () =>
          stop(new HttpError(413, 'payload_too_large', `"${checked.name}" is larger than the ${options.maxFileBytes}-byte limit; nothing was stored`)),
        )
        files.push({ name: checked.name, path, get size() { return size } })
        // An error here (the body was cut short, the disk is full) fails the upload; never unhandled.
        writes.push(pipeline(stream, createWriteStream(path, { flags: 'wx', mode: 0o600 })).catch((error: unknown) => stop(settled ? error : badMultipart((error as Error).message))))
      })

      parser.on('filesLimit', () => stop(new HttpError(413, 'too_many_files', `at most ${options.maxFiles} files per upload; nothing was stored`)))
      parser.on('fieldsLimit', () => stop(new HttpError(400, 'unexpected_field', 'too many fields: an upload has files in "file" and, optionally, "uri" and "_csrf"')))
      parser.on('partsLimit', () => stop(new HttpError(413, 'too_many_files', `at most ${options.maxFiles} files per upload; nothing was stored`)))
      parser.on('error', (error: Error) => stop(badMultipart(error.message)))
      parser.on('close', () => {
        void Promise.all(writes).then(() => {
          if (settled) return
          if (expectCsrf) return stop(csrfRefused()) // an empty form: no _csrf part at all
          settled = true
          detach()
          resolve({ files: files.map(({ name, path, size }) => ({ name, path, size })), uri, directory, dispose })
        })
      })
      req.pipe(parser)
    })
  } catch (error) {
    await dispose()
    throw error
  }
}
