import type { JSX } from 'hono/jsx/jsx-runtime'

/** Renders a full page (with doctype) from a hono/jsx element. */
export async function renderPage(element: JSX.Element): Promise<string> {
  return '<!doctype html>' + (await element.toString())
}

export async function renderFragment(element: JSX.Element): Promise<string> {
  return String(await element.toString())
}

/** Renders a fragment made only of synchronous components (stream projections render per event). */
export function renderFragmentSync(element: JSX.Element): string {
  const html: unknown = element.toString()
  if (html instanceof Promise) throw new Error('renderFragmentSync: the element has an async component')
  return String(html)
}
