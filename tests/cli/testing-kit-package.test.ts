// `knowagent/testing` works from a plain Node project: the project is packed as `npm pack` packs it
// (the `prepack` script compiles the exported modules to dist/, JavaScript and .d.ts), the tarball
// installed into a temporary directory with no TypeScript loader and no test runner, the docs
// example (docs/examples/prove-own-tool.ts, which imports `knowagent/machines` and
// `knowagent/testing`) type-checked and compiled there by tsc against the shipped .d.ts, and run
// from a plain .js main by `node` alone. The install asks the npm registry only for what its cache lacks.
import { execFile } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'

const execFileAsync = promisify(execFile)
/** execFile whose failure shows stdout too (the message has stderr; tsc prints its errors to stdout). */
const run = (file: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) =>
  execFileAsync(file, args, { ...options, maxBuffer: 64 * 1024 * 1024 }).catch((error: { message: string; stdout?: string }) => {
    throw new Error(`${error.message}\n${error.stdout ?? ''}`)
  })
const root = fileURLToPath(new URL('../../', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'knowagent-kit-'))
const app = join(dir, 'app')
const installed = join(app, 'node_modules/knowagent')

afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('knowagent/testing from an installed tarball', () => {
  it('installs without a TypeScript loader, type-checks against the shipped .d.ts and runs on plain node', { timeout: 300_000 }, async () => {
    // `npm pack` runs prepack, then prepare (the server bundle, which the package does not ship): run
    // prepack alone, then pack without scripts
    await run('npm', ['run', '--silent', 'prepack'], { cwd: root })
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: root })
    const { filename } = (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!
    mkdirSync(app)
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'embedder', private: true, type: 'module', dependencies: { knowagent: `file:../${filename}` }, devDependencies: { '@types/node': '24.19.4', typescript: '5.9.3' } }),
    )
    // no skipLibCheck: the shipped .d.ts are checked too (a type from a package the tarball does not
    // depend on would otherwise become `any` without a word)
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2024', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, outDir: 'build', types: ['node'] }, include: ['*.ts'] }),
    )
    copyFileSync(join(root, 'docs/examples/prove-own-tool.ts'), join(app, 'prove-own-tool.ts'))
    writeFileSync(
      join(app, 'main.js'),
      [
        "import { proveTool } from './build/prove-own-tool.js'",
        'const { paths, diverged, coverage } = await proveTool()',
        "console.log(JSON.stringify({ kit: import.meta.resolve('knowagent/testing'), paths, diverged, stateNodes: coverage.stateNodes }))",
      ].join('\n'),
    )
    // optional dependencies are platform binaries (esbuild's, PostgreSQL's) that the kit never loads
    await run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--omit=optional', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: app })
    expect(existsSync(join(installed, 'dist/testing/index.js')), 'the tarball ships dist/ (built by prepack)').toBe(true)
    expect(existsSync(join(app, 'node_modules/tsx'))).toBe(false) // no TypeScript loader
    expect(existsSync(join(app, 'node_modules/vitest'))).toBe(false) // the kit runs without a test runner

    const typecheck = await run(process.execPath, [join(app, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json', '--listFiles'], { cwd: app })
    const kitFiles = typecheck.stdout.split('\n').filter((file) => file.startsWith(`${installed}/`)).map((file) => file.slice(installed.length + 1))
    expect(kitFiles).toEqual(expect.arrayContaining(['dist/machines/index.d.ts', 'dist/testing/index.d.ts']))
    expect(kitFiles.filter((file) => !file.endsWith('.d.ts'))).toEqual([])

    // no --import and no NODE_OPTIONS: node alone
    const env = { ...process.env }
    delete env.NODE_OPTIONS
    const { stdout } = await run(process.execPath, ['main.js'], { cwd: app, env })
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { kit: string; paths: number; diverged: number; stateNodes: { total: number; reached: number } }
    expect(fileURLToPath(result.kit)).toBe(join(installed, 'dist/testing/index.js'))
    expect(result.paths).toBeGreaterThan(100)
    expect(result.diverged).toBeLessThan(result.paths / 2)
    expect(result.stateNodes.reached).toBe(result.stateNodes.total)
  })
})
