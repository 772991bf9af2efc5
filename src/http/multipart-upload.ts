// Reads a multipart upload fully (bounded) before anything is stored, so a rejected request
// leaves nothing half-written.
import Busboy from 'busboy'
import type { Request } from 'express'
import { HttpError } from './http-errors.ts'

export interface UploadedFile {
  readonly name: string
  readonly bytes: Uint8Array
}

export async function readMultipartFiles(
  req: Request,
  { maxFileBytes, maxFiles }: { maxFileBytes: number; maxFiles: number },
): Promise<{ files: UploadedFile[]; fields: Record<string, string> }> {
  if (!(req.get('content-type') ?? '').startsWith('multipart/form-data')) {
    throw new HttpError(415, 'unsupported_media_type', 'send the files as multipart/form-data (field "file")')
  }
  return new Promise((resolve, reject) => {
    const files: UploadedFile[] = []
    const fields: Record<string, string> = {}
    let failed = false
    const fail = (error: HttpError) => {
      if (failed) return
      failed = true
      req.unpipe(parser)
      req.resume()
      reject(error)
    }
    let parser: ReturnType<typeof Busboy>
    try {
      parser = Busboy({
        headers: req.headers,
        limits: { fileSize: maxFileBytes, files: maxFiles, fields: 20, fieldSize: 4096 },
        defParamCharset: 'utf8',
      })
    } catch (error) {
      reject(new HttpError(400, 'bad_multipart', `malformed multipart request: ${(error as Error).message}`))
      return
    }
    parser.on('field', (name, value) => {
      fields[name] = value
    })
    parser.on('file', (_field, stream, info) => {
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('limit', () =>
        fail(new HttpError(413, 'payload_too_large', `${info.filename} is larger than the ${maxFileBytes}-byte limit; nothing was stored`)),
      )
      stream.on('end', () => {
        if (!failed) files.push({ name: info.filename ?? '', bytes: new Uint8Array(Buffer.concat(chunks)) })
      })
    })
    parser.on('filesLimit', () => fail(new HttpError(413, 'too_many_files', `at most ${maxFiles} files per upload; nothing was stored`)))
    parser.on('error', (error: Error) => fail(new HttpError(400, 'bad_multipart', `malformed multipart request: ${error.message}`)))
    parser.on('close', () => {
      if (!failed) resolve({ files, fields })
    })
    req.pipe(parser)
  })
}
