// The content pane beside the tree: a file's preview (sanitised markdown or plain text) or a
// directory's listing. Its `data-directory-uri` tells the chat which directory is current.
import { raw } from 'hono/html'
import { NodeLink, type TreeEntry } from './tree.tsx'

export interface Preview {
  readonly uri: string
  readonly name: string
  readonly mime: string
  readonly size: number
  readonly versionNo: number
  readonly html?: string | undefined // sanitised markdown
  readonly text?: string | undefined
  readonly truncated: boolean
  readonly parseError?: string | undefined
}

export interface ContentPaneProps {
  readonly directoryUri: string
  readonly nodeUri: string
  readonly listing: ReadonlyArray<TreeEntry>
  readonly preview?: Preview | undefined
  readonly csrfToken: string | undefined
  readonly notice?: string | undefined
}

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

/** kb://users/demo/a/b/ as links: users/demo › a › b. */
function Breadcrumbs({ uri }: { uri: string }) {
  const match = /^(kb:\/\/users\/[^/]+\/)(.*)$/.exec(uri)
  if (!match) return <span class="crumb">{uri}</span>
  const root = match[1]!
  const parts = match[2]!.split('/').filter((part) => part !== '')
  const isDirectory = uri.endsWith('/')
  return (
    <nav class="breadcrumbs" aria-label="Location">
      <NodeLink uri={root} class="crumb">
        {root}
      </NodeLink>
      {parts.map((part, index) => {
        const last = index === parts.length - 1
        const partUri = root + parts.slice(0, index + 1).join('/') + (last && !isDirectory ? '' : '/')
        return (
          <>
            <span class="crumb-sep" aria-hidden="true">
              ›
            </span>
            {last ? (
              <span class="crumb current" aria-current="page">
                {part}
              </span>
            ) : (
              <NodeLink uri={partUri} class="crumb">
                {part}
              </NodeLink>
            )}
          </>
        )
      })}
    </nav>
  )
}

function FilePreview({ preview }: { preview: Preview }) {
  return (
    <article class="preview" aria-label="File preview">
      <header class="pane-head">
        <Breadcrumbs uri={preview.uri} />
        <h1 class="title">{preview.name}</h1>
        <p class="meta">
          {preview.mime} · {formatSize(preview.size)} · version {preview.versionNo}
        </p>
      </header>
      {preview.parseError ? (
        <p class="error" role="alert">
          This file's text could not be extracted: {preview.parseError}. Its raw bytes are kept.
        </p>
      ) : preview.html !== undefined ? (
        <div class="markdown doc">{raw(preview.html)}</div>
      ) : (
        <pre class="text doc">{preview.text ?? ''}</pre>
      )}
      {preview.truncated ? <p class="meta">Preview truncated.</p> : null}
    </article>
  )
}

function DirectoryListing({ directoryUri, listing, csrfToken }: { directoryUri: string; listing: ReadonlyArray<TreeEntry>; csrfToken: string | undefined }) {
  const name = directoryUri.replace(/\/$/, '').split('/').pop() ?? directoryUri
  return (
    <article class="listing" aria-label="Directory listing">
      <header class="pane-head">
        <Breadcrumbs uri={directoryUri} />
        <h1 class="title">{name}/</h1>
        <p class="meta">
          {listing.length} {listing.length === 1 ? 'entry' : 'entries'}
        </p>
      </header>
      {listing.length === 0 ? (
        <p class="empty-state">This directory is empty. Upload files below, then ask KnowAgent about them.</p>
      ) : (
        <table class="entries">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Size</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {listing.map((entry) => (
              <tr>
                <td>
                  <NodeLink uri={entry.uri} class={`entry-link ${entry.kind}`}>
                    {entry.name}
                    {entry.kind === 'directory' ? '/' : ''}
                  </NodeLink>
                </td>
                <td class="num">{entry.kind === 'file' ? formatSize(entry.size) : '—'}</td>
                <td class="num">{entry.updated.slice(0, 16).replace('T', ' ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form class="upload" method="post" action={`/workspace/upload?uri=${encodeURIComponent(directoryUri)}`} enctype="multipart/form-data">
        <input type="hidden" name="_csrf" value={csrfToken ?? ''} />
        <label>
          Upload files to this directory
          <input type="file" name="file" multiple required />
        </label>
        <button type="submit">Upload</button>
      </form>
    </article>
  )
}

export function ContentPane(props: ContentPaneProps) {
  return (
    <section id="content" class="content" data-directory-uri={props.directoryUri} data-node-uri={props.nodeUri} aria-label="Preview">
      {props.notice ? (
        <p class="notice" role="status">
          {props.notice}
        </p>
      ) : null}
      {props.preview ? (
        <FilePreview preview={props.preview} />
      ) : (
        <DirectoryListing directoryUri={props.directoryUri} listing={props.listing} csrfToken={props.csrfToken} />
      )}
    </section>
  )
}

/** What GET /workspace/content answers when the node cannot be shown (escaped, swapped in place). */
export function ContentError({ message }: { message: string }) {
  return (
    <section id="content" class="content" aria-label="Preview">
      <p class="error" role="alert">
        {message}
      </p>
    </section>
  )
}
