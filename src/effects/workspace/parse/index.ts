// L2 parsing (SPEC §1, §8): raw file bytes → plain text body, one module per format.
// The server's main thread imports document-parser.ts directly, which never loads the parsers.
export * from './parse-outcome.ts'
export { parseDocument, resolveType, type ParseInput } from './parse-document.ts'
export {
  DocumentParserService,
  makeDocumentParser,
  type DocumentParser,
  type DocumentParserOptions,
  type ParseRequest,
  type ParserActivity,
} from './document-parser.ts'
