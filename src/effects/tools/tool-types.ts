// Result shapes of the workspace tools (SPEC §4). These are what the model sees (as JSON)
// and what `POST command` returns.

export type WorkspaceToolName = 'ls' | 'read' | 'search' | 'status'

export interface LsEntry {
  readonly name: string
  readonly kind: 'directory' | 'file'
  readonly uri: string
  readonly size: number
  readonly updated: string
}
export interface LsResult {
  readonly uri: string
  readonly entries: ReadonlyArray<LsEntry>
  readonly offset: number
  readonly next_offset: number | null
  readonly total: number
}

export interface ReadResult {
  readonly uri: string
  readonly offset: number
  readonly next_offset: number | null
  readonly total: number
  readonly text: string
  /** Set when the file has no parsed body (empty, or not parseable). */
  readonly empty?: boolean
  /** Set when `offset` is at or past the end of the text (the note says how long it is). */
  readonly past_end?: boolean
  readonly note?: string
}

export interface SearchHit {
  readonly uri: string
  readonly offset: number
  readonly snippet: string
}
export interface SearchResult {
  readonly query: string
  readonly uri: string
  readonly hits: ReadonlyArray<SearchHit>
  readonly files_scanned: number
  readonly offset: number
  readonly next_offset: number | null
  readonly complete: boolean
}

export interface JobInfo {
  readonly kind: string
  readonly status: string
  readonly error: string | null
  readonly uri: string
  readonly created_at: string
  readonly finished_at: string | null
}
/** A file's latest parse (`body`) and compile job. */
export interface FileStatus {
  readonly uri: string
  readonly body: JobInfo | null
  readonly compile: JobInfo | null
}
/** `status` of a folder: a page of the files below it (by path), each with its own latest jobs. */
export interface DirectoryStatus {
  readonly uri: string
  readonly kind: 'directory'
  /** The latest compile job of this directory itself (its overview and abstract), or null. */
  readonly compile: JobInfo | null
  readonly files: ReadonlyArray<FileStatus>
  readonly total: number
  readonly offset: number
  readonly next_offset: number | null
}
export type StatusResult = (FileStatus & { readonly kind: 'file' }) | DirectoryStatus
export const STATUS_FILES_PER_PAGE = 50

export const SEARCH_FILES_PER_PAGE = 40
