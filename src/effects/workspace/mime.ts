// File-name → media type, for uploads, imports and the L2 parser. Pure; no sniffing here.

export const OCTET_STREAM = 'application/octet-stream'

export const DOCX_MIME = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'

const MIME_BY_EXTENSION: Readonly<Record<string, string>> = {
  // text the parser understands
  md: 'text/markdown',
  markdown: 'text/markdown',
  txt: 'text/plain',
  text: 'text/plain',
  log: 'text/plain',
  html: 'text/html',
  htm: 'text/html',
  json: 'application/json',
  csv: 'text/csv',
  pdf: 'application/pdf',
  docx: DOCX_MIME,
  // other text
  tsv: 'text/tab-separated-values',
  xml: 'application/xml',
  svg: 'image/svg+xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  toml: 'application/toml',
  ini: 'text/plain',
  css: 'text/css',
  js: 'text/javascript',
  mjs: 'text/javascript',
  cjs: 'text/javascript',
  ts: 'text/x-typescript',
  py: 'text/x-python',
  sh: 'application/x-sh',
  sql: 'application/sql',
  rst: 'text/x-rst',
  tex: 'application/x-tex',
  rtf: 'application/rtf',
  ics: 'text/calendar',
  vtt: 'text/vtt',
  srt: 'application/x-subrip',
  // binary
  doc: 'application/msword',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  ppt: 'application/vnd.ms-powerpoint',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  odt: 'application/vnd.oasis.opendocument.text',
  epub: 'application/epub+zip',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  bmp: 'image/bmp',
  ico: 'image/vnd.microsoft.icon',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  mp4: 'video/mp4',
  webm: 'video/webm',
  zip: 'application/zip',
  gz: 'application/gzip',
  tgz: 'application/gzip',
  tar: 'application/x-tar',
  '7z': 'application/x-7z-compressed',
  wasm: 'application/wasm',
  exe: 'application/vnd.microsoft.portable-executable',
  bin: OCTET_STREAM,
}

/**
 * Lower-case extension without the dot, or '' when there is none. Accepts a bare name, a
 * path or a URI (only the last segment counts). A leading dot is not an extension
 * (`.gitignore` → ''), but `.overview.md` → 'md'.
 */
export const extensionOf = (name: string): string => {
  const base = name.slice(name.lastIndexOf('/') + 1)
  const dot = base.lastIndexOf('.')
  if (dot <= 0 || dot === base.length - 1) return ''
  return base.slice(dot + 1).toLowerCase()
}

/** Media type for a file name; `application/octet-stream` when the extension is unknown. */
export const mimeFromName = (name: string): string =>
  MIME_BY_EXTENSION[extensionOf(name)] ?? OCTET_STREAM

/** `Text/HTML; charset=utf-8` → `text/html`; '' for something that is not a media type. */
export const essenceOf = (mime: string): string => {
  const essence = (mime.split(';')[0] ?? '').trim().toLowerCase()
  return /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(essence) ? essence : ''
}

/** Whether a media type's body is text (so it can be decoded and read as is). */
export const isTextMime = (mime: string): boolean => {
  const essence = essenceOf(mime)
  if (essence === '') return false
  if (essence.startsWith('text/')) return true
  if (essence.endsWith('+xml') || essence.endsWith('+json')) return true
  return TEXTUAL_APPLICATION_TYPES.has(essence)
}

const TEXTUAL_APPLICATION_TYPES: ReadonlySet<string> = new Set([
  'application/json',
  'application/xml',
  'application/yaml',
  'application/toml',
  'application/javascript',
  'application/x-sh',
  'application/sql',
  'application/x-tex',
  'application/x-subrip',
  'application/rtf',
])
