// The kinds of answer a question's form asks for (`answerTypeOf` in terms.ts) and how a passage
// shows one: a duration, an amount of money, a day, a date, a person or a role, a cause; and the
// units a figure of a measure is written in.
import { matchTerms, stem, type AnswerType, type Keyword } from './terms.ts'

const DURATION = /\d\s*(?:-|–|to\s+\d+\s*)?\s*(?:ms|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?|business days|working days|quarters?)\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|a|an)\s+(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)\b|\b(?:daily|weekly|monthly|yearly|annually|quarterly|indefinitely|permanently|forever|until|unlimited)\b|[天周月年]|小时|分钟/iu
const MONEY = /[€$£¥]\s*\d|\d\s*(?:[€$£¥]|eur\b|euros?\b|usd\b|dollars?\b|gbp\b|pounds?\b|chf\b|cny\b|rmb\b|yuan\b|元)|\bfree\b|\bno\s+(?:charge|cost)\b|\d\s*%|免费/iu
const WEEKDAY_OR_DATE = /\b(?:mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|weekdays?|weekends?|daily|every\s+day)\b|\b\d{1,2}(?:st|nd|rd|th)\b|\b\d{1,2}\s+(?:january|february|march|april|may|june|july|august|september|october|november|december)\b|\b(?:first|last|final)\s+(?:working\s+|business\s+)?day\b|\d{4}-\d{2}-\d{2}|[周星期][一二三四五六日天]|\d+[日号]/iu
const DATE_OR_TIME = /\d|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|september|october|november|december|daily|weekly|monthly|quarterly|yearly|annually|today|tomorrow|yesterday|before|after|within|until|once|when|during|end|start|beginning|immediately|never|morning|afternoon|evening|night|day|days|week|month|quarter|year)\b|[日月周年]|之前|之后/iu
/** A person's name (two capitalised words: "Marcus Lee") or a role ("the team lead", "the CFO"). */
const PERSON = /\p{Lu}\p{Ll}+\s+\p{Lu}\p{Ll}+/u
const ROLES = new Set(
  'manager managers lead leads head director owner owners team officer admin administrator engineer agent desk committee board controller chair approver vp cfo ceo cto ciso cro coo hr finance legal security procurement support sales on-call person employee employees staff requester supervisor you your they he she member members someone anyone nobody everyone customer user users department group council it ap ar'.split(' ').map(stem),
)
const CHINESE_ROLE = /负责人|经理|主管|团队|部门/u

/** Whether a text names a person or a role other than the question's own words ("Who is the system *owner*?" is not answered by "a system owner"). */
export function namesPersonOrRole(text: string, keywords: ReadonlyArray<Keyword>): boolean {
  if (PERSON.test(text) || CHINESE_ROLE.test(text)) return true
  const asked = new Set(keywords.flatMap((k) => k.terms))
  return matchTerms(text).some((term) => ROLES.has(term) && !asked.has(term))
}
export const ANSWER_TYPES: Record<AnswerType, { readonly name: string; readonly pattern: RegExp; readonly header?: RegExp }> = {
  cause: { name: 'cause', pattern: /\b(?:because|reasons?|since|due\s+to|caus(?:e|es|ed|ing)|so\s+that|so\s+the|so\s+we|led\s+to|leads\s+to|result(?:ed|s)?\s+in|as\s+a\s+result|why|trigger(?:ed|s)?|therefore|instead|would\s+have|could\s+not|did\s+not|didn['’]t|never|too|but|however|although|unless|without|only\s+(?:if|when))\b|因为|原因|由于|所以/iu },
  frequency: { name: 'frequency', pattern: /\d+\s*(?:times|x)\b|\b(?:every|each|per|once|twice|daily|weekly|fortnightly|monthly|quarterly|yearly|annually|hourly|nightly|always|never|whenever)\b|每/iu },
  duration: { name: 'duration', pattern: DURATION, header: /(?:^|[^\p{L}])(?:ms|seconds?|minutes?|hours?|days?|weeks?|months?|years?|duration|period|retention)(?:[^\p{L}]|$)/iu },
  money: { name: 'amount of money', pattern: MONEY, header: /(?:^|[^\p{L}])(?:eur|usd|gbp|chf|price|cost|fee|amount|stipend|allowance)(?:[^\p{L}]|$)|[€$£]/iu },
  day: { name: 'day', pattern: WEEKDAY_OR_DATE },
  date: { name: 'date or time', pattern: DATE_OR_TIME },
  person: { name: 'person or role', pattern: /(?!)/u },
}

/** What a figure of a measure is written with: a size in bytes, a price in a currency, a time in its units. */
const MEASURE_UNITS: ReadonlyArray<readonly [ReadonlySet<string>, RegExp]> = [
  // "400 changed lines": one word may stand between the number and its unit.
  [new Set(['size']), /\d\s*(?:[kmgt]i?b|bytes?|kilobytes?|megabytes?|gigabytes?|(?:\p{L}+\s+)?(?:lines?|files?|pages?|words?|rows?))\b/iu],
  [new Set(['cost', 'costs', 'price', 'prices', 'fee', 'fees', 'amount', 'amounts', 'budget', 'budgets']), /[€$£¥]\s*\d|\d\s*(?:[€$£¥]|eur|euros?|usd|dollars?|gbp|pounds?|chf|cny|rmb|yuan|元)|\bfree\b|免费/iu],
  [new Set(['rate', 'rates', 'percentage', 'commission']), /\d\s*%|\bper\s*cent|[€$£¥]\s*\d|\d\s*(?:[€$£¥]|eur\b|usd\b|gbp\b)|\d\s*(?:x|times)\b/iu],
  [new Set(['time', 'times', 'duration', 'deadline']), /\d\s*(?:ms|s|sec(?:ond)?s?|min(?:ute)?s?|h|hours?|days?|weeks?|months?|years?|business days|working days)\b|\d{1,2}:\d{2}|[天周月年小时分钟]/iu],
]

/**
 * Asked about a measure ("the maximum size of a file", "the commission rate"), a passage that does
 * not name the measure must give a figure in its unit (50 MB, 8 %): "at most 6000 characters" is
 * not a size in bytes, a date is not a rate. The measure keyword it lacks, when there is one.
 */
export function measureWithoutUnit({ keywords, text, matched }: { keywords: ReadonlyArray<Keyword>; text: string; matched: (k: Keyword) => boolean }): Keyword | undefined {
  for (const keyword of keywords) {
    const unit = MEASURE_UNITS.find(([nouns]) => nouns.has(keyword.text))?.[1]
    if (unit !== undefined && !matched(keyword) && !unit.test(text)) return keyword
  }
  return undefined
}

const MONTH = '(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)'
/** Numbers that date or name something rather than count it: "14 February", "March 3rd", "2026", "09:30", "Q4", "2026-03-04", "v2.1". */
const NOT_A_COUNT = new RegExp(
  `\\d{4}-\\d{2}-\\d{2}|\\b\\d{1,2}(?:st|nd|rd|th)?\\s+${MONTH}\\b|\\b${MONTH}\\s+\\d{1,2}(?:st|nd|rd|th)?\\b|(?<!\\d|\\d[,.])(?:19|20)\\d{2}(?!\\d|[,.]\\d)|\\b\\d{1,2}:\\d{2}\\b|\\bq[1-4]\\b|\\bv\\d+(?:\\.\\d+)*\\b`,
  'giu',
)

/** Whether a text gives a count: a number that is not a date, a year, a time of day, a quarter or a version. */
export function givesCount(text: string, number: RegExp): boolean {
  return number.test(text.replace(NOT_A_COUNT, ' '))
}

/** A month ("May" only beside a number: *may* is also a verb), a quarter (Q1) or a date in a text; and a year. */
const DATED_TO_MONTH =
  /\b(?:jan(?:uary)?|feb(?:ruary)?|march|apr(?:il)?|june|july|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b|\bmay\s+\d|\d\s+may\b|\bq[1-4]\b|\d{4}-\d{2}|\b\d{1,2}[./]\d{1,2}[./]\d{2,4}\b/iu
const YEAR = /(?<!\d)(?:19|20)\d{2}(?!\d)/u

/** Whether a text (a passage with its headings and file name) is dated as finely as `period`: to a month (a month, a quarter, a date), or to a year. */
export function isDated(text: string, period: 'year' | 'month'): boolean {
  return DATED_TO_MONTH.test(text) || (period === 'year' && YEAR.test(text))
}
