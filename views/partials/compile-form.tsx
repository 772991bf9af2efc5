// The compile form opened by /compile, /compiler and /parse (SPEC §8). Compile jobs arrive in a
// later release: the form shows the real choices (raw files of this directory, models, budgets)
// but queues nothing, and nothing typed here ever reaches a model.
import type { ModelOption } from './chat-panel.tsx'
import type { TreeEntry } from './tree.tsx'

export const MAX_COMPILE_FILES = 32
const GENERATED = new Set(['.overview.md', '.abstract.md'])

/** Raw files only: not the generated overview/abstract, at most 32. */
export function compileCandidates(entries: ReadonlyArray<TreeEntry>): ReadonlyArray<TreeEntry> {
  return entries.filter((entry) => entry.kind === 'file' && !GENERATED.has(entry.name)).slice(0, MAX_COMPILE_FILES)
}

export function CompileForm({ directoryUri, entries, models }: { directoryUri: string; entries: ReadonlyArray<TreeEntry>; models: ReadonlyArray<ModelOption> }) {
  const files = compileCandidates(entries)
  return (
    <form class="compile-form" id="compile-form" aria-describedby="compile-later">
      <p class="notice" id="compile-later" role="note">
        Compile jobs come in a later release. This form shows what a job will take; nothing is queued and nothing is sent to a model.
      </p>
      <fieldset class="compile-files">
        <legend>
          Raw files in <code>{directoryUri}</code> (up to {MAX_COMPILE_FILES})
        </legend>
        {files.length === 0 ? (
          <p class="muted">No raw files in this directory.</p>
        ) : (
          files.map((file) => (
            <label class="check">
              <input type="checkbox" name="uris" value={file.uri} />
              {file.name}
            </label>
          ))
        )}
      </fieldset>
      <div class="form-grid">
        <label>
          Engine
          <select name="engine">
            <option value="llm">LLM API model</option>
            <option value="cli" disabled>
              CLI profile (none configured)
            </option>
          </select>
        </label>
        <label>
          Model
          <select name="model_id">
            {models.map((model) => (
              <option value={model.id}>{model.name}</option>
            ))}
          </select>
        </label>
        <label>
          Reasoning level
          <select name="reasoning_level">
            <option value="low">low</option>
            <option value="medium" selected>
              medium
            </option>
            <option value="high">high</option>
          </select>
        </label>
        <label>
          Call budget
          <input type="number" name="call_budget" value="8" min="1" max="64" />
        </label>
        <label>
          Timeout (seconds)
          <input type="number" name="timeout_seconds" value="600" min="30" max="3600" />
        </label>
        <label>
          Artifacts parent directory
          <input type="text" name="parent_uri" placeholder={directoryUri} />
        </label>
      </div>
      <div class="dialog-foot">
        <button type="button" class="ghost" data-close-dialog>
          Close
        </button>
        <button type="submit" disabled>
          Queue compile (coming later)
        </button>
      </div>
    </form>
  )
}
