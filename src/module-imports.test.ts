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

  it('the MCP SDK (with zod and ajv, ~10 MB of heap) loads with the first /mcp request, not with the app', () => {
    const files = ['src', 'views'].flatMap((dir) => sourceFiles(join(ROOT, dir)))
    const importers = (pattern: RegExp) => files.filter((file) => pattern.test(readFileSync(file, 'utf8'))).map((file) => relative(ROOT, file)).sort()
    expect(importers(/^import (?!type )[^'"]*from '@modelcontextprotocol\/sdk/m)).toEqual(['src/http/mcp-resources.ts', 'src/http/mcp-server.ts'])
    expect(importers(/^import (?!type )[^'"]*from '\.\/mcp-resources\.ts'/m)).toEqual(['src/http/mcp-server.ts'])
    expect(importers(/^import (?!type )[^'"]*from '\.\/mcp-server\.ts'/m)).toEqual([])
    expect(importers(/import\('\.\/mcp-server\.ts'\)/)).toEqual(['src/http/mcp.routes.ts'])
  })
})
