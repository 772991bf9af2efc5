// The workspace page around the chat: the resizable divider (drag, arrow keys, remembered), the
// lazily loaded tree, in-page navigation (a new directory switches to that directory's
// conversation; a citation or a search hit opens its passage and keeps the chat) and the
// phone-width chat toggle.
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

function markCurrent(nodeUri) {
  for (const link of document.querySelectorAll('#tree [data-node-uri]')) {
    if (link.dataset.nodeUri === nodeUri) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
}

function expandTreeTo(directoryUri) {
  const item = document.querySelector(`#tree .node.directory[data-uri="${CSS.escape(directoryUri)}"]`)
  const toggle = item?.querySelector(':scope > .row > .twisty')
  if (toggle && toggle.getAttribute('aria-expanded') !== 'true') toggle.click()
}

let keepChatOnce = false

const contentHref = (uri, offset) => `/workspace/content?uri=${encodeURIComponent(uri)}${offset === undefined ? '' : `&offset=${offset}`}`
const pageHref = (uri, offset) => `/workspace?uri=${encodeURIComponent(uri)}${offset === undefined ? '' : `&offset=${offset}`}`

/**
 * Shows a node in the content pane, in place (pushed to the history). `keepChat`: the chat stays
 * on its directory (a citation, a search hit, a refresh after a change) instead of following.
 */
export function openNode(uri, { offset, keepChat = false } = {}) {
  keepChatOnce = keepChat
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
    const keepChat = keepChatOnce
    keepChatOnce = false
    const directoryUri = content?.dataset.directoryUri
    if (!directoryUri) return
    markCurrent(content.dataset.nodeUri)
    showPassage()
    if (keepChat || directoryUri === chat.directoryUri()) return // the conversation goes on
    chat.resetConversation(directoryUri)
    expandTreeTo(directoryUri)
  })
  markCurrent(byId('content')?.dataset.nodeUri)
  showPassage()
  document.addEventListener('click', (event) => {
    const link = event.target.closest('a.kb-cite[data-uri], a.search-hit[data-node-uri]')
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return
    event.preventDefault()
    link.closest('dialog')?.close()
    const offset = link.dataset.offset === undefined ? undefined : Number(link.dataset.offset)
    openNode(link.dataset.uri ?? link.dataset.nodeUri, { offset, keepChat: true })
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
