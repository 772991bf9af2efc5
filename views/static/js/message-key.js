// Display keys for chat messages: crypto.randomUUID() where the page has it, else a timestamp
// and a counter of this module (plain-HTTP LAN pages have no randomUUID). Keys name DOM elements
// only; they are never credentials.
let counter = 0

export function newMessageKey() {
  const cryptoApi = globalThis.crypto
  if (cryptoApi && typeof cryptoApi.randomUUID === 'function') return cryptoApi.randomUUID()
  counter += 1
  return `m${Date.now().toString(36)}-${counter.toString(36)}`
}
