// Text assembled from a model's many small deltas. `text += piece` would keep every piece as a
// node of a rope until the text is read: a 32-byte cons string per delta, per copy of the text,
// each of which survives the young-generation collections and is promoted, for as long as the
// stream runs (docs/performance.md, "fourth pass"). Here the pieces wait in an array and are
// joined into one flat string every FOLD_EVERY pieces, so a long answer costs about its own bytes.

/** Pieces kept before they are joined: one cons node per this many deltas instead of one per delta. */
const FOLD_EVERY = 32

export class TextBuffer {
  #folded = ''
  #pieces: string[] = []
  #length = 0

  /** Adds `piece` at the end. */
  append(piece: string): void {
    if (piece === '') return
    this.#pieces.push(piece)
    this.#length += piece.length
    if (this.#pieces.length >= FOLD_EVERY) this.#fold()
  }

  /** The text so far, in UTF-16 code units (as `String.length`). */
  get length(): number {
    return this.#length
  }

  /** Forgets everything appended. */
  clear(): void {
    this.#folded = ''
    this.#pieces = []
    this.#length = 0
  }

  /** The whole text appended so far. */
  toString(): string {
    if (this.#pieces.length > 0) this.#fold()
    return this.#folded
  }

  #fold(): void {
    this.#folded += this.#pieces.join('')
    this.#pieces = []
  }
}
