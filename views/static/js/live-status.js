// The live tables' captions say whether they are live. A job table's body follows a stream of
// updates (hx-sse:connect); its caption reads "updated live" only while that stream is open,
// "reconnecting…" while htmx's SSE extension reopens it (it retries for ever, backing off), and
// "not live" (with the reason when the server gave one) when no stream could be opened at all — a
// page never claims updates it no longer gets.
//
// A plain script, not a module: the server sends it in one script with htmx and its SSE extension
// (src/http/create-app.ts), so these listeners are on the document before htmx makes its first
// request, however late the page's modules arrive. One set of listeners serves every table, also
// those swapped in later (the compile dialog's).
;(() => {
  const STATES = {
    live: 'updated live',
    reconnecting: 'live updates interrupted; reconnecting…',
    down: 'not live: reload the page to see changes',
    // the server's cap on the pages that follow one user's jobs at once
    crowded: 'not live: too many open pages follow your jobs; close one, then reload this one',
    'signed-out': 'not live: you were signed out; reload the page to sign in again',
  }
  /** Why a request for a stream got none, from its answer (a signed-out one is sent to sign in: fragment-errors.ts). */
  const refusal = (response) => (response?.status === 429 ? 'crowded' : 'down')
  const isLiveTable = (target) => target instanceof Element && target.hasAttribute('hx-sse:connect')
  const mark = (target, state) => {
    if (!isLiveTable(target)) return
    const status = target.closest('table')?.querySelector('.live-status')
    if (!status || status.dataset.state === state) return // unchanged: not announced again
    status.dataset.state = state
    status.textContent = `(${STATES[state]})`
  }
  /** Tables whose stream the extension paused while the tab was hidden (it reopens it on return). */
  const resting = new WeakSet()
  /** Tables whose reopened stream was refused as signed out: not reopened again. */
  const signedOut = new WeakSet()
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) return
    for (const status of document.querySelectorAll('.live-status[data-state="live"]')) {
      const table = status.closest('table')?.querySelector('[hx-sse\\:connect]')
      if (table) resting.add(table)
    }
  })
  document.addEventListener('htmx:sse:after:connection', (event) => mark(event.target, 'live'))
  // a message is proof too (after anything else that may have said otherwise)
  document.addEventListener('htmx:sse:after:message', (event) => mark(event.target, 'live'))
  // A stream that ended (the server restarted, a proxy cut it) is reopened after a delay. The
  // reopening after a hidden tab comes back is not an interruption anyone saw: not announced.
  document.addEventListener('htmx:sse:before:connection', (event) => {
    const table = event.target
    const connection = event.detail?.connection
    if (signedOut.has(table)) {
      if (connection) connection.cancelled = true // the extension stops reopening it
      event.preventDefault()
      return
    }
    if (!(connection?.attempt > 0)) return
    if (resting.has(table) && !document.hidden) resting.delete(table)
    else mark(table, 'reconnecting')
  })
  // A reopening refused as signed out (the session ended while no stream was open, e.g. in a
  // hidden tab) is final; any other failure is retried.
  document.addEventListener('htmx:sse:error', (event) => {
    if (event.detail?.status === 401 && isLiveTable(event.target)) {
      signedOut.add(event.target)
      mark(event.target, 'signed-out')
    } else mark(event.target, 'reconnecting')
  })
  // The server ends the stream with the table's close event (hx-sse:close) when the session that
  // opened it is gone; the extension then stops instead of reopening it.
  document.addEventListener('htmx:sse:close', (event) => {
    if (event.detail?.reason === 'message') mark(event.target, 'signed-out')
  })
  // The first request found no stream: it failed, or its answer was not a stream (an error
  // status, such as the 429 of too many streams); only an opened stream is retried. Such an
  // answer is not swapped into the table (htmx would put it among the rows): the rows as served
  // stay.
  document.addEventListener('htmx:error', (event) => mark(event.target, 'down'))
  document.addEventListener('htmx:after:request', (event) => {
    if (!isLiveTable(event.target)) return
    const ctx = event.detail?.ctx
    if (ctx) ctx.swap = 'none'
    mark(event.target, refusal(ctx?.response))
  })
})()
