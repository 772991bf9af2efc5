// The local model's wording: English, or Chinese when the question is.
import { containsCjk } from './terms.ts'

export interface SearchCoverage {
  /** The node searched. */
  readonly uri: string | undefined
  readonly filesScanned: number | undefined
  readonly complete: boolean | undefined
}

export interface NothingFound {
  readonly question: string
  readonly keywords: ReadonlyArray<string>
  readonly coverage: SearchCoverage | undefined
  /** File names read without finding an answer. */
  readonly read: ReadonlyArray<string>
}

export interface Phrases {
  readonly searching: (keywords: ReadonlyArray<string>) => string
  readonly searchingNextPage: (filesScanned: number | undefined) => string
  readonly reading: (uris: ReadonlyArray<string>) => string
  readonly followingReference: (uris: ReadonlyArray<string>) => string
  readonly lookingFurther: (uris: ReadonlyArray<string>) => string
  readonly listing: string
  readonly answeringThinking: string
  readonly summarisingThinking: string
  readonly nothingThinking: string
  readonly toolFailedThinking: string
  readonly intro: (question: string) => string
  readonly summaryOf: (uri: string) => string
  readonly summaryIntro: string
  readonly listingIntro: string
  readonly footer: string
  readonly offset: (offset: number) => string
  readonly incompleteScan: (filesScanned: number | undefined) => string
  readonly nothingFound: (input: NothingFound) => string
  readonly nothingToRead: string
  readonly nothingInMaterial: (question: string) => string
  readonly noMaterial: string
  readonly emptyListing: (error: string | undefined) => string
  readonly emptyFile: string
  readonly providedMaterial: string
  readonly searchFailed: (error: string) => string
  // A summary of a folder (folder-summary.ts)
  readonly readingCompiled: (uris: ReadonlyArray<string>) => string
  readonly readingOpenings: (files: number) => string
  readonly listingFolders: (uris: ReadonlyArray<string>) => string
  readonly compiledSummaryOf: (folderUri: string, writtenOn: string | undefined) => string
  readonly pageContinues: (uri: string) => string
  readonly noFreshOverview: (folderUri: string) => string
  readonly staleOverview: (overviewUri: string, changes: string | undefined) => string
  readonly andMore: (count: number) => string
  readonly noOpening: string
}

const QUESTION_DISPLAY_CHARS = 120

function shortQuestion(question: string): string {
  const single = question.replace(/\s+/gu, ' ').trim()
  const chars = Array.from(single)
  return chars.length <= QUESTION_DISPLAY_CHARS ? single : chars.slice(0, QUESTION_DISPLAY_CHARS - 1).join('') + '…'
}

const quoted = (words: ReadonlyArray<string>, separator: string, open = '“', close = '”') =>
  words.map((w) => `${open}${w}${close}`).join(separator)

const ENGLISH: Phrases = {
  searching: (keywords) => `Searching the selected scope for: ${keywords.join(', ')}.`,
  searchingNextPage: (n) => `No hit in the first ${n ?? 'page of'} files; searching the next page.`,
  reading: (uris) => `Reading the best matches: ${uris.join(', ')}.`,
  followingReference: (uris) => `The question is about a file named in what I read; reading ${uris.join(' or ')}.`,
  lookingFurther: (uris) => `Nothing I read so far answers it; searching the rest of ${uris.join(', ')}.`,
  listing: 'Listing the selected scope.',
  answeringThinking: 'Quoting the most relevant passages.',
  summarisingThinking: 'Quoting the passages that sum the document up.',
  nothingThinking: 'Nothing I read answers the question.',
  toolFailedThinking: 'The search tool failed.',
  intro: (q) => `Here is what the workspace says about “${shortQuestion(q)}”:`,
  summaryOf: (uri) => `The key passages of ${uri}:`,
  summaryIntro: 'Extractive summary of what I read:',
  listingIntro: 'The selected scope contains:',
  footer: '_Local extractive answer (no LLM): only quoted passages, check the sources._',
  offset: (offset) => `(offset ${offset})`,
  incompleteScan: (n) =>
    `Note: the search scanned ${n ?? 'some'} files and was not complete, so other files may also be relevant.`,
  nothingFound: ({ question, keywords, coverage, read }) => {
    const where = coverage?.uri ?? 'the selected scope'
    const files =
      coverage?.filesScanned === undefined
        ? ''
        : coverage.complete === false
          ? ` in the first ${coverage.filesScanned} files (the scan was not complete, so files beyond them may cover it)`
          : ` in all ${coverage.filesScanned} files`
    const searched = keywords.length === 0 ? '' : `I searched${files} for ${quoted(keywords, ', ')}`
    const reading = read.length === 0 ? (searched === '' ? '' : '; no file matched.') : `, and read the closest matches (${read.join(', ')}), but none of them answers it.`
    return `Nothing in ${where} covers “${shortQuestion(question)}”.${searched === '' ? '' : `\n\n${searched}${reading}`}`
  },
  nothingToRead: 'I found no file to read in the selected scope.',
  nothingInMaterial: (q) => `Nothing in the material I was given covers “${shortQuestion(q)}”.`,
  noMaterial: 'I have no material to answer from: the local model can only quote what it is given.',
  emptyListing: (error) => (error === undefined ? 'The selected scope is empty.' : `I could not list the selected scope: ${error}`),
  emptyFile: '> (empty)',
  providedMaterial: 'the provided material',
  searchFailed: (error) => `The search failed: ${error}`,
  readingCompiled: (uris) => `The folder is compiled and its summary is up to date; reading ${uris.join(' and ')}.`,
  readingOpenings: (n) => `No up-to-date compiled summary; reading the opening of each file (${n}).`,
  listingFolders: (uris) => `Listing the subfolders: ${uris.join(', ')}.`,
  compiledSummaryOf: (uri, on) => `This is the compiled summary of ${uri} (its abstract and overview${on === undefined ? '' : `, written ${on}`}; up to date with its files):`,
  pageContinues: (uri) => `(The page goes on: ${uri}.)`,
  noFreshOverview: (uri) => `No compiled overview of ${uri} is up to date; here is each file's title and opening:`,
  staleOverview: (uri, changes) => `The compiled overview (${uri}) is out of date${changes === undefined ? '' : ` (${changes})`}, so it is not quoted; compile the folder again to refresh it.`,
  andMore: (n) => `… and ${n} more.`,
  noOpening: '(no text to quote)',
}

const CHINESE: Phrases = {
  searching: (keywords) => `在所选范围内搜索：${keywords.join('、')}。`,
  searchingNextPage: (n) => `前 ${n ?? '一页'} 个文件中没有命中，继续搜索下一页。`,
  reading: (uris) => `读取最相关的文件：${uris.join('、')}。`,
  followingReference: (uris) => `问题涉及已读内容中提到的文件，读取 ${uris.join(' 或 ')}。`,
  lookingFurther: (uris) => `已读内容还不能回答，继续搜索 ${uris.join('、')} 的其余部分。`,
  listing: '列出所选范围。',
  answeringThinking: '引用最相关的段落。',
  summarisingThinking: '引用概括该文件的段落。',
  nothingThinking: '已读内容都不能回答这个问题。',
  toolFailedThinking: '搜索工具出错。',
  intro: (q) => `工作区中关于“${shortQuestion(q)}”的内容：`,
  summaryOf: (uri) => `${uri} 的要点：`,
  summaryIntro: '已读内容的抽取式摘要：',
  listingIntro: '所选范围包含：',
  footer: '_本地抽取式回答（未使用大模型）：仅引用原文，请核对来源。_',
  offset: (offset) => `（偏移 ${offset}）`,
  incompleteScan: (n) => `注意：搜索扫描了 ${n ?? '部分'} 个文件，扫描未完成，其他文件中可能还有相关内容。`,
  nothingFound: ({ question, keywords, coverage, read }) => {
    const where = coverage?.uri ?? '所选范围'
    const files =
      coverage?.filesScanned === undefined
        ? '其中'
        : coverage.complete === false
          ? `其中的前 ${coverage.filesScanned} 个文件（扫描未完成，其余文件中可能有）`
          : `其中的全部 ${coverage.filesScanned} 个文件`
    const searched = keywords.length === 0 ? '' : `我在${files}里搜索了${quoted(keywords, '、')}`
    const reading = read.length === 0 ? (searched === '' ? '' : '，没有匹配的文件。') : `，并读了最接近的文件（${read.join('、')}），但都没有回答这个问题。`
    return `${where} 中没有涉及“${shortQuestion(question)}”的内容。${searched === '' ? '' : `\n\n${searched}${reading}`}`
  },
  nothingToRead: '所选范围内没有可读取的文件。',
  nothingInMaterial: (q) => `提供的资料中没有涉及“${shortQuestion(q)}”的内容。`,
  noMaterial: '没有可供回答的资料：本地模型只能引用提供给它的内容。',
  emptyListing: (error) => (error === undefined ? '所选范围为空。' : `无法列出所选范围：${error}`),
  emptyFile: '>（空）',
  providedMaterial: '提供的资料',
  searchFailed: (error) => `搜索失败：${error}`,
  readingCompiled: (uris) => `该文件夹已编译且摘要是最新的，读取 ${uris.join(' 和 ')}。`,
  readingOpenings: (n) => `没有最新的编译摘要，读取每个文件的开头（${n} 个）。`,
  listingFolders: (uris) => `列出子文件夹：${uris.join('、')}。`,
  compiledSummaryOf: (uri, on) => `以下是 ${uri} 的编译摘要（摘要与概览${on === undefined ? '' : `，写于 ${on}`}，与文件一致）：`,
  pageContinues: (uri) => `（后续内容见 ${uri}。）`,
  noFreshOverview: (uri) => `${uri} 没有最新的编译概览；以下是每个文件的标题和开头：`,
  staleOverview: (uri, changes) => `编译概览（${uri}）已过期${changes === undefined ? '' : `（${changes}）`}，因此不引用；重新编译该文件夹即可更新。`,
  andMore: (n) => `……另有 ${n} 项。`,
  noOpening: '（没有可引用的文字）',
}

export function phrasesFor(question: string): Phrases {
  return containsCjk(question) ? CHINESE : ENGLISH
}
