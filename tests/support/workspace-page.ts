// Page helpers the workspace browser tests share (workspace-files.test.ts, workspace-chat.test.ts):
// viewports, the kept history, the file dialog, node actions, the document mark, contrast.
import type { Page } from 'playwright-core'

export const PHONE = { width: 390, height: 844 }
export const DESKTOP = { width: 1360, height: 860 }

/** The conversation the page keeps for the next turn (the chat form's hidden history field). */
export const chatHistory = (page: Page) => page.locator('#chat-history').inputValue().then((value) => JSON.parse(value) as Array<Record<string, unknown>>)
export const fileDialog = (page: Page) => page.locator('#files-dialog')
/** A button of the open file or folder's actions. */
export const nodeAction = (page: Page, name: string) => page.locator('#content .node-actions').getByRole('button', { name, exact: true })
/** Marks the document: a full page load loses the mark, an in-place update keeps it. */
export const markDocument = (page: Page) => page.evaluate(() => ((window as { __kept?: boolean }).__kept = true))
export const documentKept = (page: Page) => page.evaluate(() => (window as { __kept?: boolean }).__kept === true)


/**
 * Every visible piece of text on the page whose contrast against what is behind it is under
 * `minimum` (WCAG AA: 4.5:1), as `tag.class: text (ratio)`. Disabled controls are exempt, as WCAG
 * exempts them; text over a background image (the logo's gradient) is not judged. Runs in the page: `page.evaluate(lowContrastTexts, 4.5)`.
 */
export function lowContrastTexts(minimum: number): string[] {
  // the WCAG contrast ratio of an element's text against the first opaque background behind it
  // (its own or an ancestor's), from computed colours
  const ratioOf = (element: Element): number => {
    const rgba = (colour: string) => (colour.match(/[\d.]+/g) ?? []).map(Number)
    const luminance = ([r, g, b]: number[]) => {
      const linear = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
      return 0.2126 * linear(r!) + 0.7152 * linear(g!) + 0.0722 * linear(b!)
    }
    let behind: Element | null = element
    let background = [255, 255, 255]
    while (behind) {
      if (getComputedStyle(behind).backgroundImage !== 'none') return Number.POSITIVE_INFINITY // a gradient: not judged here
      const [r, g, b, a = 1] = rgba(getComputedStyle(behind).backgroundColor)
      if (a > 0) {
        background = [r!, g!, b!]
        break
      }
      behind = behind.parentElement
    }
    const [r, g, b, a = 1] = rgba(getComputedStyle(element).color)
    const text = [r!, g!, b!].map((v, i) => v * a + background[i]! * (1 - a)) // a translucent colour over its background
    const [light, dark] = [luminance(text), luminance(background)].sort((x, y) => y - x)
    return (light! + 0.05) / (dark! + 0.05)
  }
  const found = new Set<string>()
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT)
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent?.trim() ?? ''
    const element = node.parentElement
    if (text === '' || !element || element.closest('[disabled], [aria-disabled="true"], script, style, template')) continue
    const style = getComputedStyle(element)
    if (style.visibility !== 'visible' || element.getClientRects().length === 0 || Number(style.opacity) === 0) continue
    const ratio = ratioOf(element)
    if (ratio < minimum) found.add(`${element.tagName.toLowerCase()}${element.className ? `.${String(element.className).trim().split(/\s+/).join('.')}` : ''}: ${text.slice(0, 40)} (${ratio.toFixed(2)})`)
  }
  return [...found]
}
