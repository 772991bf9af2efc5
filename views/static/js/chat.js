// The chat's turn lifecycle in the page. htmx posts the composer form to /workspace/chat/stream
// and its SSE extension swaps each HTML fragment as it arrives; this module adds the messages,
// keeps the conversation's history (from the terminal event) in the form's hidden field, and
// decides how a turn ended:
//   named `done` / `error` event     → the server's terminal (history updated)
//   request ended without a terminal → stopped (Stop pressed) or failed (EOF, HTTP error,
//                                      network): what arrived stays, with a notice
// Stop aborts the htmx request (the server sees the disconnect and cancels the turn).
import { newMessageKey } from './message-key.js'
import { fetchEventStream } from './sse-line-endings.js'

const byId = (id) => document.getElementById(id)
const STORED_MODEL = 'knowagent.model'

function cloneMessage(templateId, prefix, key) {
  const node = byId(templateId).content.firstElementChild.cloneNode(true)
  node.id = `${prefix}-${key}`
  for (const part of node.querySelectorAll('[data-part]')) part.id = `${node.id}-${part.dataset.part}`
  return node
}

function textOfHtml(html) {
  const text = new DOMParser().parseFromString(html ?? '', 'text/html').body.textContent ?? ''
  return text.replace(/\s+/g, ' ').trim().slice(0, 500)
}

function failureOf(ctx) {
  const response = ctx?.response
  if (!response) return { title: 'Could not reach the server', message: 'The question was not answered. Check your connection and try again.' }
  const type = response.headers?.get?.('content-type') ?? ''
  if (!type.includes('text/event-stream')) {
    return { title: `The server refused the question (${response.status})`, message: textOfHtml(ctx.text) || 'No reason was given.' }
  }
  return { title: 'The answer was cut off', message: 'The connection ended before the answer was complete. What arrived is kept above.' }
}

function noticeElement({ title, message, kind }) {
  const notice = document.createElement('div')
  notice.className = kind === 'stopped' ? 'turn-stopped' : 'turn-error'
  notice.setAttribute('role', kind === 'stopped' ? 'status' : 'alert')
  const strong = document.createElement('strong')
  strong.textContent = title
  const span = document.createElement('span')
  span.textContent = message
  notice.append(strong, span)
  return notice
}

export function initChat() {
  const form = byId('chat-form')
  const log = byId('chat-log')
  const textarea = byId('chat-message')
  const sendButton = byId('chat-send')
  const stopButton = byId('chat-stop')
  const historyField = byId('chat-history')
  const uriField = byId('chat-uri')
  const modelSelect = byId('chat-model')
  const initialMeter = { summary: byId('context-summary').innerHTML, detail: byId('context-detail').innerHTML }
  let active = null // the turn in flight: { ctx, article, stopped }
  let commandHandler = () => {}
  let keyInterceptor = () => false
  let stickToEnd = true

  log.addEventListener('scroll', () => {
    stickToEnd = log.scrollHeight - log.scrollTop - log.clientHeight < 80
  })
  new MutationObserver(() => {
    if (stickToEnd) log.scrollTop = log.scrollHeight
  }).observe(log, { childList: true, subtree: true, characterData: true })

  function appendMessage(node) {
    byId('chat-welcome')?.remove()
    stickToEnd = true
    log.append(node)
    return node
  }

  function addUserMessage(text, { command = false, key = newMessageKey() } = {}) {
    const node = cloneMessage('user-message-template', 'u', key)
    node.querySelector('[data-part="text"]').textContent = text
    if (command) node.classList.add('is-command')
    return appendMessage(node)
  }

  function addPendingCommand(key) {
    return appendMessage(cloneMessage('command-pending-template', 'c', key))
  }

  function addNote(text) {
    const node = cloneMessage('command-pending-template', 'c', newMessageKey())
    node.classList.remove('is-pending')
    node.classList.add('is-note')
    node.querySelector('.msg-status').textContent = text
    return appendMessage(node)
  }

  function setStreaming(streaming) {
    form.classList.toggle('is-streaming', streaming)
    sendButton.hidden = streaming
    stopButton.hidden = !streaming
    if (!streaming && document.activeElement === stopButton) textarea.focus()
  }

  function clearComposer() {
    textarea.value = ''
    textarea.dispatchEvent(new Event('input'))
  }

  function selectedModel() {
    return modelSelect.selectedOptions[0]
  }

  function showModelCapability() {
    const option = selectedModel()
    const tools = option?.dataset.tools !== 'false'
    const badge = byId('model-capability')
    badge.textContent = tools ? 'Tools' : 'Text only'
    badge.className = `capability ${tools ? 'tools' : 'text-only'}`
    byId('model-notice').hidden = tools
  }

  function startTurn(event) {
    const body = event.detail.ctx.request.body
    const message = String(body.get('message') ?? '').trim()
    if (active || message === '') return event.preventDefault()
    if (message.startsWith('/')) {
      event.preventDefault() // a command never reaches the model
      clearComposer()
      return commandHandler(message)
    }
    // Keys first, outside the request's lifecycle: nothing below can leave a half-made turn.
    const userKey = newMessageKey()
    const assistantKey = newMessageKey()
    body.set('message', message)
    body.set('message_key', assistantKey)
    event.detail.ctx.fetch = fetchEventStream
    addUserMessage(message, { key: userKey })
    const article = cloneMessage('assistant-message-template', 'a', assistantKey)
    article.querySelector('[data-part="model"]').textContent = selectedModel()?.textContent.split(' · ')[0] ?? ''
    appendMessage(article)
    active = { ctx: event.detail.ctx, article, stopped: false }
    clearComposer()
    setStreaming(true)
  }

  /** The turn is over for the person: the message gets its final state and Send comes back. */
  function settle(outcome, failure) {
    const { article } = active
    active = null
    article.classList.remove('is-streaming')
    article.removeAttribute('aria-busy')
    article.classList.add(`is-${outcome}`)
    if (failure) {
      byId(`${article.id}-body`).append(noticeElement(failure))
      byId(`${article.id}-status`).textContent = failure.kind === 'stopped' ? 'Stopped' : 'Failed'
    }
    setStreaming(false)
  }

  /** The server's terminal `done` / `error`: its history becomes the conversation. */
  function onTerminal(type, event) {
    if (!active || typeof event.detail?.data !== 'string') return
    let data
    try {
      data = JSON.parse(event.detail.data)
    } catch {
      return // not a terminal we can read: the end of the request decides
    }
    if (Array.isArray(data.history)) historyField.value = JSON.stringify(data.history)
    if (typeof data.turn_id === 'string') active.article.dataset.turnId = data.turn_id
    settle(type === 'done' ? 'done' : 'failed')
  }

  /** The request ended (EOF, abort, HTTP error, network): only a turn without a terminal is left. */
  function onRequestEnd(event) {
    if (!active || event.detail?.ctx !== active.ctx) return
    if (active.stopped) return settle('stopped', { kind: 'stopped', title: 'Stopped', message: 'You stopped this answer; what arrived is kept.' })
    settle('failed', { kind: 'error', ...failureOf(event.detail.ctx) })
  }

  function stop() {
    if (!active || active.stopped) return
    active.stopped = true
    byId(`${active.article.id}-status`).textContent = 'Stopping…'
    htmx.trigger(form, 'htmx:abort')
  }

  /** A new directory: the running answer is cancelled and a new conversation starts. */
  function resetConversation(directoryUri) {
    if (active) {
      htmx.trigger(form, 'htmx:abort') // the server sees the disconnect and cancels the turn
      active = null // its end is ignored: the conversation it belonged to is gone
      setStreaming(false)
    }
    log.replaceChildren()
    historyField.value = '[]'
    uriField.value = directoryUri
    byId('uri-prefix-text').textContent = directoryUri
    for (const bound of document.querySelectorAll('[data-bind="directory-uri"]')) bound.textContent = directoryUri
    byId('context-summary').innerHTML = initialMeter.summary
    byId('context-detail').innerHTML = initialMeter.detail
    htmx.ajax('GET', `/workspace/chat/welcome?uri=${encodeURIComponent(directoryUri)}`, { target: '#chat-log', swap: 'innerHTML' })
  }

  form.addEventListener('htmx:config:request', startTurn)
  form.addEventListener('done', (event) => onTerminal('done', event))
  form.addEventListener('error', (event) => onTerminal('error', event))
  form.addEventListener('htmx:finally:request', onRequestEnd)
  stopButton.addEventListener('click', stop)

  textarea.addEventListener('keydown', (event) => {
    if (keyInterceptor(event)) return
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault()
      if (!active && textarea.value.trim() !== '') form.requestSubmit()
    }
  })
  textarea.addEventListener('input', () => {
    textarea.style.height = 'auto'
    textarea.style.height = `${Math.min(textarea.scrollHeight, 220)}px`
  })

  const stored = localStorage.getItem(STORED_MODEL)
  if (stored && [...modelSelect.options].some((option) => option.value === stored)) modelSelect.value = stored
  showModelCapability()
  modelSelect.addEventListener('change', () => {
    localStorage.setItem(STORED_MODEL, modelSelect.value)
    showModelCapability()
  })

  log.addEventListener('click', (event) => {
    const example = event.target.closest('.example[data-question]')
    if (!example || active) return
    textarea.value = example.dataset.question
    form.requestSubmit()
  })

  byId('chat-new').addEventListener('click', () => resetConversation(uriField.value))

  return {
    directoryUri: () => uriField.value,
    isStreaming: () => active !== null,
    addUserMessage,
    addPendingCommand,
    addNote,
    resetConversation,
    focusComposer: () => textarea.focus(),
    onCommand: (handler) => {
      commandHandler = handler
    },
    interceptKeys: (interceptor) => {
      keyInterceptor = interceptor
    },
  }
}
