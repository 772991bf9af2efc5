// Waits for a condition that an event will make true (a notification, a reconnect), checking after
// each turn of the event loop; fails with a description after `timeoutMs`. Not a sleep: it returns
// as soon as the condition holds.
export async function waitUntil(condition: () => boolean | Promise<boolean>, what: string, { timeoutMs = 5_000 }: { timeoutMs?: number } = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}
