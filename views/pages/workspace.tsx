import { raw } from 'hono/html'
import { Layout } from '../layout.tsx'

export interface TreeEntry {
  readonly name: string
  readonly uri: string
  readonly kind: 'directory' | 'file'
  readonly size: number
  readonly updated: string
  readonly children?: ReadonlyArray<TreeEntry> | undefined
  readonly current?: boolean
}

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

export interface WorkspacePageProps {
  readonly login: string
  readonly csrfToken: string | undefined
  readonly rootUri: string
  readonly tree: ReadonlyArray<TreeEntry>
  readonly directoryUri: string
  readonly listing: ReadonlyArray<TreeEntry>
  readonly preview?: Preview | undefined
  readonly notice?: string | undefined
}

const href = (uri: string) => `/workspace?uri=${encodeURIComponent(uri)}`

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

export function Tree({ entries }: { entries: ReadonlyArray<TreeEntry> }) {
  return (
    <ul class="tree" role="group">
      {entries.map((entry) => (
        <li class={`node ${entry.kind}${entry.current ? ' current' : ''}`} role="treeitem" aria-current={entry.current ? 'page' : undefined}>
          <a href={href(entry.uri)}>
            <span class="icon" aria-hidden="true">{entry.kind === 'directory' ? '▸' : '·'}</span>
            {entry.name}
          </a>
          {entry.children && entry.children.length > 0 ? <Tree entries={entry.children} /> : null}
        </li>
      ))}
    </ul>
  )
}

export function WorkspacePage(props: WorkspacePageProps) {
  const { preview } = props
  return (
    <Layout title="Workspace" csrfToken={props.csrfToken} login={props.login}>
      <div class="workspace">
        <nav class="sidebar" aria-label="Workspace tree">
          <a class="root" href={href(props.rootUri)}>
            {props.rootUri}
          </a>
          <div role="tree">
            <Tree entries={props.tree} />
          </div>
        </nav>
        <section class="content">
          {props.notice ? (
            <p class="notice" role="status">
              {props.notice}
            </p>
          ) : null}
          {preview ? (
            <article class="preview" aria-label="File preview">
              <header>
                <h1 class="uri">{preview.uri}</h1>
                <p class="meta">
                  {preview.mime} · {formatSize(preview.size)} · version {preview.versionNo}
                </p>
              </header>
              {preview.parseError ? (
                <p class="error" role="alert">
                  This file's text could not be extracted: {preview.parseError}. Its raw bytes are kept.
                </p>
              ) : preview.html !== undefined ? (
                <div class="markdown">{raw(preview.html)}</div>
              ) : (
                <pre class="text">{preview.text ?? ''}</pre>
              )}
              {preview.truncated ? <p class="meta">Preview truncated.</p> : null}
            </article>
          ) : (
            <article class="listing" aria-label="Directory listing">
              <h1 class="uri">{props.directoryUri}</h1>
              {props.listing.length === 0 ? (
                <p class="meta">This directory is empty.</p>
              ) : (
                <table>
                  <thead>
                    <tr>
                      <th>Name</th>
                      <th>Size</th>
                      <th>Updated</th>
                    </tr>
                  </thead>
                  <tbody>
                    {props.listing.map((entry) => (
                      <tr>
                        <td>
                          <a href={href(entry.uri)}>
                            {entry.name}
                            {entry.kind === 'directory' ? '/' : ''}
                          </a>
                        </td>
                        <td>{entry.kind === 'file' ? formatSize(entry.size) : ''}</td>
                        <td>{entry.updated.slice(0, 16).replace('T', ' ')}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
              <form class="upload" method="post" action={`/workspace/upload?uri=${encodeURIComponent(props.directoryUri)}`} enctype="multipart/form-data">
                <input type="hidden" name="_csrf" value={props.csrfToken ?? ''} />
                <label>
                  Upload files to this directory
                  <input type="file" name="file" multiple required />
                </label>
                <button type="submit">Upload</button>
              </form>
            </article>
          )}
        </section>
      </div>
    </Layout>
  )
}
