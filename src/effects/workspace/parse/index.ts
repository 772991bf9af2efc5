// L2 parsing (SPEC §1, §8): raw file bytes → plain text body, one module per format.
export * from './parse-outcome.ts'
export { parseDocument, resolveType, type ParseInput } from './parse-document.ts'
export {
  DEFAULT_PARSE_MEMORY_MB,
  DEFAULT_PARSE_TIMEOUT_MS,
  DocumentParserService,
  defaultParserThreads,
  makeDocumentParser,
  type DocumentParser,
  type DocumentParserOptions,
  type ParseRequest,
  type ParserActivity,
} from './document-parser.ts'
