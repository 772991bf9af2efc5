// What the server's process loads is part of its memory: effect's index loads every module of the
// library (~13 MB of heap, ~12 MB more resident than the modules in use), so the app imports each
// Effect module by its own path (`effect/Effect`, `effect/Schema`, …). See docs/architecture.md.
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) ? [path] : []
  })
}

describe('module imports', () => {
  it("no module of the app imports effect's index", () => {
    const files = ['src', 'views', 'migrations'].flatMap((dir) => sourceFiles(join(ROOT, dir)))
    expect(files.length).toBeGreaterThan(100)
    const offenders = files.filter((file) => /from ['"]effect['"]/.test(readFileSync(file, 'utf8'))).map((file) => relative(ROOT, file))
    expect(offenders).toEqual([])
  })
})
