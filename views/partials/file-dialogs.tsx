// The file-management dialog's contents (new folder, rename, move, delete): server-rendered forms
// that htmx loads into #files-dialog-body and posts back there. A form that cannot be carried out
// comes back with its error; a done one is `FilesDone`, whose data attributes tell files.js what
// changed (it refreshes the tree and the preview, and keeps the chat on the moved folder).
import type { Child } from 'hono/jsx'
import type { DeleteConsequences } from '../../src/effects/compile/source-changes.ts'
import type { MoveDestination, SubtreeCounts } from '../../src/effects/workspace/manage.ts'
import { plural } from '../../src/effects/plural.ts'
import { TRASH_PATH } from '../layout.tsx'

export const FILES_DIALOG_BODY = 'files-dialog-body'

export interface NodeSummary {
  readonly uri: string
  readonly name: string
  readonly kind: 'directory' | 'file'
}


/** "3 files in 2 folders", "1 file", "nothing". */
export function describeCounts({ files, directories }: SubtreeCounts): string {
  if (files === 0 && directories === 0) return 'nothing'
  if (directories === 0) return plural(files, 'file', 'files')
  return `${plural(files, 'file', 'files')} in ${plural(directories, 'folder', 'folders')}`
}

/** "a/, b/ and c/", at most three named, then how many more. */
function listed(uris: ReadonlyArray<string>): string {
  const named = uris.slice(0, 3)
  const rest = uris.length - named.length
  if (rest > 0) return `${named.join(', ')} and ${rest} more`
  return named.length <= 1 ? (named[0] ?? '') : `${named.slice(0, -1).join(', ')} and ${named.at(-1)}`
}

/** The day an item in the Trash is deleted for good, as the pages say it: "2027-01-05" (UTC). */
export const formatPurgeDate = (at: Date): string => at.toISOString().slice(0, 10)

/**
 * What a delete does to compiled pages outside what is deleted: "Its 3 summaries kept outside this
 * folder go to the Trash with these files; the overview of kb://…/team/ will be marked out of date."
 * Undefined when nothing.
 */
export function describeDeleteConsequences({ kind, consequences }: { kind: 'directory' | 'file'; consequences: DeleteConsequences }): string | undefined {
  const summaries = consequences.summaries.length
  const folders = consequences.outdatedFolders
  const removes =
    summaries === 0
      ? undefined
      : kind === 'file'
        ? `Its summary, ${consequences.summaries[0]}, goes to the Trash with it`
        : `The ${plural(summaries, 'summary', 'summaries')} of these files kept outside this folder go to the Trash with them`
  const them = kind === 'file' ? 'the file' : 'these files'
  const outdated =
    folders.length === 0
      ? undefined
      : folders.length === 1
        ? `the overview of ${listed(folders)} will be marked out of date, and may quote ${them} until it is compiled again`
        : `the overviews of ${listed(folders)} will be marked out of date, and may quote ${them} until they are compiled again`
  if (removes && outdated) return `${removes}; ${outdated}.`
  if (removes) return `${removes}.`
  if (outdated) return `${outdated[0]!.toUpperCase()}${outdated.slice(1)}.`
  return undefined
}

function DialogFrame({ title, children }: { title: string; children?: Child }) {
  return (
    <>
      <header class="dialog-head">
        <h2 id="files-dialog-title">{title}</h2>
        <button type="button" class="ghost icon-only" data-close-dialog aria-label="Close">
          ✕
        </button>
      </header>
      <div class="dialog-body">{children}</div>
    </>
  )
}

function FilesForm({ action, children, error }: { action: string; error?: string | undefined; children?: Child }) {
  return (
    <form class="files-form" hx-post={`/workspace/files/${action}`} hx-target={`#${FILES_DIALOG_BODY}`} hx-swap="innerHTML">
      {children}
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
    </form>
  )
}

function Foot({ submit, danger }: { submit: string; danger?: boolean }) {
  return (
    <div class="dialog-foot">
      <button type="button" class="ghost" data-close-dialog>
        Cancel
      </button>
      <button type="submit" class={danger ? 'danger' : undefined}>
        {submit}
      </button>
    </div>
  )
}

export function NewFolderForm({ parentUri, name, error }: { parentUri: string; name?: string | undefined; error?: string | undefined }) {
  return (
    <DialogFrame title="New folder">
      <FilesForm action="new-folder" error={error}>
        <input type="hidden" name="uri" value={parentUri} />
        <p class="dialog-uri">
          In <code>{parentUri}</code>
        </p>
        <label class="field">
          Folder name
          <input type="text" name="name" required maxlength={255} autocomplete="off" value={name ?? ''} autofocus />
        </label>
        <Foot submit="Create folder" />
      </FilesForm>
    </DialogFrame>
  )
}

export function RenameForm({ node, name, error }: { node: NodeSummary; name?: string | undefined; error?: string | undefined }) {
  return (
    <DialogFrame title={node.kind === 'directory' ? 'Rename folder' : 'Rename file'}>
      <FilesForm action="rename" error={error}>
        <input type="hidden" name="uri" value={node.uri} />
        <p class="dialog-uri">
          <code>{node.uri}</code>
        </p>
        <label class="field">
          New name
          <input type="text" name="name" required maxlength={255} autocomplete="off" value={name ?? node.name} autofocus />
        </label>
        <Foot submit="Rename" />
      </FilesForm>
    </DialogFrame>
  )
}

export function MoveForm({
  node,
  parentUri,
  folders,
  truncated,
  error,
}: {
  node: NodeSummary
  parentUri: string
  folders: ReadonlyArray<MoveDestination>
  truncated: boolean
  error?: string | undefined
}) {
  return (
    <DialogFrame title={`Move ${node.name}${node.kind === 'directory' ? '/' : ''}`}>
      <FilesForm action="move" error={error}>
        <input type="hidden" name="uri" value={node.uri} />
        <fieldset class="folder-picker">
          <legend>Move to the folder</legend>
          <ul>
            {folders.map((folder) => (
              <li style={`--depth:${Math.min(folder.depth, 12)}`}>
                <label class="check">
                  <input type="radio" name="to" value={folder.uri} checked={folder.uri === parentUri} required />
                  <span class="icon folder" aria-hidden="true"></span>
                  <span class="folder-name" title={folder.uri}>
                    {folder.depth === 0 ? folder.uri : folder.name}
                  </span>
                  {folder.uri === parentUri ? <span class="muted"> (where it is now)</span> : null}
                </label>
              </li>
            ))}
          </ul>
          {truncated ? <p class="meta">Only the first {folders.length} folders are listed.</p> : null}
        </fieldset>
        {node.kind === 'directory' ? <p class="meta">A folder cannot go into itself or a folder inside it; those are not offered.</p> : null}
        <Foot submit="Move here" />
      </FilesForm>
    </DialogFrame>
  )
}

export function DeleteForm({
  node,
  counts,
  consequences,
  retentionDays,
  error,
}: {
  node: NodeSummary
  counts: SubtreeCounts
  consequences: DeleteConsequences
  /** `trash.retentionDays`: how long it can be restored from the Trash. */
  retentionDays: number
  error?: string | undefined
}) {
  const generated = describeDeleteConsequences({ kind: node.kind, consequences })
  const days = plural(retentionDays, 'day', 'days')
  const what =
    node.kind === 'directory' ? (
      <>
        Delete the folder <strong>{node.name}</strong> and everything in it: <strong>{describeCounts(counts)}</strong>?
      </>
    ) : (
      <>
        Delete the file <strong>{node.name}</strong>?
      </>
    )
  return (
    <DialogFrame title={node.kind === 'directory' ? 'Delete folder' : 'Delete file'}>
      <FilesForm action="delete" error={error}>
        <input type="hidden" name="uri" value={node.uri} />
        <p class="confirm-text">{what}</p>
        <p class="dialog-uri">
          <code>{node.uri}</code>
        </p>
        {generated ? <p class="delete-generated">{generated}</p> : null}
        <p class="meta trash-note">
          {node.kind === 'directory'
            ? `It goes to the Trash for ${days}, with every version of these files and the pages compiled in the folder (summaries, overview, abstract).`
            : `It goes to the Trash for ${days}, with every version${consequences.summaries.length > 0 ? ' and its summary' : ''}.`}{' '}
          Until then you can restore it from <a href={TRASH_PATH}>the Trash</a>; after that it is deleted for good.
        </p>
        <Foot submit={node.kind === 'directory' ? `Delete ${describeCounts(counts)}` : 'Delete'} danger />
      </FilesForm>
    </DialogFrame>
  )
}

export interface FilesChange {
  readonly action: 'new-folder' | 'rename' | 'move' | 'delete'
  /** The node's URI before the change (for a new folder, the folder it was made in). */
  readonly from: string
  /** Its URI after (for a delete, the folder it was in). */
  readonly uri: string
  readonly message: string
}

/** The dialog after a change: files.js reads the data attributes, refreshes and closes it. */
export function FilesDone({ change }: { change: FilesChange }) {
  return (
    <DialogFrame title="Done">
      <p id="files-change" class="notice" role="status" data-action={change.action} data-from={change.from} data-uri={change.uri}>
        {change.message}
      </p>
    </DialogFrame>
  )
}

/** A dialog that could not even be shown (the node vanished, is not the caller's, …). */
export function FilesError({ message }: { message: string }) {
  return (
    <DialogFrame title="Cannot do that">
      <p class="error" role="alert">
        {message}
      </p>
    </DialogFrame>
  )
}
