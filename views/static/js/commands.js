// Slash commands and the command menu. `/ls`, `/read`, `/search`, `/status` run the explicit
// workspace commands (POST /workspace/chat/command → a result card); `/ls` alone and a click on
// the URI prefix open the directory dialog; `/compile`, `/compiler`, `/parse` open the compile
// form. None of them is ever sent to the model.
import { closeDialogs, openDialog } from './dialogs.js'
import { newMessageKey } from './message-key.js'

const byId = (id) => document.getElementById(id)
const COMPILE_ALIASES = new Set(['compile', 'compiler', 'parse'])

/** `/read guide.md 3000` → { kind: 'run', command: 'read', path: 'guide.md', offset: '3000' }. */
export function parseCommand(text) {
  const match = /^\/(\S*)\s*([\s\S]*)$/.exec(text.trim())
  const name = (match?.[1] ?? '').toLowerCase()
  const rest = (match?.[2] ?? '').trim()
  if (COMPILE_ALIASES.has(name)) return { kind: 'compile' }
  switch (name) {
    case 'ls':
      return rest ? { kind: 'run', command: 'ls', path: rest } : { kind: 'dialog' }
    case 'read': {
      if (!rest) return { kind: 'error', message: 'Usage: /read <file> [offset], e.g. /read notes.md' }
      const [, path, offset] = /^(.*?)(?:\s+(\d+))?$/.exec(rest)
      return { kind: 'run', command: 'read', path, offset }
    }
    case 'search':
      return rest ? { kind: 'run', command: 'search', query: rest } : { kind: 'error', message: 'Usage: /search <words>' }
    case 'status':
      return { kind: 'run', command: 'status', path: rest || undefined }
    default:
      return { kind: 'error', message: `Unknown command /${name}. Type / to see the commands.` }
  }
}

export function initCommands({ chat }) {
  const textarea = byId('chat-message')
  const menu = byId('command-menu')
  const directoryDialog = byId('directory-dialog')
  const compileDialog = byId('compile-dialog')
  let activeIndex = 0

  function runCommand({ command, path, query, offset }, { echo } = {}) {
    if (echo) chat.addUserMessage(echo, { command: true })
    const key = newMessageKey()
    chat.addPendingCommand(key)
    const values = { command, uri: chat.directoryUri(), message_key: key }
    if (path) values.path = path
    if (query) values.query = query
    if (offset !== undefined && offset !== null && offset !== '') values.offset = String(offset)
    htmx.ajax('POST', '/workspace/chat/command', { source: '#command-runner', target: `#c-${key}`, swap: 'outerHTML', values })
  }

  function openDirectoryDialog() {
    const uri = chat.directoryUri()
    for (const bound of directoryDialog.querySelectorAll('[data-bind="directory-uri"]')) bound.textContent = uri
    byId('directory-dialog-listing').replaceChildren()
    openDialog(directoryDialog)
    htmx.ajax('POST', '/workspace/chat/command', {
      source: '#command-runner',
      target: '#directory-dialog-listing',
      swap: 'innerHTML',
      values: { command: 'ls', uri, placement: 'dialog' },
    })
  }

  // The compile form for the chat's folder, or for `uri` (a stale page's "Compile … again" names its folder).
  function openCompileDialog(uri = chat.directoryUri()) {
    closeDialogs()
    byId('compile-dialog-body').replaceChildren()
    openDialog(compileDialog)
    htmx.ajax('GET', `/workspace/compile/form?uri=${encodeURIComponent(uri)}`, { target: '#compile-dialog-body', swap: 'innerHTML' })
  }

  chat.onCommand((text) => {
    const parsed = parseCommand(text)
    if (parsed.kind === 'dialog') return openDirectoryDialog()
    if (parsed.kind === 'compile') return openCompileDialog()
    chat.addUserMessage(text, { command: true })
    if (parsed.kind === 'error') return chat.addNote(parsed.message)
    runCommand(parsed)
  })

  // ── the command menu ──────────────────────────────────────────────────────────────────────
  const options = () => [...menu.querySelectorAll('[role="option"]')].filter((option) => !option.hidden)

  function highlight(index) {
    const visible = options()
    activeIndex = (index + visible.length) % visible.length
    visible.forEach((option, i) => option.setAttribute('aria-selected', String(i === activeIndex)))
    const current = visible[activeIndex]
    textarea.setAttribute('aria-activedescendant', current.id)
    current.scrollIntoView({ block: 'nearest' })
  }

  function hideMenu() {
    menu.hidden = true
    textarea.removeAttribute('aria-activedescendant')
  }

  function updateMenu() {
    const match = /^\/(\S*)$/.exec(textarea.value)
    if (!match) return hideMenu()
    const typed = match[1].toLowerCase()
    for (const option of menu.querySelectorAll('[role="option"]')) option.hidden = !option.dataset.command.startsWith(typed)
    if (options().length === 0) return hideMenu()
    menu.hidden = false
    highlight(0)
  }

  function pick(option) {
    textarea.value = `/${option.dataset.command} `
    hideMenu()
    textarea.focus()
    textarea.dispatchEvent(new Event('input'))
  }

  textarea.addEventListener('input', updateMenu)
  textarea.addEventListener('blur', () => setTimeout(hideMenu, 150))
  menu.addEventListener('mousedown', (event) => event.preventDefault()) // keep the textarea focused
  menu.addEventListener('click', (event) => {
    const option = event.target.closest('[role="option"]')
    if (option) pick(option)
  })

  chat.interceptKeys((event) => {
    if (menu.hidden) return false
    switch (event.key) {
      case 'ArrowDown':
        highlight(activeIndex + 1)
        break
      case 'ArrowUp':
        highlight(activeIndex - 1)
        break
      case 'Enter':
      case 'Tab': {
        if (event.shiftKey) return false
        const option = options()[activeIndex]
        if (event.key === 'Enter' && textarea.value.trim() === `/${option.dataset.command}`) {
          hideMenu() // the command is typed in full: Enter runs it
          return false
        }
        pick(option)
        break
      }
      case 'Escape':
        hideMenu()
        break
      default:
        return false
    }
    event.preventDefault()
    return true
  })

  // ── buttons in cards and dialogs ──────────────────────────────────────────────────────────
  byId('uri-prefix').addEventListener('click', openDirectoryDialog)

  document.addEventListener('click', (event) => {
    const runner = event.target.closest('[data-run-command]')
    if (runner) {
      const { runCommand: command, arg, query, offset } = runner.dataset
      closeDialogs()
      const echo = ['/' + command, arg ? arg : '', query ? query : ''].filter(Boolean).join(' ')
      runCommand({ command, path: arg, query, offset }, { echo })
      chat.focusComposer()
      return
    }
    const compileOpener = event.target.closest('[data-open-compile]')
    if (compileOpener) openCompileDialog(compileOpener.dataset.compileUri || undefined)
  })

  document.addEventListener('submit', (event) => {
    const commandForm = event.target.closest('[data-command-form]')
    if (commandForm) {
      event.preventDefault()
      const query = new FormData(commandForm).get('query')?.toString().trim()
      if (!query) return
      closeDialogs()
      runCommand({ command: commandForm.dataset.commandForm, query }, { echo: `/search ${query}` })
      commandForm.reset()
      chat.focusComposer()
      return
    }
  })
}
