// The built-in "Local extractive (no LLM)" model and the extractive text functions it shares
// with compile jobs. Everything outside this folder imports from here.
export { DEFAULT_LOCAL_DELTA_DELAY_MS, LOCAL_MODEL_INFO, makeLocalChatModel, type LocalChatModelOptions } from './local-model.ts'
export {
  summariseAbstract,
  summariseDocument,
  summariseOverview,
  type SummarisedDocument,
} from './summaries.ts'
export { readOverview, readSummary, writeAbstract, writeOverview, writeSummary } from './compile-pages.ts'
export { outlineDocument, type DocumentOutline, type KeyPoint } from './outline.ts'
