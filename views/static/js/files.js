// File management in the page (issue 14): the node's actions open server-rendered dialogs
// (new folder, rename, move, delete) whose outcome refreshes the tree and the preview in place;
// uploads (the upload form, the "Upload files" button, files dropped on the tree or the preview)
// go to the JSON API without a page load, with progress and each file's outcome; a folder that
// no longer exists is offered to be created. Ctrl+K / ⌘K opens the workspace-wide search.
import { closeDialogs, openDialog } from './dialogs.js'
import { openNode, refreshTree } from './workspace.js'

const byId = (id) => document.getElementById(id)
const csrfToken = () => document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? ''
const isUnder = (uri, prefix) => uri === prefix || (prefix.endsWith('/') && uri.startsWith(prefix))
const moved = (uri, from, to) => (isUnder(uri, from) ? to + uri.slice(from.length) : uri)

function currentNodeUri() {
  return byId('content')?.dataset.nodeUri
}

/** After a change: the tree and the preview show the new state; the chat follows a moved folder. */
function applyChange({ action, from, uri }, { chat }) {
  const shown = currentNodeUri() ?? uri
  if (action === 'delete') {
    chat.forgetDirectory(from, uri)
    refreshTree(uri)
    return openNode(isUnder(shown, from) ? uri : shown, { keepChat: true })
  }
  if (action === 'rename' || action === 'move') chat.moveDirectory(from, uri)
  refreshTree(action === 'new-folder' ? uri : moved(shown, from, uri))
  return openNode(action === 'new-folder' ? shown : moved(shown, from, uri), { keepChat: true })
}

function initDialogActions({ chat }) {
  const dialog = byId('files-dialog')
  const body = byId('files-dialog-body')
  document.addEventListener('click', (event) => {
    const button = event.target.closest('[data-files-action]')
    if (!button) return
    body.replaceChildren()
    const opener = document.activeElement
    htmx
      .ajax('GET', `/workspace/files/${button.dataset.filesAction}?uri=${encodeURIComponent(button.dataset.uri)}`, { target: body, swap: 'innerHTML' })
      .then(() => {
        openDialog(dialog)
        dialog.returnFocusTo = opener
      })
  })
  document.addEventListener('htmx:after:swap', (event) => {
    if (event.detail?.ctx?.target !== body) return
    const change = byId('files-change')
    if (!change) {
      if (dialog.open) body.querySelector('[autofocus], input:not([type="hidden"])')?.focus()
      return
    }
    const { action, from, uri } = change.dataset
    dialog.close()
    showStatus(change.textContent.trim())
    applyChange({ action, from, uri }, { chat })
  })
}

// ── uploads ─────────────────────────────────────────────────────────────────────────────────

let statusTimer
/**
 * What a change did, in the top bar's status line for 8 s. Then it is hidden but keeps its place
 * until the next click (at phone width it is a row of its own): the page never moves by itself.
 */
function showStatus(text) {
  const live = byId('files-live')
  if (!live) return
  live.textContent = text
  live.classList.remove('is-stale')
  clearTimeout(statusTimer)
  statusTimer = setTimeout(() => live.classList.add('is-stale'), 8000)
}

function initStatus() {
  document.addEventListener('click', () => {
    const live = byId('files-live')
    if (!live?.classList.contains('is-stale')) return
    live.classList.remove('is-stale')
    live.textContent = ''
  })
}

const OUTCOME_TEXT = { added: 'added', updated: 'new version', unchanged: 'unchanged (same bytes)', failed: 'not stored', pending: 'waiting' }

/** One file's line in the upload panel; `unparsed`: stored, but its text could not be extracted (a warning, not a success). */
function fileRow(name, outcome, detail, unparsed = false) {
  const item = document.createElement('li')
  item.className = `upload-file is-${outcome}${unparsed ? ' is-unparsed' : ''}`
  const label = document.createElement('span')
  label.className = 'upload-name'
  label.textContent = name
  label.title = name
  const state = document.createElement('span')
  state.className = 'upload-outcome'
  state.textContent = detail ? `${OUTCOME_TEXT[outcome] ?? outcome} — ${detail}` : (OUTCOME_TEXT[outcome] ?? outcome)
  item.append(label, state)
  return item
}

function errorOf(xhr) {
  try {
    const error = JSON.parse(xhr.responseText)?.error
    if (error && typeof error.message === 'string') return { code: String(error.code ?? ''), message: error.message }
  } catch {}
  return { code: '', message: xhr.status === 0 ? 'The upload could not reach the server.' : `The server refused the upload (${xhr.status}).` }
}

function initUploads() {
  const panel = byId('upload-panel')
  const title = byId('upload-title')
  const progress = byId('upload-progress')
  const list = byId('upload-files')
  const error = byId('upload-error')
  const create = byId('upload-create')
  let running = null

  byId('upload-close').addEventListener('click', () => {
    if (running) running.abort()
    panel.hidden = true
  })

  function upload(files, directoryUri, { createParents = false } = {}) {
    if (files.length === 0 || running) return
    const names = files.map((file) => file.name)
    panel.hidden = false
    error.hidden = true
    create.hidden = true
    list.replaceChildren(...names.map((name) => fileRow(name, 'pending')))
    title.textContent = `Uploading ${files.length === 1 ? names[0] : `${files.length} files`} to ${directoryUri}…`
    progress.hidden = false
    progress.value = 0
    const form = new FormData()
    for (const file of files) form.append('file', file, file.name)
    const xhr = new XMLHttpRequest()
    let cancelled = false
    xhr.addEventListener('abort', () => (cancelled = true))
    running = xhr
    xhr.open('POST', `/api/v1/workspace/upload?uri=${encodeURIComponent(directoryUri)}${createParents ? '&create_parents=true' : ''}`)
    xhr.setRequestHeader('X-CSRF-Token', csrfToken())
    xhr.setRequestHeader('Accept', 'application/json')
    xhr.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable) progress.value = Math.round((event.loaded / event.total) * 100)
    })
    xhr.addEventListener('loadend', () => {
      running = null
      progress.hidden = true
      if (xhr.status === 201) {
        const stored = JSON.parse(xhr.responseText).files
        list.replaceChildren(
          ...stored.map((file, index) => fileRow(names[index] ?? file.uri, file.outcome, file.parse_error ? `text not extracted: ${file.parse_error}` : '', Boolean(file.parse_error))),
        )
        title.textContent = `Uploaded to ${directoryUri}: ${stored.length} file${stored.length === 1 ? '' : 's'}`
        refreshTree(directoryUri)
        const shown = currentNodeUri()
        if (shown === undefined || shown === directoryUri || byId('content')?.dataset.directoryUri === directoryUri) openNode(shown ?? directoryUri, { keepChat: true })
        return
      }
      const problem = cancelled ? { code: 'aborted', message: 'The upload was cancelled.' } : errorOf(xhr)
      title.textContent = 'Nothing was uploaded'
      list.replaceChildren(...names.map((name) => fileRow(name, 'failed')))
      error.textContent = problem.message
      error.hidden = false
      if (problem.code === 'not_found' && !createParents) {
        create.textContent = `Create ${directoryUri} and upload`
        create.hidden = false
        create.onclick = () => upload(files, directoryUri, { createParents: true })
      }
    })
    xhr.send(form)
  }

  // The upload form (kept working without scripts) and the "Upload files" buttons.
  document.addEventListener('submit', (event) => {
    const form = event.target.closest('form[data-upload-form]')
    if (!form) return
    event.preventDefault()
    const input = form.querySelector('input[type="file"]')
    upload([...input.files], form.dataset.uploadForm)
    input.value = ''
  })
  document.addEventListener('click', (event) => {
    const button = event.target.closest('[data-upload-to]')
    if (!button) return
    const input = document.createElement('input')
    input.type = 'file'
    input.multiple = true
    input.addEventListener('change', () => upload([...input.files], button.dataset.uploadTo), { once: true })
    input.click()
  })

  // Files dropped on a folder's row, the tree or the preview.
  let over = null
  const mark = (element) => {
    if (over === element) return
    over?.classList.remove('is-drop-target')
    over = element
    over?.classList.add('is-drop-target')
  }
  const hasFiles = (event) => [...(event.dataTransfer?.types ?? [])].includes('Files')
  document.addEventListener('dragover', (event) => {
    const zone = event.target.closest?.('[data-drop-uri]')
    if (!zone || !hasFiles(event)) return mark(null)
    event.preventDefault()
    event.dataTransfer.dropEffect = 'copy'
    mark(zone)
  })
  document.addEventListener('dragleave', (event) => {
    if (event.relatedTarget === null || !over?.contains(event.relatedTarget)) mark(null)
  })
  document.addEventListener('drop', (event) => {
    const zone = event.target.closest?.('[data-drop-uri]')
    mark(null)
    if (!zone || !hasFiles(event)) return
    event.preventDefault()
    upload([...event.dataTransfer.files], zone.dataset.dropUri)
  })

  return { upload }
}

// ── search ──────────────────────────────────────────────────────────────────────────────────

function initSearch() {
  const dialog = byId('search-dialog')
  const input = byId('search-input')
  const open = () => {
    closeDialogs()
    openDialog(dialog, { focus: input })
    input.select()
  }
  document.addEventListener('click', (event) => {
    if (event.target.closest('#search-open')) open()
  })
  document.addEventListener('keydown', (event) => {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === 'k') {
      event.preventDefault()
      open()
    }
  })
}

export function initFiles({ chat }) {
  initStatus()
  initDialogActions({ chat })
  initSearch()
  return initUploads()
}
