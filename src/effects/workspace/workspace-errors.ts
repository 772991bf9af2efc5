// Workspace failures. Each carries its public `code` and HTTP `status`: the tools, the turn's
// prepare step and the HTTP error handler all report the same code (docs/api.md lists each once).
import * as Data from 'effect/Data'
import { quotedName } from './name-display.ts'

/** A logical URI that is malformed or tries to escape (`..`, encoded dots/slashes, NUL, …). HTTP 400. */
export class InvalidUri extends Data.TaggedError('InvalidUri')<{ readonly uri: string; readonly reason: string }> {
  readonly code = 'invalid_uri'
  readonly status = 400
  override get message() {
    return `invalid URI ${JSON.stringify(this.uri.slice(0, 300))}: ${this.reason}`
  }
}

/** The URI names something the caller may not see (another user's tree, or outside the selected scope). HTTP 403. */
export class OutsideScope extends Data.TaggedError('OutsideScope')<{ readonly uri: string; readonly reason: string }> {
  readonly code = 'outside_scope'
  readonly status = 403
  override get message() {
    return `${this.uri} is outside your scope: ${this.reason}`
  }
}

/** No such node (never existed, deleted or moved). HTTP 404. */
export class NodeNotFound extends Data.TaggedError('NodeNotFound')<{ readonly uri: string }> {
  readonly code = 'not_found'
  readonly status = 404
  override get message() {
    return `${this.uri} does not exist (it may have been deleted or moved)`
  }
}

/** A name or path conflicts with an existing node (e.g. a file where a directory is needed). HTTP 409. */
export class NodeConflict extends Data.TaggedError('NodeConflict')<{ readonly uri: string; readonly reason: string }> {
  readonly code = 'conflict'
  readonly status = 409
  override get message() {
    return `${this.uri}: ${this.reason}`
  }
}

/** A name a person gave a new or renamed node breaks the one name rule (`checkNodeName`). HTTP 400, like an upload's. */
export class InvalidName extends Data.TaggedError('InvalidName')<{ readonly name: string; readonly reason: string }> {
  readonly code = 'invalid_name'
  readonly status = 400
  override get message() {
    return `the name ${quotedName(this.name)} is not allowed: ${this.reason}`
  }
}

/** A file has no version of this number (never had one). HTTP 404. */
export class VersionNotFound extends Data.TaggedError('VersionNotFound')<{ readonly uri: string; readonly version: number }> {
  readonly code = 'not_found'
  readonly status = 404
  override get message() {
    return `${this.uri} has no version ${this.version}`
  }
}

/** No such item in the caller's Trash (never was, restored, deleted for good, or someone else's). HTTP 404. */
export class TrashItemNotFound extends Data.TaggedError('TrashItemNotFound')<{ readonly id: string }> {
  readonly code = 'not_found'
  readonly status = 404
  override get message() {
    return `nothing in your Trash has the id ${JSON.stringify(this.id.slice(0, 100))} (it may have been restored or deleted for good)`
  }
}

export type WorkspaceError = InvalidUri | OutsideScope | NodeNotFound | NodeConflict | InvalidName | VersionNotFound | TrashItemNotFound

/** Narrows an unknown thrown value to a workspace failure (repositories are promise-based). */
export function isWorkspaceError(error: unknown): error is WorkspaceError {
  return (
    error instanceof InvalidUri ||
    error instanceof OutsideScope ||
    error instanceof NodeNotFound ||
    error instanceof NodeConflict ||
    error instanceof InvalidName ||
    error instanceof VersionNotFound ||
    error instanceof TrashItemNotFound
  )
}
