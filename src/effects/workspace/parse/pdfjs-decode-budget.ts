// pdf.js inflates a document's streams without any limit: a 300 KB PDF with one FlateDecode
// stream of 300 MB took 4.7 GB. Every byte it decodes passes one of two places, and both are
// charged here against a per-document budget:
//   - the native DecompressionStream loop it uses for FlateDecode and BrotliDecode, and
//   - `DecodeStream.ensureBuffer`, through which its own decoders (Flate fallback, LZW,
//     RunLength, ASCII85, predictors, object streams) grow their output.
// pdf.js has no hook for this, so its bundled source is patched as it is loaded; each patch
// must match exactly once, or loading fails loudly (review this file when unpdf is upgraded).
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

const CHARGE = 'knowagent.pdfDecodeCharge'

const PATCHES: ReadonlyArray<{ readonly find: string; readonly replace: string }> = [
  {
    find: 'ensureBuffer(e){let t=this.buffer;if(e<=t.byteLength)return t;',
    replace: `ensureBuffer(e){let t=this.buffer;if(e<=t.byteLength)return t;globalThis[Symbol.for("${CHARGE}")]?.(e-t.byteLength);`,
  },
  {
    find: 'for await(let e of n)a.push(e),o+=e.byteLength;',
    replace: `for await(let e of n)globalThis[Symbol.for("${CHARGE}")]?.(e.byteLength),a.push(e),o+=e.byteLength;`,
  },
]

export class DecodeBudgetExceeded extends Error {
  override readonly name = 'DecodeBudgetExceeded'
}

interface Budget {
  readonly limit: number
  used: number
  exceeded: boolean
}

let active: Budget | undefined

// Once over budget, every later charge throws too, so whatever pdf.js retries (it falls back
// from the native inflater to its own) stops at once.
;(globalThis as Record<symbol, unknown>)[Symbol.for(CHARGE)] = (bytes: number): void => {
  const budget = active
  if (budget === undefined) return
  budget.used += bytes
  if (budget.exceeded || budget.used > budget.limit) {
    budget.exceeded = true
    throw new DecodeBudgetExceeded(`decoded more than ${budget.limit} bytes`)
  }
}

export const patchPdfjsSource = (source: string): string =>
  PATCHES.reduce((patched, { find, replace }) => {
    const occurrences = patched.split(find).length - 1
    if (occurrences !== 1) {
      throw new Error(`pdf.js decode budget: expected one "${find}" in unpdf/pdfjs, found ${occurrences}; review pdfjs-decode-budget.ts`)
    }
    return patched.replace(find, replace)
  }, source)

type Unpdf = typeof import('unpdf')
let loading: Promise<Unpdf> | undefined

/** unpdf, set up with the patched pdf.js (loaded once per thread). */
export const loadBudgetedUnpdf = (): Promise<Unpdf> =>
  (loading ??= (async () => {
    // unpdf exports its pdf.js bundle for `import` only; it sits beside the CommonJS entry.
    const bundle = join(dirname(createRequire(import.meta.url).resolve('unpdf')), 'pdfjs.mjs')
    const source = readFileSync(bundle, 'utf8')
    const url = `data:text/javascript;base64,${Buffer.from(patchPdfjsSource(source)).toString('base64')}`
    const unpdf = await import('unpdf')
    await unpdf.definePDFJSModule(() => import(/* @vite-ignore */ url))
    return unpdf
  })())

// One document at a time per thread: the budget is global to the thread, and a worker runs one
// task at a time anyway; in-thread callers (tests) queue here.
let queue: Promise<unknown> = Promise.resolve()

/** Runs `work` with a fresh budget of `limit` decoded bytes; `exceeded` says whether it ran out. */
export const withDecodeBudget = <A>(limit: number, work: () => Promise<A>): Promise<{ result: PromiseSettledResult<A>; exceeded: boolean }> => {
  const run = async (): Promise<{ result: PromiseSettledResult<A>; exceeded: boolean }> => {
    const budget: Budget = { limit, used: 0, exceeded: false }
    active = budget
    try {
      const [result] = await Promise.allSettled([work()])
      return { result: result!, exceeded: budget.exceeded }
    } finally {
      active = undefined
    }
  }
  const next = queue.then(run, run)
  queue = next.catch(() => undefined)
  return next
}
