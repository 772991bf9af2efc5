// The compile form's small behaviours: the reasoning levels follow the chosen engine (each engine
// option lists its levels), the number of picked files is shown against the limit of 32, and the
// dialog's live job list is cleaned up (its stream closed) when the dialog closes.
const byId = (id) => document.getElementById(id)

export function allowedLevels(engineOption) {
  const levels = engineOption?.dataset.levels ?? ''
  return levels === '' ? [] : levels.split(',')
}

function syncReasoning(form) {
  const engine = form.querySelector('#compile-engine')
  const reasoning = form.querySelector('#compile-reasoning')
  if (!engine || !reasoning) return
  const allowed = allowedLevels(engine.selectedOptions[0])
  for (const option of reasoning.options) option.disabled = allowed.length === 0 ? option.value !== '' : !allowed.includes(option.value)
  if (reasoning.selectedOptions[0]?.disabled) {
    const preferred = allowed.includes('medium') ? 'medium' : (allowed[0] ?? '')
    reasoning.value = preferred
  }
}

function syncCount(form) {
  const counter = form.querySelector('.compile-count')
  if (!counter) return
  const max = Number(counter.dataset.max)
  const picked = form.querySelectorAll('input[name="uris"]:checked').length
  counter.textContent = `${picked} of at most ${max} files picked`
  counter.classList.toggle('over', picked > max)
}

function sync(form) {
  syncReasoning(form)
  syncCount(form)
}

export function initCompileForm() {
  document.addEventListener('change', (event) => {
    const form = event.target.closest?.('#compile-form')
    if (form) sync(form)
  })
  document.addEventListener('htmx:after:swap', () => {
    const form = byId('compile-form')
    if (form) sync(form)
  })
  const dialog = byId('compile-dialog')
  dialog?.addEventListener('close', () => {
    // swapped out through htmx so its SSE connection is closed, not left open behind a closed dialog
    const body = byId('compile-dialog-body')
    if (body && body.childElementCount > 0) htmx.swap({ sourceElement: body, target: body, swap: 'innerHTML', text: '<p class="muted" hidden>closed</p>' })
  })
}
