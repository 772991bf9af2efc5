// The launcher's TypeScript loading (bin/typescript-hooks.mjs, bin/compile-cache.mjs) in real
// child processes: `.ts` and `.tsx` files are compiled once and cached, an edited file is never
// served stale, and a stripped `.ts` file keeps its line numbers (stack traces need no map).
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const CACHE = join(ROOT, 'node_modules', '.cache', 'knowagent-js')
const run = promisify(execFile)

describe('bin/run-ts.mjs (the hooks bin/knowagent.mjs uses)', () => {
  let dir: string
  beforeAll(() => {
    // Inside the project, so that the view resolves hono from node_modules.
    mkdirSync(join(ROOT, '.tmp'), { recursive: true })
    dir = mkdtempSync(join(ROOT, '.tmp', 'hooks-'))
    writeFileSync(
      join(dir, 'entry.ts'),
      [
        "import { Greeting } from './greeting.tsx'",
        'interface Options {',
        '  readonly name: string',
        '}',
        'const options: Options = { name: process.argv[2] ?? "nobody" }',
        'if (options.name === "throw") throw new Error("thrown on line 6")',
        'console.log(String(Greeting(options)))',
      ].join('\n'),
    )
  })
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
    rmSync(join(CACHE, '.tmp', dir.split('/').at(-1)!), { recursive: true, force: true })
  })

  const writeView = (greeting: string) =>
    writeFileSync(join(dir, 'greeting.tsx'), `export function Greeting({ name }: { name: string }) {\n  return <p class="hi">${greeting}, {name} &amp; co</p>\n}\n`)
  const render = async (name: string) => (await run(process.execPath, [join(ROOT, 'bin/run-ts.mjs'), join(dir, 'entry.ts'), name], { cwd: ROOT })).stdout.trim()
  const cachedFiles = (name = 'greeting.tsx') => readdirSync(join(CACHE, '.tmp', dir.split('/').at(-1)!)).filter((file) => file.startsWith(`${name}.`))

  it('runs .ts with types and renders a .tsx view (escaped), caching its compiled form', async () => {
    writeView('Hello')
    expect(await render('<Ada>')).toBe('<p class="hi">Hello, &lt;Ada&gt; &amp; co</p>')
    expect(cachedFiles()).toHaveLength(1)
    expect(await render('Bob')).toBe('<p class="hi">Hello, Bob &amp; co</p>')
    expect(cachedFiles()).toHaveLength(1)
    expect(cachedFiles('entry.ts')).toHaveLength(1)
  }, 60_000)

  it('a stack trace points at the line of the TypeScript source', async () => {
    const failure = await render('throw').then(
      () => undefined,
      (error: { stderr: string }) => error.stderr,
    )
    expect(failure).toContain('thrown on line 6')
    expect(failure).toMatch(/entry\.ts:6:\d+/)
  }, 60_000)

  it('an edited view is compiled again, never served stale', async () => {
    writeView('Goodbye')
    expect(await render('Ada')).toBe('<p class="hi">Goodbye, Ada &amp; co</p>')
    expect(cachedFiles()).toHaveLength(2)
  }, 60_000)
})
