// One stem for every form of an English word (terms.ts matches questions to passages on it).
import { stemmer as porterStem } from 'stemmer'

/**
 * Word families the Porter stemmer leaves apart because the stem itself changes (retain /
 * retention, maintain / maintenance): the derived word's stem is mapped to the base word's.
 */
const DERIVED_STEMS = new Map([
  ['retent', 'retain'],
  ['detent', 'detain'],
  ['abstent', 'abstain'],
  ['mainten', 'maintain'],
  ['susten', 'sustain'],
  ['decis', 'decid'],
  ['divis', 'divid'],
  ['extens', 'extend'],
  ['intent', 'intend'],
  ['attent', 'attend'],
  ['permiss', 'permit'],
  ['submiss', 'submit'],
  ['admiss', 'admit'],
  ['transmiss', 'transmit'],
  ['omiss', 'omit'],
  ['conclus', 'conclud'],
  ['inclus', 'includ'],
  ['exclus', 'exclud'],
  ['descript', 'describ'],
  ['subscript', 'subscrib'],
  ['prescript', 'prescrib'],
  ['recept', 'receiv'],
  ['payment', 'pai'],
  ['paid', 'pai'],
  ['daili', 'dai'],
  ['hourli', 'hour'],
  ['nightli', 'night'],
  ['weekli', 'week'],
  ['monthli', 'month'],
  ['quarterli', 'quarter'],
  ['yearli', 'year'],
  ['expiri', 'expir'],
  ['coverag', 'cover'],
  ['applic', 'appli'],
  ['kept', 'keep'],
  ['lost', 'lose'],
  ['children', 'child'],
  ['people', 'person'],
])

/** British and American spellings meet: capitalise / capitalize, colour / color, licence / license, centre / center, catalogue / catalog. */
function americanSpelling(word: string): string {
  if (word.length < 6) return word
  return word
    .replace(/([^aeiou])is(e|es|ed|ing|ation|ations|er|ers)$/u, '$1iz$2')
    .replace(/ys(e|es|ed|ing)$/u, 'yz$1')
    .replace(/([^aeiou])our(s|ed|ing|able|ite|ites)?$/u, '$1or$2')
    .replace(/cence(s|d)?$/u, 'cense$1')
    .replace(/fence(s)?$/u, 'fense$1')
    .replace(/([^aeiou])tre(s|d)?$/u, '$1ter$2')
    .replace(/ogue(s)?$/u, 'og$1')
    .replace(/amme(s)?$/u, 'am$1')
}

/**
 * English word forms meet at one stem (Porter's algorithm, the `stemmer` package): retain /
 * retained / retaining, approve / approval, reimburse / reimbursement, policy / policies; derived
 * words whose stem changes meet through `DERIVED_STEMS` (retention → retain, monthly → month).
 * Words of three letters or fewer (but for day / pay / key: days, paying, keys), and anything with
 * a digit, are kept as they are.
 */

const STEM_CACHE_MAX = 20_000
const stems = new Map<string, string>()

export function stem(word: string): string {
  // A short word ending in y meets its plural and -ing forms as Porter spells them (day / days, pay / paying).
  if (word.length === 3 && /^[a-z]{2}y$/u.test(word)) return porterStem(word)
  if (word.length <= 3 || /\p{N}/u.test(word) || !/^[a-z]+$/u.test(word)) return word
  let stemmed = stems.get(word)
  if (stemmed === undefined) {
    const porter = porterStem(americanSpelling(word))
    stemmed = DERIVED_STEMS.get(porter) ?? porter
    if (stems.size >= STEM_CACHE_MAX) stems.clear()
    stems.set(word, stemmed)
  }
  return stemmed
}
