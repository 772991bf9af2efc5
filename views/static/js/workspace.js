// The workspace page around the chat: the resizable divider (drag, arrow keys, remembered), the
// lazily loaded tree, in-page navigation (a new directory switches to that directory's
// conversation, and the tree opens down to what is shown and highlights it; a citation opens its
// passage and keeps the chat; a search hit is navigation like the tree's, so the chat's scope
// follows it) and the phone-width chat toggle.
const byId = (id) => document.getElementById(id)
const STORED_WIDTH = 'knowagent.chatWidth'
const MIN_WIDTH = 25
const MAX_WIDTH = 70
const DEFAULT_WIDTH = 40
const KEY_STEP = 2

function clampWidth(value) {
  return Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, Math.round(value)))
}

function initDivider() {
  const workspace = byId('workspace')
  const divider = byId('divider')
  const apply = (value, { save = true } = {}) => {
    const width = clampWidth(value)
    workspace.style.setProperty('--chat-width', `${width}%`)
    divider.setAttribute('aria-valuenow', String(width))
    divider.setAttribute('aria-valuetext', `chat ${width}% of the width`)
    if (save) localStorage.setItem(STORED_WIDTH, String(width))
    return width
  }
  const current = () => Number(divider.getAttribute('aria-valuenow'))
  const stored = Number(localStorage.getItem(STORED_WIDTH))
  apply(Number.isFinite(stored) && stored > 0 ? stored : DEFAULT_WIDTH, { save: false })

  divider.addEventListener('keydown', (event) => {
    const next = { ArrowLeft: current() + KEY_STEP, ArrowRight: current() - KEY_STEP, Home: MIN_WIDTH, End: MAX_WIDTH }[event.key]
    if (next === undefined) return
    event.preventDefault()
    apply(next)
  })

  divider.addEventListener('pointerdown', (event) => {
    if (event.button !== 0) return
    event.preventDefault()
    divider.setPointerCapture(event.pointerId)
    workspace.classList.add('is-resizing')
    const rect = workspace.getBoundingClientRect()
    const onMove = (move) => apply(((rect.right - move.clientX) / rect.width) * 100, { save: false })
    const onUp = () => {
      divider.removeEventListener('pointermove', onMove)
      workspace.classList.remove('is-resizing')
      apply(current())
    }
    divider.addEventListener('pointermove', onMove)
    divider.addEventListener('pointerup', onUp, { once: true })
    divider.addEventListener('pointercancel', onUp, { once: true })
  })
}

function setExpanded(toggle, expanded) {
  const group = byId(toggle.getAttribute('aria-controls'))
  toggle.setAttribute('aria-expanded', String(expanded))
  const name = toggle.closest('.node').querySelector('.name')?.textContent ?? ''
  toggle.setAttribute('aria-label', `${expanded ? 'Collapse' : 'Expand'} ${name}`)
  if (group) group.hidden = !expanded
}

function initTree() {
  document.addEventListener('click', (event) => {
    const toggle = event.target.closest('.twisty')
    if (toggle) setExpanded(toggle, toggle.getAttribute('aria-expanded') !== 'true')
  })
}

/** Highlights the node on show in the tree (again after any swap in the tree: it comes back unmarked). */
function markCurrent(nodeUri = byId('content')?.dataset.nodeUri) {
  for (const link of document.querySelectorAll('#tree [data-node-uri]')) {
    if (link.dataset.nodeUri === nodeUri) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
}

/** The whole tree again, open down to `uri` (after a change, or to show a node it has not loaded). */
export function refreshTree(uri) {
  // Each pane's requests are queued on the pane itself: htmx keeps one queued request per source.
  return htmx.ajax('GET', `/workspace/tree/whole?uri=${encodeURIComponent(uri)}`, { source: byId('tree') ?? document.body, target: '#tree', swap: 'outerHTML' })
}

/** The tree opens down to the node on show, and opens its folder. */
function revealInTree(nodeUri, directoryUri) {
  const link = document.querySelector(`#tree [data-node-uri="${CSS.escape(nodeUri)}"]`)
  // Not loaded yet: the tree again, open down to the folder (which exists even when the node is a
  // missing one, shown as a problem), its children included.
  if (!link) return refreshTree(directoryUri)
  for (const toggle of [...document.querySelectorAll('#tree .twisty[aria-expanded="false"]')]) {
    const item = toggle.closest('.node.directory')
    if (item.contains(link) || item.dataset.uri === directoryUri) toggle.click() // lazily loads the directory's children once
  }
}

let keepChatOnce = false
let revealOnce = false

const contentHref = (uri, offset) => `/workspace/content?uri=${encodeURIComponent(uri)}${offset === undefined ? '' : `&offset=${offset}`}`
const pageHref = (uri, offset) => `/workspace?uri=${encodeURIComponent(uri)}${offset === undefined ? '' : `&offset=${offset}`}`

/**
 * Shows a node in the content pane, in place (pushed to the history). `keepChat`: the chat stays
 * on its directory (a citation, a refresh after a change) instead of following. `reveal`: the tree
 * opens down to the node even when the chat stays (a node opened from outside the tree).
 */
export function openNode(uri, { offset, keepChat = false, reveal = false } = {}) {
  keepChatOnce = keepChat
  revealOnce = reveal
  document.body.classList.remove('chat-open') // at phone width the preview is under the chat
  const source = byId('content') ?? document.body // htmx keeps one queued request per source element
  return htmx.ajax('GET', contentHref(uri, offset), { source, target: '#content', swap: 'outerHTML', push: pageHref(uri, offset) })
}

function showPassage() {
  const passage = byId('passage')
  if (!passage) return
  passage.scrollIntoView({ block: 'center' })
  passage.focus({ preventScroll: true })
}

function initNavigation({ chat }) {
  document.addEventListener('htmx:after:swap', (event) => {
    // Only a new content pane decides: other swaps (the tree, a dialog) may land while it loads.
    if (event.detail?.ctx?.target?.id !== 'content') return
    const content = byId('content')
    const [keepChat, reveal] = [keepChatOnce, revealOnce]
    keepChatOnce = revealOnce = false
    const directoryUri = content?.dataset.directoryUri
    if (!directoryUri) return
    markCurrent()
    showPassage()
    const follows = !keepChat && directoryUri !== chat.directoryUri() // else the conversation goes on
    if (follows) chat.resetConversation(directoryUri)
    if (follows || reveal) revealInTree(content.dataset.nodeUri, directoryUri)
  })
  // The refreshed tree (an upload, a change) and a directory's children arrive unmarked.
  document.addEventListener('htmx:after:swap', (event) => {
    if (event.detail?.ctx?.target?.closest?.('#tree')) markCurrent() // the old #tree itself, or a group inside it
  })
  markCurrent()
  showPassage()
  document.addEventListener('click', (event) => {
    const link = event.target.closest('a.kb-cite[data-uri], a.search-hit[data-node-uri]')
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return
    event.preventDefault()
    link.closest('dialog')?.close()
    const offset = link.dataset.offset === undefined ? undefined : Number(link.dataset.offset)
    // A citation is of a file the chat's own scope holds: the conversation goes on. A search hit
    // (the whole workspace) is navigation: the chat moves to the hit's folder, as from the tree.
    openNode(link.dataset.uri ?? link.dataset.nodeUri, { offset, keepChat: link.matches('.kb-cite'), reveal: true })
  })
}

function initPhoneToggle({ chat }) {
  const toggle = byId('chat-toggle')
  const close = byId('chat-close')
  const setOpen = (open) => {
    document.body.classList.toggle('chat-open', open)
    toggle.setAttribute('aria-expanded', String(open))
    if (open) chat.focusComposer()
    else toggle.focus()
  }
  toggle.addEventListener('click', () => setOpen(true))
  close.addEventListener('click', () => setOpen(false))
}

export function initWorkspace({ chat }) {
  initDivider()
  initTree()
  initNavigation({ chat })
  initPhoneToggle({ chat })
}
