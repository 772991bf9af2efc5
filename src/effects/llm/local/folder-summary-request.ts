// Whether a question asks what the files in scope are about as a whole (the local model's folder
// summary, folder-summary.ts), read from its words.
import { containsCjk, extractKeywords } from './terms.ts'

/** Words for the files in scope as a whole. */
const COLLECTION = String.raw`(?:files?|documents?|docs|folders?|director(?:y|ies)|notes|pages|workspace|scope|corpus|everything|wikis?|spaces?|knowledge\s+base)`
/** "these files", "this folder", "all the documents", "the engineering folder" (its name captured). */
const COLLECTIVE = new RegExp(
  String.raw`\b(?:(?:all\s+(?:of\s+)?)?(?:these|this|the|my|our|those)\s+(?:[\p{L}\p{N}._-]+\s+)??(?:([\p{L}\p{N}._-]+)\s+)?${COLLECTION}|everything(?:\s+here)?|all\s+(?:of\s+)?(?:them|it)` +
    // "these ADRs", "all the runbooks": a plural after these/those/all names the files in scope.
    String.raw`|(?:these|those|all\s+(?:of\s+)?(?:the|these|our|my))\s+(?:[\p{L}\p{N}._-]+\s+)?\p{L}[\p{L}\p{N}-]*s)\b`,
  'giu',
)
/** "What docs does finance have?": which files a team or a folder has. */
const WHAT_FILES_FORM = new RegExp(String.raw`^\s*what\s+(?:kinds?\s+of\s+)?(?:${COLLECTION})\s+(?:do|does)\s+(?:(?:we|you|i)\s+|the\s+)?([\p{L}\p{N}._-]+(?:\s+[\p{L}\p{N}._-]+)?)?\s*(?:have|hold|keep|contain)\s*[?？.!]*\s*$`, 'iu')
/** Asks for the gist: summarise, sum up, an overview, the gist, tl;dr. */
const SUMMARY_VERB = /\b(?:summar(?:y|ies|ise|ize|ising|izing)|sum\s+up|overview|gist|tl;?dr|key\s+points|main\s+points|rundown)\b/iu
/** "What are these files about?", "what is this folder about" — about at the end, the collection its subject. */
const ABOUT_FORM = new RegExp(
  String.raw`\bwhat(?:\s+(?:are|is|do|does)|'s|’s)\s+(?:all\s+)?(?:these|this|the|those|my|our)\s+(?:[\p{L}\p{N}._-]+\s+)?${COLLECTION}\s+(?:in\s+(?:this|the)\s+(?:folder|directory)\s+|here\s+)?(?:all\s+)?(?:about|cover|contain|hold)\b` +
    // "What topics do these files cover?", "What's in this folder?"
    String.raw`|\bwhat\s+(?:topics|subjects|themes)\s+(?:do|does)\s+(?:these|this|the|those|my|our)\s+${COLLECTION}\s+(?:cover|discuss|contain|address)\b` +
    String.raw`|^\s*what(?:'s|’s|\s+is)\s+in\s+(?:here|(?:this|the)\s+(?:folder|directory))\s*[?？.!]*\s*$`,
  'iu',
)
/** The words of such a request that name nothing to look for. */
const SUMMARY_FRAMING = new Set(
  (
    'summary summaries summarise summarize summarising summarizing sum up overview gist tl tldr dr key main points point rundown ' +
    'give me please can could would you brief short quick quickly briefly high level what are is about contain contains cover covers ' +
    'hold holds here all them it whole entire each every file files document documents docs folder folders directory directories ' +
    'notes pages workspace scope corpus everything tell say says in of write provide like i want need topics subjects themes discuss address here'
  ).split(' '),
)
/** 总结一下这些文件, 这个文件夹是关于什么的, 概述该目录 */
const CHINESE_FOLDER_SUMMARY =
  /(?:总结|概括|概述|归纳|简述|摘要|概要|综述).{0,6}(?:这些|这个|该|此|所有|全部)?(?:文件夹|文件|目录|文档|资料)|(?:这些|这个|该|此|所有)(?:文件夹|文件|目录|文档|资料).{0,6}(?:关于|讲|说|写|介绍|包含)(?:了)?(?:什么|些什么|哪些)|^(?:请)?(?:总结|概括|概述)一下[。！!？?]?$/u

/**
 * Whether the question asks what the files in scope are about as a whole — not a fact, not one
 * document: a summary word or "what are … about" with the collection as its subject, and no other
 * word to look for ("Summarise the March incident" names a document; "What is the policy about
 * remote work?" asks for a fact). `folder`: a child folder the question names ("the engineering
 * folder").
 */
export function folderSummaryRequest(question: string): { readonly folder: string | undefined } | undefined {
  const text = question.normalize('NFKC')
  if (containsCjk(text)) return CHINESE_FOLDER_SUMMARY.test(text) ? { folder: undefined } : undefined
  const lower = text.toLowerCase()
  // "What is in engineering-wiki/?", "What's in the sales folder?": a folder named.
  const inFolder = /^\s*what(?:'s|’s|\s+is)\s+in\s+(?:the\s+)?(?!(?:this|that|these|those|here)\b)([\p{L}\p{N}._-]+?)(?:\/|\s+folder|\s+directory)\s*[?？.!]*\s*$/iu.exec(lower)
  if (inFolder !== null) return { folder: inFolder[1]! }
  const whatFiles = WHAT_FILES_FORM.exec(lower)
  if (whatFiles !== null) return { folder: whatFiles[1] }
  if (!SUMMARY_VERB.test(lower) && !ABOUT_FORM.test(lower)) return undefined
  let folder: string | undefined
  const rest = lower.replace(COLLECTIVE, (whole, name: string | undefined) => {
    if (name !== undefined && !SUMMARY_FRAMING.has(name) && /\b(?:folder|director(?:y|ies))\b/u.test(whole)) folder = name
    return ' '
  })
  const left = extractKeywords(rest).filter((keyword) => !keyword.text.split(/[\s;]+/u).every((word) => SUMMARY_FRAMING.has(word)))
  return left.length === 0 ? { folder } : undefined
}
