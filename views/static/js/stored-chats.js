// The conversations the page keeps in the tab's sessionStorage (chat.js) belong to the person
// signed in, and to no one after them: the sign-in page, where every sign-out lands, forgets them
// (signed-out.js), and any page of another person forgets those a tab kept from before
// (session-owner.js: a tab that never saw the sign-out, e.g. one beside the one that signed out).
export const STORED_CHAT = 'knowagent.chat.v1:'
const STORED_OWNER = 'knowagent.chat.owner'

export function tabStorage() {
  try {
    return window.sessionStorage
  } catch {
    return null // storage disabled: the conversation lives as long as the page
  }
}

/** Forgets the stored conversations whose key starts with `prefix` (every one by default). */
export function forgetStoredChats(prefix = '') {
  const storage = tabStorage()
  if (!storage) return
  for (let i = storage.length - 1; i >= 0; i--) {
    const key = storage.key(i)
    if (key?.startsWith(STORED_CHAT + prefix)) storage.removeItem(key)
  }
  if (prefix === '') storage.removeItem(STORED_OWNER)
}

/** The signed-in `login` owns the tab's stored conversations from now on; anyone else's are forgotten first. */
export function claimStoredChats(login) {
  const storage = tabStorage()
  if (!storage || storage.getItem(STORED_OWNER) === login) return
  forgetStoredChats()
  try {
    storage.setItem(STORED_OWNER, login)
  } catch {}
}
