// Small statistics helpers for the benchmark report.

/** Nearest-rank percentile of an already sorted array (p in 0..100). */
export function percentileSorted(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!
}

export function sortedCopy(values: ArrayLike<number>): Float64Array {
  return Float64Array.from(values).sort()
}

export function concatSamples(parts: ReadonlyArray<Float64Array>): Float64Array {
  const out = new Float64Array(parts.reduce((sum, part) => sum + part.length, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  return out
}

export function formatNumber(value: number, digits = 2): string {
  if (!Number.isFinite(value)) return '–'
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US')
  if (Math.abs(value) >= 100) return value.toFixed(Math.min(digits, 1))
  return value.toFixed(digits)
}

/** A plain Markdown table (also readable in a terminal). */
export function markdownTable(header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>, alignRight: ReadonlyArray<boolean> = []): string {
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => (row[column] ?? '').length)))
  const pad = (cell: string, column: number) => (alignRight[column] ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))
  const line = (cells: ReadonlyArray<string>) => `| ${cells.map((cell, column) => pad(cell, column)).join(' | ')} |`
  const rule = `|${widths.map((width, column) => (alignRight[column] ? '-'.repeat(width + 1) + ':' : '-'.repeat(width + 2))).join('|')}|`
  return [line(header), rule, ...rows.map(line)].join('\n')
}
