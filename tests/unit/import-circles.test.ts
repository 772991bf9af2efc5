// No import circles in the application (src/, views/): a circle is where a shared type or helper
// sits in the wrong module (docs/architecture.md, "Folders"). The same check by hand:
//   npx madge --circular --extensions ts,tsx --ts-config tsconfig.json src views
import madge from 'madge'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../', import.meta.url))

describe('the import graph of src/ and views/', () => {
  it('has no circle', { timeout: 60_000 }, async () => {
    const graph = await madge(['src', 'views'], {
      baseDir: root,
      fileExtensions: ['ts', 'tsx'],
      tsConfig: `${root}tsconfig.json`,
      excludeRegExp: [/\.test\.tsx?$/],
    })
    expect(Object.keys(graph.obj()).length).toBeGreaterThan(200) // it read the tree, not nothing
    expect(graph.circular()).toEqual([])
  })
})
