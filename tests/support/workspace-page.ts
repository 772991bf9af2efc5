// Page helpers the workspace browser tests share (workspace-files.test.ts, workspace-chat.test.ts).
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
