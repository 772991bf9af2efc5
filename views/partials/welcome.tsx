// The chat's welcome area: what KnowAgent can do here, with example questions drawn from the
// current directory's real entries. An empty directory gets no questions — every model, the
// built-in extractive one above all, could only answer them with "nothing here covers it" —
// but the way to fill it: an Upload files button (files.js handles `data-upload-to`).
import type { TreeEntry } from './tree.tsx'

export function directoryName(uri: string): string {
  const parts = uri.replace(/\/$/, '').split('/')
  return parts.length <= 4 ? 'your workspace' : `${parts.at(-1)}/`
}

/** An entry of the directory; `empty`: a subfolder known to hold no file (nothing in it to ask about). */
export type WelcomeEntry = Pick<TreeEntry, 'name' | 'kind'> & { readonly empty?: boolean | undefined }

/**
 * Up to three questions a person could ask about this directory's entries, each one the files
 * answer whatever they hold (the gist of a file, of a subfolder, of the folder); none when it is
 * empty. A question built from a word of a file's name ("Which files mention review?") was not:
 * the word need not be in any file's text (issue 41).
 */
export function exampleQuestions(entries: ReadonlyArray<WelcomeEntry>): string[] {
  const files = entries.filter((entry) => entry.kind === 'file')
  const directories = entries.filter((entry) => entry.kind === 'directory' && entry.empty !== true)
  const questions: string[] = []
  const isDocument = (name: string) => /\.(md|txt|html?|pdf|docx)$/i.test(name)
  const document = files.find((file) => isDocument(file.name)) ?? files[0]
  if (document) questions.push(`What are the key points of ${document.name}?`)
  const other = files.find((file) => file !== document && isDocument(file.name) && !/^readme\./iu.test(file.name))
  if (other) questions.push(`Summarise ${other.name}.`)
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
