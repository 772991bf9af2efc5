// The chat's turn lifecycle in the page. htmx posts the composer form to /workspace/chat/stream
// and its SSE extension swaps each HTML fragment as it arrives; this module adds the messages,
// keeps the conversation's history (from the terminal event) in the form's hidden field, and
// decides how a turn ended:
//   named `done` / `error` event     → the server's terminal (history updated)
//   request ended without a terminal → stopped (Stop pressed) or failed (EOF, HTTP error,
//                                      network): what arrived stays, with a notice
// Stop aborts the htmx request (the server sees the disconnect and cancels the turn).
// The conversation (the log as shown, the history and the context meter's last figure) is kept in
// the tab's sessionStorage per directory, so a reload, back/forward or returning to a folder
// restores it; "New chat" clears it, and it is the signed-in person's only (stored-chats.js).
// A stopped or cut-off answer goes into the history as the person saw it: its text, marked, and
// its tool calls paired with their results (or with "stopped" when they had none).
import { newMessageKey } from './message-key.js'
import { fetchEventStream } from './sse-line-endings.js'
import { forgetStoredChats, STORED_CHAT, tabStorage as session } from './stored-chats.js'

const byId = (id) => document.getElementById(id)
const STORED_MODEL = 'knowagent.model'
const STOPPED_MARK = '[This answer was stopped by the user; the text above is incomplete.]'
const CUT_OFF_MARK = '[This answer was cut off: the connection ended before it was complete.]'

/** What a stopped or cut-off answer adds to the history: the text and paired tool calls it showed. */
function historyOfArticle(article, mark) {
  const messages = []
  let text = ''
  let calls = []
  const flush = () => {
    if (text === '' && calls.length === 0) return
    messages.push({
      role: 'assistant',
      content: text === '' ? null : text,
      ...(calls.length > 0 ? { tool_calls: calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.args } })) } : {}),
    })
    for (const call of calls) messages.push({ role: 'tool', tool_call_id: call.id, content: call.result })
    text = ''
    calls = []
  }
  const body = article.querySelector('[data-part="body"]')
  for (const part of body?.children ?? []) {
    if (part.matches('.answer[data-md]')) {
      if (calls.length > 0) flush()
      text += (text === '' ? '' : '\n\n') + part.dataset.md
    } else if (part.matches('.tool-card[data-call-id]')) {
      const state = part.querySelector('.tool-summary')
      const summary = part.querySelector('.tool-result')?.textContent.trim() ?? ''
      const result = state?.classList.contains('ok')
        ? { summary }
        : state?.classList.contains('error')
          ? { error: { code: 'tool_failed', message: summary.replace(/^Error:\s*/, '') } }
          : { error: { code: 'cancelled', message: 'the answer ended before this tool finished' } }
      calls.push({ id: part.dataset.callId, name: part.dataset.tool ?? '', args: part.dataset.args ?? '{}', result: JSON.stringify(result) })
    }
  }
  if (calls.length > 0) flush()
  text += (text === '' ? '' : '\n\n') + mark
  flush()
  return messages
}

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
  return { partial: true, title: 'The answer was cut off', message: 'The connection ended before the answer was complete. What arrived is kept above.' }
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
  const meterSummary = byId('context-summary')
  const meterDetail = byId('context-detail')
  const initialMeter = { summary: meterSummary.innerHTML, detail: meterDetail.innerHTML }
  let active = null // the turn in flight: { ctx, article, stopped, message, historyBefore, startedAt }
  let lastQuestion = ''
  let saveTimer
  let commandHandler = () => {}
  let keyInterceptor = () => false
  let stickToEnd = true

  log.addEventListener('scroll', () => {
    stickToEnd = log.scrollHeight - log.scrollTop - log.clientHeight < 80
  })
  new MutationObserver(() => {
    if (stickToEnd) log.scrollTop = log.scrollHeight
    saveSoon()
  }).observe(log, { childList: true, subtree: true, characterData: true })

  // ── the conversation in sessionStorage, per directory ──
  const storageKey = (directoryUri) => STORED_CHAT + directoryUri
  function saveNow() {
    clearTimeout(saveTimer)
    saveTimer = undefined
    const storage = session()
    if (!storage || active) return
    const key = storageKey(uriField.value)
    try {
      if (!log.querySelector('.msg')) return storage.removeItem(key)
      const meter = { summary: meterSummary.innerHTML, detail: meterDetail.innerHTML }
      storage.setItem(key, JSON.stringify({ history: JSON.parse(historyField.value || '[]'), log: log.innerHTML, lastQuestion, meter }))
    } catch {
      // full or unavailable: the page still has the conversation
    }
  }
  function saveSoon() {
    if (!active) saveTimer ??= setTimeout(saveNow, 0)
  }
  function restore(directoryUri) {
    let stored
    try {
      stored = JSON.parse(session()?.getItem(storageKey(directoryUri)) ?? 'null')
    } catch {
      return false
    }
    if (!stored || !Array.isArray(stored.history) || typeof stored.log !== 'string') return false
    log.innerHTML = stored.log
    historyField.value = JSON.stringify(stored.history)
    lastQuestion = typeof stored.lastQuestion === 'string' ? stored.lastQuestion : ''
    if (typeof stored.meter?.summary === 'string' && typeof stored.meter.detail === 'string') {
      meterSummary.innerHTML = stored.meter.summary
      meterDetail.innerHTML = stored.meter.detail
    }
    return true
  }

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
    const historyBefore = JSON.parse(historyField.value || '[]')
    article.dataset.historyBefore = String(historyBefore.length)
    article.dataset.question = message
    appendMessage(article)
    lastQuestion = message
    active = { ctx: event.detail.ctx, article, stopped: false, message, historyBefore, startedAt: performance.now() }
    clearComposer()
    setStreaming(true)
  }

  /** The turn is over for the person: the message gets its final state and Send comes back. */
  function settle(outcome, failure) {
    const { article, message, historyBefore, startedAt } = active
    if (failure && failure.partial) {
      // No terminal from the server: the history gets what the person saw, marked.
      const added = historyOfArticle(article, failure.kind === 'stopped' ? STOPPED_MARK : CUT_OFF_MARK)
      historyField.value = JSON.stringify([...historyBefore, { role: 'user', content: message }, ...added])
    }
    active = null
    article.classList.remove('is-streaming')
    article.removeAttribute('aria-busy')
    article.classList.add(`is-${outcome}`)
    if (failure) {
      byId(`${article.id}-body`).append(noticeElement(failure))
      byId(`${article.id}-status`).textContent = failure.kind === 'stopped' ? 'Stopped' : failure.partial ? 'Cut off' : 'Failed'
    }
    addAnswerTools(article, performance.now() - startedAt)
    setStreaming(false)
    saveNow()
  }

  /** Copy (the markdown source), Retry (the last answer only) and the time the answer took. */
  function addAnswerTools(article, elapsedMs) {
    const head = article.querySelector('.msg-head')
    const elapsed = document.createElement('span')
    elapsed.className = 'elapsed'
    elapsed.textContent = `${(elapsedMs / 1000).toFixed(1)} s`
    const tools = document.createElement('span')
    tools.className = 'answer-tools'
    const copy = document.createElement('button')
    copy.type = 'button'
    copy.className = 'ghost small'
    copy.dataset.answerAction = 'copy'
    copy.textContent = 'Copy'
    const retry = document.createElement('button')
    retry.type = 'button'
    retry.className = 'ghost small'
    retry.dataset.answerAction = 'retry'
    retry.textContent = 'Retry'
    tools.append(copy, retry)
    head.append(elapsed, tools)
  }

  function markdownOf(article) {
    return [...article.querySelectorAll('.answer[data-md]')].map((part) => part.dataset.md).join('\n\n')
  }

  async function copyAnswer(article, button) {
    const text = markdownOf(article)
    try {
      await navigator.clipboard.writeText(text)
    } catch {
      const area = document.createElement('textarea')
      area.value = text
      document.body.append(area)
      area.select()
      document.execCommand('copy')
      area.remove()
    }
    button.textContent = 'Copied'
    setTimeout(() => (button.textContent = 'Copy'), 1500)
  }

  /** Asks the last question again: the last exchange leaves the log and the history first. */
  function retry(article) {
    if (active || article !== [...log.querySelectorAll('.msg.assistant')].at(-1)) return
    const question = article.dataset.question
    if (!question) return
    const before = Number(article.dataset.historyBefore ?? 0)
    historyField.value = JSON.stringify(JSON.parse(historyField.value || '[]').slice(0, before))
    const user = article.previousElementSibling
    if (user?.matches('.msg.user')) user.remove()
    article.remove()
    textarea.value = question
    form.requestSubmit()
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
    if (active.stopped) return settle('stopped', { kind: 'stopped', partial: true, title: 'Stopped', message: 'You stopped this answer; what arrived is kept.' })
    const failure = failureOf(event.detail.ctx)
    settle('failed', { kind: 'error', ...failure })
  }

  function stop() {
    if (!active || active.stopped) return
    active.stopped = true
    byId(`${active.article.id}-status`).textContent = 'Stopping…'
    htmx.trigger(form, 'htmx:abort')
  }

  /** Another directory: a running answer is stopped (kept, marked) and that directory's conversation shown. */
  function resetConversation(directoryUri, { fresh = false } = {}) {
    if (active) {
      active.stopped = true
      const ending = active
      htmx.trigger(form, 'htmx:abort') // the server sees the disconnect and cancels the turn
      if (active === ending) settle('stopped', { kind: 'stopped', partial: true, title: 'Stopped', message: 'You left this folder; what arrived is kept.' })
    }
    saveNow()
    stickToEnd = true
    log.replaceChildren()
    historyField.value = '[]'
    lastQuestion = ''
    uriField.value = directoryUri
    byId('uri-prefix-text').textContent = directoryUri
    for (const bound of document.querySelectorAll('[data-bind="directory-uri"]')) bound.textContent = directoryUri
    meterSummary.innerHTML = initialMeter.summary
    meterDetail.innerHTML = initialMeter.detail
    if (fresh) session()?.removeItem(storageKey(directoryUri)) // this folder's conversation only, not those of folders below it
    else if (restore(directoryUri)) return
    htmx.ajax('GET', `/workspace/chat/welcome?uri=${encodeURIComponent(directoryUri)}`, { source: log, target: '#chat-log', swap: 'innerHTML' })
  }

  /** A folder was renamed or moved: conversations kept under it follow it; the chat's own directory too. */
  function moveDirectory(from, to) {
    const storage = session()
    if (storage) {
      for (let i = storage.length - 1; i >= 0; i--) {
        const key = storage.key(i)
        if (!key?.startsWith(storageKey(from))) continue
        const value = storage.getItem(key)
        storage.removeItem(key)
        try {
          storage.setItem(storageKey(to + key.slice(storageKey(from).length)), value)
        } catch {}
      }
    }
    const current = uriField.value
    if (current === from || (from.endsWith('/') && current.startsWith(from))) {
      const next = to + current.slice(from.length)
      uriField.value = next
      byId('uri-prefix-text').textContent = next
      for (const bound of document.querySelectorAll('[data-bind="directory-uri"]')) bound.textContent = next
    }
  }

  /** A folder was deleted: its conversations go; a chat inside it moves to the folder that held it. */
  function forgetDirectory(deleted, parent) {
    const current = uriField.value
    forgetStoredChats(deleted) // the folder's and those of every folder below it
    if (current === deleted || (deleted.endsWith('/') && current.startsWith(deleted))) resetConversation(parent)
  }

  form.addEventListener('htmx:config:request', startTurn)
  form.addEventListener('done', (event) => onTerminal('done', event))
  form.addEventListener('error', (event) => onTerminal('error', event))
  form.addEventListener('htmx:finally:request', onRequestEnd)
  stopButton.addEventListener('click', stop)

  textarea.addEventListener('keydown', (event) => {
    if (keyInterceptor(event)) return
    if (event.key === 'Escape' && active) {
      event.preventDefault()
      return stop()
    }
    if (event.key === 'ArrowUp' && textarea.value === '' && lastQuestion !== '' && !event.isComposing) {
      event.preventDefault()
      textarea.value = lastQuestion
      textarea.dispatchEvent(new Event('input'))
      return
    }
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
    const action = event.target.closest('[data-answer-action]')
    if (action) {
      const article = action.closest('.msg.assistant')
      if (action.dataset.answerAction === 'copy') copyAnswer(article, action)
      else retry(article)
      return
    }
    const example = event.target.closest('.example[data-question]')
    if (!example || active) return
    textarea.value = example.dataset.question
    form.requestSubmit()
  })

  byId('chat-new').addEventListener('click', () => resetConversation(uriField.value, { fresh: true }))
  restore(uriField.value)
  // Leaving the page mid-answer (reload, back): the answer so far is kept as a cut-off one.
  window.addEventListener('pagehide', () => {
    if (!active) return
    active.stopped = true
    settle('stopped', { kind: 'stopped', partial: true, title: 'Stopped', message: 'The page was left while this answer was arriving; what arrived is kept.' })
  })

  return {
    directoryUri: () => uriField.value,
    isStreaming: () => active !== null,
    addUserMessage,
    addPendingCommand,
    addNote,
    resetConversation,
    moveDirectory,
    forgetDirectory,
    focusComposer: () => textarea.focus(),
    onCommand: (handler) => {
      commandHandler = handler
    },
    interceptKeys: (interceptor) => {
      keyInterceptor = interceptor
    },
  }
}
