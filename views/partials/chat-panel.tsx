// The KnowAgent chat panel: model selector, conversation log (welcome area first), context
// meter and composer. The composer form posts to /workspace/chat/stream through htmx's SSE
// extension; chat.js keeps the conversation's history in the form's hidden `history` field and
// picks a cut stream up again from `#chat-resume`.
import { ContextMeter } from './turn-fragments.tsx'
import type { TreeEntry } from './tree.tsx'
import { Welcome, type WelcomeEntry } from './welcome.tsx'

export interface ModelOption {
  readonly id: string
  readonly name: string
  readonly profile: string
  readonly contextWindow: number
  readonly supportsNativeToolCalling: boolean
  /** Takes a reasoning effort (the compile form offers reasoning levels for it). */
  readonly supportsReasoningEffort?: boolean | undefined
}

export interface ChatPanelProps {
  readonly directoryUri: string
  readonly entries: ReadonlyArray<WelcomeEntry>
  readonly models: ReadonlyArray<ModelOption>
  readonly defaultModelId: string
  readonly maxMessageChars: number
}

export interface SlashCommand {
  readonly name: string
  readonly usage: string
  readonly description: string
}

/** The command menu; `compile`, `compiler` and `parse` open the compile form and never reach a model. */
export const SLASH_COMMANDS: ReadonlyArray<SlashCommand> = [
  { name: 'ls', usage: '[path]', description: 'List a directory' },
  { name: 'read', usage: '<file> [offset]', description: 'Read a file’s text' },
  { name: 'search', usage: '<words>', description: 'Search the files under this directory' },
  { name: 'status', usage: '[path]', description: 'Parse and compile status' },
  { name: 'compile', usage: '', description: 'Open the compile form' },
  { name: 'compiler', usage: '', description: 'Open the compile form' },
  { name: 'parse', usage: '', description: 'Open the compile form' },
]

export const TEXT_ONLY_NOTICE =
  'This model cannot call tools: it cannot list, search or read files by itself. It answers from the directory listing KnowAgent attaches to your question. Commands (/ls, /read, /search, /status) still work.'

function ModelSelector({ models, defaultModelId }: { models: ReadonlyArray<ModelOption>; defaultModelId: string }) {
  const selected = models.find((model) => model.id === defaultModelId) ?? models[0]
  const tools = selected?.supportsNativeToolCalling ?? true
  return (
    <div class="model-bar">
      <label for="chat-model">Model</label>
      <select id="chat-model" name="model_id" form="chat-form">
        {models.map((model) => (
          <option
            value={model.id}
            selected={model.id === selected?.id}
            data-tools={model.supportsNativeToolCalling ? 'true' : 'false'}
            data-window={String(model.contextWindow)}
          >
            {model.name} · {model.profile} — {model.supportsNativeToolCalling ? 'tools' : 'text only'}
          </option>
        ))}
      </select>
      <span id="model-capability" class={`capability ${tools ? 'tools' : 'text-only'}`}>
        {tools ? 'Tools' : 'Text only'}
      </span>
    </div>
  )
}

function CommandMenu() {
  return (
    <ul id="command-menu" class="command-menu" role="listbox" aria-label="Commands" hidden>
      {SLASH_COMMANDS.map((command) => (
        <li role="option" id={`command-option-${command.name}`} data-command={command.name} aria-selected="false">
          <code class="command-name">/{command.name}</code>
          <span class="command-usage">{command.usage}</span>
          <span class="command-description">{command.description}</span>
        </li>
      ))}
    </ul>
  )
}

function Composer({ directoryUri, maxMessageChars }: { directoryUri: string; maxMessageChars: number }) {
  return (
    <form id="chat-form" class="composer" hx-post="/workspace/chat/stream" hx-swap="none" hx-sync="replace">
      <input type="hidden" name="uri" id="chat-uri" value={directoryUri} />
      <input type="hidden" name="history" id="chat-history" value="[]" />
      <div class="composer-box">
        <button type="button" id="uri-prefix" class="uri-prefix" aria-haspopup="dialog" aria-controls="directory-dialog" title="Directory commands (/ls)">
          <span class="icon folder" aria-hidden="true"></span>
          <span id="uri-prefix-text">{directoryUri}</span>
        </button>
        <textarea
          id="chat-message"
          name="message"
          aria-label="Message"
          rows={1}
          maxlength={maxMessageChars}
          placeholder="Ask a question — / for commands"
          autocomplete="off"
          aria-controls="command-menu"
        ></textarea>
        <CommandMenu />
        <div class="composer-actions">
          <span class="composer-hint">
            <kbd>Enter</kbd> send · <kbd>Shift</kbd>+<kbd>Enter</kbd> new line · <kbd>/</kbd> commands
          </span>
          <button type="button" id="chat-stop" class="stop" hidden>
            Stop
          </button>
          <button type="submit" id="chat-send" class="send">
            Send
          </button>
        </div>
      </div>
    </form>
  )
}

/** Cloned by chat.js for each message; `data-part`s get ids the stream's fragments target. */
function MessageTemplates() {
  return (
    <>
      <template id="user-message-template">
        <article class="msg user">
          <div class="msg-main">
            <div class="bubble" data-part="text"></div>
          </div>
        </article>
      </template>
      <template id="assistant-message-template">
        <article class="msg assistant is-streaming" aria-busy="true">
          <div class="avatar" aria-hidden="true">
            ◆
          </div>
          <div class="msg-main">
            <div class="msg-head">
              <span class="author">KnowAgent</span>
              <span class="model-name" data-part="model"></span>
            </div>
            <div class="thinking-slot" data-part="thinking"></div>
            <div class="assistant-body" data-part="body"></div>
            <div class="turn-outcome" data-part="outcome"></div>
            <div class="typing" aria-hidden="true">
              <span></span>
              <span></span>
              <span></span>
            </div>
            <p class="msg-status" data-part="status" role="status">
              Waiting for KnowAgent…
            </p>
          </div>
        </article>
      </template>
      <template id="command-pending-template">
        <article class="msg command is-pending">
          <div class="avatar command-avatar" aria-hidden="true">
            /
          </div>
          <div class="msg-main">
            <p class="msg-status" role="status">
              Running…
            </p>
          </div>
        </article>
      </template>
    </>
  )
}

function DirectoryDialog({ directoryUri }: { directoryUri: string }) {
  return (
    <dialog id="directory-dialog" class="dialog" aria-labelledby="directory-dialog-title">
      <header class="dialog-head">
        <h2 id="directory-dialog-title">Directory commands</h2>
        <button type="button" class="ghost icon-only" data-close-dialog aria-label="Close">
          ✕
        </button>
      </header>
      <p class="dialog-uri">
        <code data-bind="directory-uri">{directoryUri}</code>
      </p>
      <div class="dialog-actions">
        <button type="button" data-run-command="ls">
          List (ls)
        </button>
        <button type="button" data-run-command="status">
          Status
        </button>
        <button type="button" data-open-compile>
          Compile…
        </button>
      </div>
      <form class="inline-command" data-command-form="search">
        <label>
          Search this directory
          <input type="search" name="query" required placeholder="words or a phrase" autofocus />
        </label>
        <button type="submit">Search</button>
      </form>
      <section class="dialog-listing" aria-label="Directory listing">
        <div id="directory-dialog-listing" class="dialog-listing-body"></div>
      </section>
    </dialog>
  )
}

function CompileDialog() {
  return (
    <dialog id="compile-dialog" class="dialog wide" aria-labelledby="compile-dialog-title">
      <header class="dialog-head">
        <h2 id="compile-dialog-title">Compile to wiki</h2>
        <button type="button" class="ghost icon-only" data-close-dialog aria-label="Close">
          ✕
        </button>
      </header>
      <div id="compile-dialog-body" class="dialog-body">
        <p class="muted">Loading…</p>
      </div>
    </dialog>
  )
}

export function ChatPanel(props: ChatPanelProps) {
  const selected = props.models.find((model) => model.id === props.defaultModelId) ?? props.models[0]
  return (
    <aside id="chat-panel" class="chat" aria-label="KnowAgent chat">
      <header class="chat-head">
        <div class="chat-title">
          <span class="chat-logo" aria-hidden="true">
            ◆
          </span>
          <div>
            <h2>KnowAgent</h2>
            <p class="chat-sub">Reads this directory with scoped tools</p>
          </div>
        </div>
        <div class="chat-head-actions">
          <button type="button" id="chat-new" class="ghost small">
            New chat
          </button>
          <button type="button" id="chat-close" class="ghost icon-only phone-only" aria-label="Close chat">
            ✕
          </button>
        </div>
      </header>
      <ModelSelector models={props.models} defaultModelId={props.defaultModelId} />
      <p id="model-notice" class="model-notice" role="note" hidden={selected?.supportsNativeToolCalling ?? true}>
        {TEXT_ONLY_NOTICE}
      </p>
      <div id="chat-log" class="chat-log" role="log" aria-label="Conversation" tabindex={0}>
        <Welcome directoryUri={props.directoryUri} entries={props.entries} />
      </div>
      <ContextMeter />
      <Composer directoryUri={props.directoryUri} maxMessageChars={props.maxMessageChars} />
      {/* The source of the requests that pick a cut stream up again (chat.js): outside the form, whose fields a GET would carry. */}
      <div id="chat-resume" hidden></div>
      <MessageTemplates />
      <DirectoryDialog directoryUri={props.directoryUri} />
      <CompileDialog />
      <div id="command-runner" hidden></div>
    </aside>
  )
}
