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
/** A folder's compiled page (docs/compile.md): where it is, when it was written, and whether it is stale (layer-freshness.ts). */
export interface LayerPageInfo {
  readonly uri: string
  /** When its current version was written: the folder's last compile. */
  readonly written_at: string
  /** A source it was built from has changed, moved or gone, or a file was added to the folder since. */
  readonly stale: boolean
  /** What changed, when stale ("changed: kb://…/a.md; added: kb://…/d.md"; at most 20 listed). */
  readonly changes?: string
}
/** The folder's `.abstract.md` (L0) carried by `ls`: its text, at most LS_ABSTRACT_MAX_CHARS code points. */
export interface LsAbstract extends LayerPageInfo {
  readonly text: string
  /** The page is longer than `text`: read `uri` for the rest. */
  readonly truncated: boolean
}
export interface LsResult {
  readonly uri: string
  readonly entries: ReadonlyArray<LsEntry>
  readonly offset: number
  readonly next_offset: number | null
  readonly total: number
  /** The listed folder's abstract, when it has one (first page only). */
  readonly abstract?: LsAbstract
  /** The listed folder's `.overview.md` (L1), when it has one (first page only): read it before scanning the folder's files. */
  readonly overview?: LayerPageInfo
}
export const LS_ABSTRACT_MAX_CHARS = 2_000

export interface ReadResult {
  readonly uri: string
  /** Set when the file is a compiled page: what it summarises (cite the source, not the page). */
  readonly layer?: { readonly kind: 'summary' | 'overview' | 'abstract'; readonly of: string | null }
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
  /**
   * Set when the hit is in a compiled page: a summary of the source file `of` (null: its source is
   * gone), or the overview or abstract of the folder `of`. Such hits come after every source's.
   */
  readonly layer?: { readonly kind: 'summary' | 'overview' | 'abstract'; readonly of: string | null }
}
export interface SearchResult {
  readonly query: string
  readonly uri: string
  readonly hits: ReadonlyArray<SearchHit>
  /** A person's own files scanned (compiled pages are not counted here). */
  readonly files_scanned: number
  /** Compiled pages scanned beside them (the sources' summaries; on the last page, overviews and abstracts). */
  readonly layer_pages_scanned: number
  readonly offset: number
  readonly next_offset: number | null
  readonly complete: boolean
  /**
   * When the scan stopped short: later files (at most 5, in the scan's order) whose indexed text
   * holds every word of the query in one passage, each with the `offset` that scans it. A hint
   * from the index, confirmed only by scanning.
   */
  readonly matches_ahead?: ReadonlyArray<{ readonly uri: string; readonly offset: number }>
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
  /** The directory's compiled layers: when it was last compiled and what changed since (null: never compiled). */
  readonly layers: DirectoryLayers | null
  readonly files: ReadonlyArray<FileStatus>
  readonly total: number
  readonly offset: number
  readonly next_offset: number | null
}
export interface DirectoryLayers {
  /** When its overview (else its abstract) was written: the folder's last published compile. */
  readonly compiled_at: string
  readonly overview: LayerPageInfo | null
  readonly abstract: LayerPageInfo | null
  readonly stale: boolean
  /** What changed since, as data (at most 20; `changes_total` counts them all). */
  readonly changes: ReadonlyArray<{ readonly change: 'changed' | 'moved' | 'deleted' | 'added'; readonly uri: string; readonly from?: string }>
  readonly changes_total: number
}
export type StatusResult = (FileStatus & { readonly kind: 'file' }) | DirectoryStatus
export const STATUS_FILES_PER_PAGE = 50

export const SEARCH_FILES_PER_PAGE = 40
