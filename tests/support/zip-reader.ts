// A zip read back with a real reader (yauzl): every entry's name as decoded by its UTF-8 flag,
// whether the flag was set, and its bytes. For the export tests.
import yauzl from 'yauzl'

export interface ReadEntry {
  readonly directory: boolean
  readonly utf8Flag: boolean
  readonly bytes: Buffer
}

export function readZip(zip: Buffer): Promise<Map<string, ReadEntry>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(zip, { lazyEntries: true, decodeStrings: true, validateEntrySizes: true, strictFileNames: true }, (error, file) => {
      if (error) return reject(error)
      const entries = new Map<string, ReadEntry>()
      file.on('error', reject)
      file.on('end', () => resolve(entries))
      file.on('entry', (entry: yauzl.Entry) => {
        const utf8Flag = (entry.generalPurposeBitFlag & 0x800) !== 0
        if (entry.fileName.endsWith('/')) {
          entries.set(entry.fileName, { directory: true, utf8Flag, bytes: Buffer.alloc(0) })
          file.readEntry()
          return
        }
        file.openReadStream(entry, (streamError, stream) => {
          if (streamError) return reject(streamError)
          const parts: Buffer[] = []
          stream.on('data', (part: Buffer) => parts.push(part))
          stream.on('error', reject)
          stream.on('end', () => {
            entries.set(entry.fileName, { directory: false, utf8Flag, bytes: Buffer.concat(parts) })
            file.readEntry()
          })
        })
      })
      file.readEntry()
    })
  })
}
