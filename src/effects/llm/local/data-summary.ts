// What a data file (JSON, CSV, TSV) holds, said in a sentence or two: its sentences are not
// prose, so picking "central sentences" from it gives a run of raw fields. Names, keys and values
// are the file's own; only the framing words are ours. Deterministic.

import { readDelimitedTable, separatorOf, type Separator } from '../../workspace/parse/csv.ts'
import { plural } from '../../plural.ts'

const MAX_LISTED = 6

function listed(values: ReadonlyArray<string>): string {
  const distinct = [...new Set(values.map((v) => v.trim()).filter((v) => v !== ''))]
  const shown = distinct.slice(0, MAX_LISTED).join(', ')
  return distinct.length > MAX_LISTED ? `${shown} and ${distinct.length - MAX_LISTED} more` : shown
}


/** The name-like field of an entry (id, name, title, key), if it has one. */
function labelOf(entry: unknown): string | undefined {
  if (typeof entry === 'string' || typeof entry === 'number') return String(entry)
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return undefined
  const record = entry as Record<string, unknown>
  for (const key of ['id', 'name', 'title', 'key']) {
    const value = record[key]
    if (typeof value === 'string' || typeof value === 'number') return String(value)
  }
  return undefined
}

function describeValue(key: string, value: unknown): string {
  if (Array.isArray(value)) {
    const labels = value.map(labelOf).filter((label): label is string => label !== undefined)
    return labels.length > 0 ? `${key} (${plural(value.length, 'entry', 'entries')}: ${listed(labels)})` : `${key} (${plural(value.length, 'entry', 'entries')})`
  }
  if (typeof value === 'object' && value !== null) return `${key} (${listed(Object.keys(value))})`
  return key
}

/** A JSON document: its top-level keys, with what arrays and objects under them hold. */
export function describeJson(text: string): string | undefined {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return undefined
  }
  if (Array.isArray(parsed)) {
    const labels = parsed.map(labelOf).filter((label): label is string => label !== undefined)
    return `A JSON array of ${plural(parsed.length, 'entry', 'entries')}${labels.length > 0 ? `: ${listed(labels)}` : ''}.`
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined
  const entries = Object.entries(parsed)
  if (entries.length === 0) return 'An empty JSON object.'
  return `A JSON object with ${plural(entries.length, 'key')}: ${entries.map(([key, value]) => describeValue(key, value)).join('; ')}.`
}

/** A table: how many rows, its columns, and the values of its first column (its first rows only, when it is long). */
export function describeTable(text: string, separator: Separator): string | undefined {
  const table = readDelimitedTable({ text, separator })
  if (table === undefined) return undefined
  const columns = table.header.map((h) => h.trim()).filter((h) => h !== '')
  const rows = table.totalRows === undefined ? `more than ${plural(table.rows.length, 'row')}` : plural(table.totalRows, 'row')
  const first = `A table of ${rows} with ${plural(columns.length, 'column')}: ${listed(columns)}.`
  if (table.rows.length === 0) return first
  const complete = table.totalRows === table.rows.length
  return `${first} Its ${columns[0]} column ${complete ? 'lists' : 'begins with'} ${listed(table.rows.map((r) => r[0] ?? ''))}.`
}

/** The description of a data file named `title`, or undefined when it is not one (or does not parse). */
export function describeDataFile({ title, text }: { readonly title: string; readonly text: string }): string | undefined {
  const extension = /\.([a-z]+)$/iu.exec(title.trim())?.[1]?.toLowerCase()
  if (extension === 'json') return describeJson(text)
  const separator = separatorOf(title)
  return separator === undefined ? undefined : describeTable(text, separator)
}
