import type { JSX } from 'hono/jsx/jsx-runtime'

/** Renders a full page (with doctype) from a hono/jsx element. */
export async function renderPage(element: JSX.Element): Promise<string> {
  return '<!doctype html>' + (await element.toString())
}

export async function renderFragment(element: JSX.Element): Promise<string> {
  return String(await element.toString())
}
