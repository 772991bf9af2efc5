// Cooperative cancellation inside a parser: checks between steps, and a race for the steps a
// library will not stop by itself (the work is then abandoned; the worker that ran it is the
// unit that gets terminated when it must really stop).

export class Aborted extends Error {
  override readonly name = 'Aborted'
}

export const throwIfAborted = (signal: AbortSignal | undefined): void => {
  if (signal?.aborted === true) throw new Aborted('aborted')
}

/** Settles with `work`, or rejects with `Aborted` as soon as `signal` aborts. */
export const untilAborted = <A>(work: Promise<A>, signal: AbortSignal | undefined): Promise<A> => {
  if (signal === undefined) return work
  if (signal.aborted) return Promise.reject(new Aborted('aborted'))
  return new Promise<A>((resolve, reject) => {
    const onAbort = (): void => reject(new Aborted('aborted'))
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (cause: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(cause) // as is: callers classify library exceptions by name
      },
    )
  })
}
