// The word lists of the local model's question analysis (terms.ts): stop words in English and
// Chinese, the generic nouns a phrase need not match, the verbs that only frame a question.
import { stem } from './stem.ts'

export const ENGLISH_STOP_WORDS = new Set(
  (
    'a about above after again against all also am an and any are aren as at be because been before being below ' +
    'between both but by can cannot could couldn did didn do does doesn doing don down during each either else ' +
    'etc ever every few for from further get gets got had hadn has hasn have haven having he her here hers herself ' +
    'him himself his how however i if in into is isn it its itself just let lets like may me might more most much ' +
    'must mustn my myself need no nor not now of off on once one only or other ought our ours ourselves out over own ' +
    'please same shall shan she should shouldn so some such tell than that thats the their theirs them themselves ' +
    'then there these they this those through thus to too under until up upon us very via was wasn we were weren what ' +
    'whats when where whether which while who whom whose why will with won would wouldn yes yet you your yours ' +
    'yourself yourselves explain describe show give find know want s t d ll m re ve ' +
    // Words that frame a question rather than name its subject.
    'happen happens happened happening say says said mean means meant many make makes made way ways thing things ' +
    'take takes took long often quickly exactly really actually usually currently still kind sort anything something ' +
    'someone anyone everything hold holds held idea ideas worth due needs needed needing ' +
    // Contractions (their apostrophe dropped) and the verbs that frame "which … do I use", "when does it go out".
    'im ive youre youve theyre theyve weve its dont doesnt didnt isnt arent wasnt werent cant couldnt wont wouldnt shouldnt hasnt havent ' +
    'go goes going went gone'
  ).split(' '),
)

/** Longest first, so 为什么 is cut before 什么. */
export const CHINESE_STOP_WORDS = new Set([
  '为什么', '是什么', '有哪些', '怎么样', '什么时候', '多少', '多长', '多久', '请问', '什么', '怎么', '怎样', '如何',
  '哪些', '哪个', '哪里', '是否', '可以', '能否', '一下', '告诉', '我们', '你们', '他们', '这个', '那个', '这些',
  '那些', '关于', '有关', '以及', '还有', '介绍', '说说', '讲讲', '需要', '应该', '时候', '的', '了', '吗', '呢',
  '吧', '啊', '是', '和', '与', '及', '或', '在', '我', '你', '请', '有', '会', '要', '能', '里', '时', '被', '把',
])

/**
 * Words that name a measure or a kind of thing rather than a subject ("the mileage *allowance*",
 * "the parental leave *policy*"): a document may use another word for them, so they are not what
 * a question's phrase must match.
 */
const GENERIC_NOUNS = new Set(
  (
    'policy policies rule rules allowance allowances fee fees cost costs price prices rate rates amount amounts limit limits ' +
    'budget budgets number numbers process procedure procedures time times date dates deadline duration size level type ' +
    'types status details information info maximum minimum max min cap caps ceiling default total feature features list lists kind kinds 政策 规定 费用 价格 时间 数量 金额 流程 标准 ' +
    '规则 情况 信息 最多 最少 上限 下限'
  ).split(' '),
)

/** Generic nouns that name a collection or a kind, not a measure: "the list of …" asks for no figure. */
export const KIND_NOUNS = new Set('list lists type types kind kinds details information info status feature features'.split(' '))

export const isGenericNoun = (word: string): boolean => GENERIC_NOUNS.has(word)

/** Verbs that frame a question ("which timeout does checkout *use*", "who can *use* Wireshark"): they rank a passage that has them, but a passage need not have them. */
const FRAME_VERBS = new Set(['use', 'uses', 'used', 'using'])

export const isFrameVerb = (word: string): boolean => FRAME_VERBS.has(word)

/**
 * The parties of a business relationship, stemmed as `matchTerms` stems them: a rule for one of
 * them (what suppliers are paid) is not a rule for another (what customers pay).
 */
export const PARTIES: ReadonlySet<string> = new Set(
  'customer client buyer supplier vendor seller contractor subcontractor freelancer consultant employee intern trainee candidate applicant partner reseller distributor landlord tenant'.split(' ').map(stem),
)
