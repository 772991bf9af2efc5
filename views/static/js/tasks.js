// The task center needs no script of its own beyond htmx and its SSE extension (one script, loaded
// by the layout): rows update over the live stream, Cancel and Retry are htmx posts. This module
// marks the page ready for tests and people with slow connections.
document.body.dataset.tasksReady = 'true'
