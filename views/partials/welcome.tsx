// The chat's welcome area: what KnowAgent can do here, with example questions drawn from the
// current directory's real entries. An empty directory gets no questions — every model, the
// built-in extractive one above all, could only answer them with "nothing here covers it" —
// but the way to fill it: an Upload files button (files.js handles `data-upload-to`).
import type { TreeEntry } from './tree.tsx'

export function directoryName(uri: string): string {
  const parts = uri.replace(/\/$/, '').split('/')
  return parts.length <= 4 ? 'your workspace' : `${parts.at(-1)}/`
}

/** The longest word (4+ letters) of a file name, if it has one. */
function topicOf(fileName: string): string | undefined {
  const stem = fileName.replace(/\.[^.]+$/, '')
  const words = stem.split(/[-_.\s]+/).filter((word) => /^\p{L}{4,}$/u.test(word))
  return words.sort((a, b) => b.length - a.length)[0]
}

/** An entry of the directory; `empty`: a subfolder known to hold no file (nothing in it to ask about). */
export type WelcomeEntry = Pick<TreeEntry, 'name' | 'kind'> & { readonly empty?: boolean | undefined }

/** Up to three questions a person could ask about this directory's entries; none when it is empty. */
export function exampleQuestions(entries: ReadonlyArray<WelcomeEntry>): string[] {
  const files = entries.filter((entry) => entry.kind === 'file')
  const directories = entries.filter((entry) => entry.kind === 'directory' && entry.empty !== true)
  const questions: string[] = []
  const document = files.find((file) => /\.(md|txt|html?|pdf|docx)$/i.test(file.name)) ?? files[0]
  if (document) questions.push(`What are the key points of ${document.name}?`)
  const topic = files.filter((file) => file !== document).map((file) => topicOf(file.name)).find((word) => word !== undefined)
  if (topic) questions.push(`Which files mention ${topic}?`)
  if (directories[0]) questions.push(`What is in ${directories[0].name}/?`)
  if (questions.length < 3 && files.length + directories.length > 0) questions.push('Summarise what these files are about.')
  return questions.slice(0, 3)
}

export function Welcome({ directoryUri, entries }: { directoryUri: string; entries: ReadonlyArray<WelcomeEntry> }) {
  const questions = exampleQuestions(entries)
  return (
    <section id="chat-welcome" class="welcome" aria-label="Welcome">
      <div class="welcome-mark" aria-hidden="true">
        ◆
      </div>
      <h3>Ask about {directoryName(directoryUri)}</h3>
      <p>
        KnowAgent lists, searches and reads the files under <code>{directoryUri}</code> and cites the passages it quotes.
      </p>
      {questions.length > 0 ? (
        <div class="examples">
          {questions.map((question) => (
            <button type="button" class="example" data-question={question}>
              {question}
            </button>
          ))}
        </div>
      ) : (
        <div class="welcome-empty">
          <p>There are no files here yet. Upload some (or drop them on the file pane), then ask about them.</p>
          <button type="button" class="small" data-upload-to={directoryUri}>
            Upload files
          </button>
        </div>
      )}
      <p class="welcome-hint">
        Type <kbd>/</kbd> for commands: <code>/ls</code> <code>/read</code> <code>/search</code> <code>/status</code> <code>/compile</code>
      </p>
    </section>
  )
}
