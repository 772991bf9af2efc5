import { Layout, type NavLink } from '../layout.tsx'
import { ChatPanel, type ChatPanelProps } from '../partials/chat-panel.tsx'
import { ContentPane, type ContentPaneProps } from '../partials/content-pane.tsx'
import { FILES_DIALOG_BODY } from '../partials/file-dialogs.tsx'
import { SearchDialog } from '../partials/search-box.tsx'
import { WorkspaceTree, type TreeEntry, type TreeMore } from '../partials/tree.tsx'

export type { Preview } from '../partials/content-pane.tsx'
export type { TreeEntry } from '../partials/tree.tsx'

export interface WorkspacePageProps {
  readonly login: string
  /** Top-bar links (Settings → Retrieval services when that feature is on). */
  readonly nav?: ReadonlyArray<NavLink> | undefined
  readonly csrfToken: string | undefined
  readonly rootUri: string
  readonly tree: { readonly entries: ReadonlyArray<TreeEntry>; readonly more?: TreeMore | undefined }
  readonly content: ContentPaneProps
  readonly chat: ChatPanelProps
}

/** Tree and preview on one side, the chat on the other, a keyboard-resizable divider between. */
export function WorkspacePage(props: WorkspacePageProps) {
  return (
    <Layout
      title="Workspace"
      csrfToken={props.csrfToken}
      login={props.login}
      nav={props.nav}
      bodyClass="page-workspace"
      interactive
      // What a file change did, in the top bar: it never covers a control (issue 33).
      status={<p id="files-live" class="files-live" role="status" aria-live="polite"></p>}
    >
      <div class="workspace" id="workspace">
        <div class="browser-pane">
          <WorkspaceTree rootUri={props.rootUri} entries={props.tree.entries} more={props.tree.more} />
          <ContentPane {...props.content} />
        </div>
        <div
          class="divider"
          id="divider"
          role="separator"
          tabindex={0}
          aria-orientation="vertical"
          aria-label="Resize the chat panel"
          aria-controls="chat-panel"
          aria-valuemin={25}
          aria-valuemax={70}
          aria-valuenow={40}
          aria-valuetext="chat 40% of the width"
        ></div>
        <ChatPanel {...props.chat} />
      </div>
      <button type="button" id="chat-toggle" class="chat-toggle" aria-controls="chat-panel" aria-expanded="false">
        <span aria-hidden="true">◆</span> Ask KnowAgent
      </button>
      <dialog id="files-dialog" class="dialog" aria-labelledby="files-dialog-title">
        <div id={FILES_DIALOG_BODY}></div>
      </dialog>
      <SearchDialog />
      <section id="upload-panel" class="upload-panel" aria-label="Uploads" hidden>
        <header class="upload-head">
          <strong id="upload-title" role="status"></strong>
          <button type="button" class="ghost icon-only" id="upload-close" aria-label="Close the upload report">
            ✕
          </button>
        </header>
        <progress id="upload-progress" max={100} value={0}></progress>
        <ul id="upload-files" class="upload-files"></ul>
        <p id="upload-error" class="error" role="alert" hidden></p>
        <button type="button" class="small" id="upload-create" hidden>
          Create the folder and upload
        </button>
      </section>
    </Layout>
  )
}
