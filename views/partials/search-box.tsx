// The workspace-wide search (Ctrl+K / ⌘K): a dialog whose input asks GET /workspace/search as you
// type; each result opens the node in place — a file at the passage that matched, highlighted.
// A compiled page comes after the person's own files and says what it is ("summary of kb://…/a.md").
import type { WorkspaceSearchPage } from '../../src/effects/workspace/search-index.ts'
import { describeLayer } from '../../src/effects/workspace/layer-pages.ts'
import { fileIconClass } from './file-icon.ts'

export const SEARCH_RESULTS_ID = 'search-results'

export const passageHref = (uri: string, offset: number | null) =>
  `/workspace?uri=${encodeURIComponent(uri)}${offset === null ? '' : `&offset=${offset}`}`

export function SearchButton() {
  return (
    <button type="button" id="search-open" class="search-open" aria-haspopup="dialog" aria-controls="search-dialog" aria-keyshortcuts="Control+K Meta+K">
      <span class="search-glass" aria-hidden="true"></span>
      <span>Search</span>
      <kbd aria-hidden="true">Ctrl K</kbd>
    </button>
  )
}

export function SearchDialog() {
  return (
    <dialog id="search-dialog" class="dialog search-dialog" aria-labelledby="search-dialog-title">
      <header class="dialog-head">
        <h2 id="search-dialog-title">Search the workspace</h2>
        <button type="button" class="ghost icon-only" data-close-dialog aria-label="Close">
          ✕
        </button>
      </header>
      <div class="dialog-body">
        <input
          type="search"
          id="search-input"
          name="q"
          maxlength={200}
          autocomplete="off"
          aria-label="Search file names and text"
          aria-controls={SEARCH_RESULTS_ID}
          placeholder="File names and text in all your folders"
          hx-get="/workspace/search"
          hx-trigger="input changed delay:150ms, search"
          hx-target={`#${SEARCH_RESULTS_ID}`}
          hx-swap="innerHTML"
          autofocus
        />
        <div id={SEARCH_RESULTS_ID} class="search-results" aria-live="polite"></div>
      </div>
    </dialog>
  )
}

function resultCount(page: WorkspaceSearchPage): string {
  if (page.next_offset !== null) return `${page.hits.length}+ results`
  return page.hits.length === 1 ? '1 result' : `${page.hits.length} results`
}

export function SearchResults({ page }: { page: WorkspaceSearchPage }) {
  const query = page.query.trim()
  if (query === '') return <p class="meta">Type to search file names and text across your whole workspace.</p>
  if (page.hits.length === 0 && page.offset === 0) {
    return (
      <p class="meta" role="status">
        Nothing matches “{query}”.
      </p>
    )
  }
  const summary =
    page.offset > 0 ? null : (
      <p class="meta" role="status">
        {resultCount(page)} for “{query}”
      </p>
    )
  return (
    <>
      {summary}
      <ol class="search-list" start={page.offset + 1}>
        {page.hits.map((hit) => (
          <li>
            <a class="search-hit" href={passageHref(hit.uri, hit.offset)} data-node-uri={hit.uri} data-offset={hit.offset === null ? undefined : String(hit.offset)}>
              <span class={fileIconClass(hit)} aria-hidden="true"></span>
              <span class="hit-main">
                <span class="hit-name">
                  {hit.name}
                  {hit.kind === 'directory' ? '/' : ''}
                </span>
                {hit.layer ? (
                  <span class="hit-where hit-layer">
                    {describeLayer(hit.layer)} · {hit.uri}
                  </span>
                ) : (
                  <span class="hit-where">{hit.uri}</span>
                )}
                {hit.snippet ? <span class="hit-snippet">…{hit.snippet}…</span> : null}
              </span>
              <span class="hit-matched">{hit.matched === 'name' ? 'name' : hit.matched === 'text' ? 'text' : 'name, text'}</span>
            </a>
          </li>
        ))}
      </ol>
      {page.next_offset !== null ? (
        <button
          type="button"
          class="small search-more"
          hx-get={`/workspace/search?q=${encodeURIComponent(query)}&offset=${page.next_offset}`}
          hx-target="this"
          hx-swap="outerHTML"
        >
          More results
        </button>
      ) : null}
    </>
  )
}
