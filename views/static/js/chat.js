// The chat's turn lifecycle in the page. htmx posts the composer form to /workspace/chat/stream
// and its SSE extension swaps each HTML fragment as it arrives; this module adds the messages,
// keeps the conversation's history (from the terminal event) in the form's hidden field, and
// decides how a turn ended:
//   named `done` / `error` event     → the server's terminal (its history becomes the conversation;
//                                      a Stop ends this way too, with the partial answer in it)
//   request ended without a terminal → the stream is picked up again (GET …/turns/:id/events with
//                                      Last-Event-ID, from any instance: "Reconnecting…"), until a
//                                      terminal arrives or the server says it cannot be had
// Stop is a command (POST /api/v1/knowledge-agent/turns/:id/stop) that reaches the turn wherever it
// runs; the stream stays open for its terminal. Only when the command cannot be sent is the
// request aborted (the server cancels a turn whose client is gone after its grace period).
// The conversation (the log as shown, the history and the context meter's last figure) is kept in
// the tab's sessionStorage per directory, so a reload, back/forward or returning to a folder
// restores it; "New chat" clears it, and it is the signed-in person's only (stored-chats.js).
import { newMessageKey } from './message-key.js'
import { fetchEventStream } from './sse-line-endings.js'
import { forgetStoredChats, STORED_CHAT, tabStorage as session } from './stored-chats.js'

const byId = (id) => document.getElementById(id)
const STORED_MODEL = 'knowagent.model'
const STOPPED_MARK = '[This answer was stopped by the user; the text above is incomplete.]'
const CUT_OFF_MARK = '[This answer was cut off: the connection ended before it was complete.]'
const SERVER_STOPPED_MARK = '[This answer was cut off: the server stopped before it was complete.]'

/**
 * The history of an answer without the server's: the page stopped waiting for the terminal, or
 * the terminal had none (its server died). The question and the mark — the text only as the
 * server gave it, never rebuilt from the page.
 */
function unansweredHistory({ historyBefore, message, mark }) {
  return [...historyBefore, { role: 'user', content: message }, { role: 'assistant', content: mark }]
}

/** After this many attempts in a row without getting the stream back, the answer is shown as cut off. */
const MAX_RESUME_ATTEMPTS = 8
const resumeDelayMs = (attempt) => Math.min(8000, 250 * 2 ** (attempt - 1))

const csrfToken = () => document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? ''

/** Sends the Stop command for a turn; true when the server took it (or the turn was already over). */
async function sendStop(turnId, { keepalive = false } = {}) {
  if (!turnId) return false
  try {
    const response = await fetch(`/api/v1/knowledge-agent/turns/${encodeURIComponent(turnId)}/stop`, {
      method: 'POST',
      headers: { 'X-CSRF-Token': csrfToken() },
      keepalive,
    })
    return response.ok
  } catch {
    return false
  }
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
  const WELCOME_PATH = '/workspace/chat/welcome'
  const log = byId('chat-log')
  const textarea = byId('chat-message')
  const sendButton = byId('chat-send')
  const stopButton = byId('chat-stop')
  const historyField = byId('chat-history')
  const uriField = byId('chat-uri')
  const modelSelect = byId('chat-model')
  const meterSummary = byId('context-summary')
  const meterDetail = byId('context-detail')
  const resumeSource = byId('chat-resume') // the source of the requests that pick a stream up again
  const initialMeter = { summary: meterSummary.innerHTML, detail: meterDetail.innerHTML }
  // The turn in flight: { ctx, source, article, key, message, historyBefore, startedAt, turnId,
  // lastEventId, stopping, aborted, inFlight, attempts, resumeTimer }
  let active = null
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
    active = {
      ctx: event.detail.ctx,
      source: form,
      article,
      key: assistantKey,
      message,
      historyBefore,
      startedAt: performance.now(),
      turnId: '',
      lastEventId: '',
      stopping: false,
      aborted: false,
      inFlight: true,
      attempts: 0,
      resumeTimer: undefined,
    }
    clearComposer()
    setStreaming(true)
  }

  /** The turn is over for the person: the message gets its final state and Send comes back. */
  function settle(outcome, failure) {
    const { article, message, historyBefore, startedAt } = active
    clearTimeout(active.resumeTimer)
    if (failure && failure.partial) {
      // No terminal from the server will come to this page: the question stays in the history, marked.
      historyField.value = JSON.stringify(unansweredHistory({ historyBefore, message, mark: failure.kind === 'stopped' ? STOPPED_MARK : CUT_OFF_MARK }))
    }
    active = null
    article.classList.remove('is-streaming', 'is-reconnecting')
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
    if (!active || event.detail?.data === undefined || typeof event.detail.data !== 'string') return
    let data
    try {
      data = JSON.parse(event.detail.data)
    } catch {
      return // not a terminal we can read: the end of the request decides
    }
    if (Array.isArray(data.history)) historyField.value = JSON.stringify(data.history)
    else {
      // No history (its server died: turn.interrupted): the question, and the text the server says it had, marked.
      const partial = typeof data.partial === 'string' && data.partial !== '' ? `${data.partial}\n\n` : ''
      historyField.value = JSON.stringify(unansweredHistory({ historyBefore: active.historyBefore, message: active.message, mark: partial + SERVER_STOPPED_MARK }))
    }
    if (typeof data.turn_id === 'string') active.article.dataset.turnId = data.turn_id
    settle(type === 'done' ? 'done' : data.code === 'cancelled' ? 'stopped' : 'failed')
  }

  /** The turn's stream (the POST's, or a pick-up's) is open: its response headers name the turn. */
  function onStreamOpen(event) {
    const ctx = active?.ctx
    if (!active || event.target !== active.source || !ctx?.response) return
    const turnId = ctx.response.headers?.get?.('x-turn-id')
    if (turnId) active.turnId = turnId
    active.attempts = 0 // streaming again
    active.article.classList.remove('is-reconnecting')
  }

  /** Each message's `id:` is the number of the last event it reflects: where a pick-up continues. */
  function onMessage(event) {
    const id = event.detail?.message?.id
    if (active && event.detail?.connection && typeof id === 'string' && id !== '') active.lastEventId = id
  }

  /** The request ended (EOF, abort, HTTP error, network) before the terminal: the stream is picked up again if it can be. */
  function onRequestEnd(event) {
    if (!active || event.detail?.ctx !== active.ctx) return
    active.inFlight = false
    if (active.aborted) return settle('stopped', { kind: 'stopped', partial: true, title: 'Stopped', message: 'You stopped this answer; what arrived is kept.' })
    const ctx = event.detail.ctx
    const status = ctx.response?.status
    const failure = failureOf(ctx)
    if (!active.turnId || (status !== undefined && !failure.partial && status < 500)) {
      // Refused (4xx), or never started: nothing to pick up again. A pick-up refused (404, 410) leaves what arrived.
      return settle('failed', active.source === resumeSource ? { kind: 'error', ...cutOff() } : { kind: 'error', ...failure })
    }
    scheduleResume()
  }

  const cutOff = () => ({ partial: true, title: 'The answer was cut off', message: 'The connection ended before the answer was complete. What arrived is kept above.' })

  /** "Reconnecting…", then GET the turn's events after the last one shown, backing off, waiting while offline. */
  function scheduleResume() {
    const turn = active
    turn.attempts += 1
    if (turn.attempts > MAX_RESUME_ATTEMPTS) return settle('failed', { kind: 'error', ...cutOff() })
    turn.article.classList.add('is-reconnecting')
    byId(`${turn.article.id}-status`).textContent = 'Reconnecting…'
    const go = () => {
      if (active !== turn) return
      if (navigator.onLine === false) return window.addEventListener('online', go, { once: true })
      turn.source = resumeSource
      htmx.ajax('GET', `/workspace/chat/turns/${encodeURIComponent(turn.turnId)}/events?message_key=${encodeURIComponent(turn.key)}`, {
        source: resumeSource,
        swap: 'none',
        fetch: fetchEventStream,
        headers: turn.lastEventId ? { 'Last-Event-ID': turn.lastEventId } : {},
      })
    }
    turn.resumeTimer = setTimeout(go, resumeDelayMs(turn.attempts))
  }

  /** Takes the request a pick-up issues as the turn's own (its end is the one that counts now). */
  function onResumeRequest(event) {
    if (!active || active.source !== resumeSource) return
    active.ctx = event.detail.ctx
    active.inFlight = true
  }

  /** Stop: the command, and the stream stays open for the server's terminal; the abort only if the command cannot be sent. */
  async function stop() {
    if (!active || active.stopping) return
    const turn = active
    turn.stopping = true
    byId(`${turn.article.id}-status`).textContent = 'Stopping…'
    if (await sendStop(turn.turnId)) return // the terminal comes on the stream, or on its pick-up
    if (active !== turn) return
    turn.aborted = true
    if (turn.inFlight) htmx.trigger(turn.source, 'htmx:abort') // its end settles it
    else settle('stopped', { kind: 'stopped', partial: true, title: 'Stopped', message: 'You stopped this answer; what arrived is kept.' })
  }

  /** Another directory: a running answer is stopped (kept, marked) and that directory's conversation shown. */
  function resetConversation(directoryUri, { fresh = false } = {}) {
    if (active) {
      const ending = active
      ending.aborted = true
      void sendStop(ending.turnId) // the turn ends on the server too (without the command: after its grace period)
      htmx.trigger(ending.source, 'htmx:abort')
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
    htmx.ajax('GET', `${WELCOME_PATH}?uri=${encodeURIComponent(directoryUri)}`, { source: log, target: '#chat-log', swap: 'innerHTML' })
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
  resumeSource.addEventListener('htmx:config:request', onResumeRequest)
  for (const source of [form, resumeSource]) {
    source.addEventListener('done', (event) => onTerminal('done', event))
    source.addEventListener('error', (event) => onTerminal('error', event))
    source.addEventListener('htmx:sse:after:connection', onStreamOpen)
    source.addEventListener('htmx:sse:before:message', onMessage)
    source.addEventListener('htmx:finally:request', onRequestEnd)
  }
  stopButton.addEventListener('click', () => void stop())

  textarea.addEventListener('keydown', (event) => {
    if (keyInterceptor(event)) return
    if (event.key === 'Escape' && active) {
      event.preventDefault()
      return void stop()
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

  // A folder's welcome arrives after a moment: a question asked meanwhile (or another folder chosen)
  // keeps the log as it is — the late welcome would replace the conversation.
  log.addEventListener('htmx:before:swap', (event) => {
    const action = event.detail?.ctx?.request?.action ?? ''
    if (!action.startsWith(WELCOME_PATH)) return
    const forUri = new URL(action, location.href).searchParams.get('uri')
    if (log.querySelector('article.msg') || forUri !== uriField.value) event.preventDefault()
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
  // Leaving the page mid-answer (reload, back): the turn is stopped on the server, the answer so far is kept here.
  window.addEventListener('pagehide', () => {
    if (!active) return
    active.aborted = true
    void sendStop(active.turnId, { keepalive: true })
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
