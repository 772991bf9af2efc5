// Modal dialogs: <dialog>.showModal() makes the page inert and closes on Escape; focus is also
// kept inside explicitly (Tab and Shift+Tab wrap) and returns to where it was on close.
const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])'

function focusablesIn(dialog) {
  return [...dialog.querySelectorAll(FOCUSABLE)].filter((element) => element.getClientRects().length > 0)
}

function trapTab(event) {
  if (event.key !== 'Tab') return
  const dialog = event.currentTarget
  const focusables = focusablesIn(dialog)
  if (focusables.length === 0) return
  const first = focusables[0]
  const last = focusables[focusables.length - 1]
  const inside = dialog.contains(document.activeElement)
  if (event.shiftKey && (document.activeElement === first || !inside)) {
    event.preventDefault()
    last.focus()
  } else if (!event.shiftKey && (document.activeElement === last || !inside)) {
    event.preventDefault()
    first.focus()
  }
}

export function initDialogs() {
  for (const dialog of document.querySelectorAll('dialog.dialog')) {
    dialog.addEventListener('keydown', trapTab)
    dialog.addEventListener('close', () => {
      const back = dialog.returnFocusTo
      dialog.returnFocusTo = null
      if (back && back.isConnected) back.focus()
    })
  }
  document.addEventListener('click', (event) => {
    const closer = event.target.closest('[data-close-dialog]')
    if (closer) closer.closest('dialog')?.close()
  })
}

export function openDialog(dialog, { focus } = {}) {
  if (!dialog.open) {
    dialog.returnFocusTo = document.activeElement
    dialog.showModal()
  }
  const target = focus ?? dialog.querySelector('[autofocus]') ?? focusablesIn(dialog)[0]
  target?.focus()
}

export function closeDialogs() {
  for (const dialog of document.querySelectorAll('dialog[open]')) dialog.close()
}
