// The compile form opened by /compile, /compiler and /parse and from the directory dialog (SPEC §8):
// up to 32 raw files of the current directory (generated artifacts listed but not selectable, with
// the reason), the engine (an LLM API model or a server-configured CLI profile and its model),
// reasoning level, call budget, timeout, artifact parent and compile skill. The answer of a
// submit lists the job and, per file, why it was not queued. Below: this directory's jobs, live.
import type { CompileJobView } from '../../src/effects/compile/compile-jobs-store.ts'
import type { Refusal } from '../../src/effects/compile/compile-refusals.ts'
import type { CompileOptions } from '../../src/effects/compile/compile-service.ts'
import type { ModelOption } from './chat-panel.tsx'
import { JobTable } from './compile-jobs.tsx'

export const MAX_COMPILE_FILES = 32

export interface CompileFileEntry {
  readonly name: string
  readonly uri: string
  readonly size: number
  /** Written by a compile job (summary, overview, abstract): not a compile input. */
  readonly generated: string | null
}

export interface CompileFormProps {
  readonly directoryUri: string
  readonly files: ReadonlyArray<CompileFileEntry>
  readonly models: ReadonlyArray<ModelOption>
  readonly options: CompileOptions
  readonly jobs: ReadonlyArray<CompileJobView>
  readonly skillNotice?: string | undefined
}

/** The engine choice as one value: `llm|<model>` or `cli|<profile>|<model>`. */
export const engineValue = (engine: { channel: 'llm'; modelId: string } | { channel: 'cli'; profileId: string; modelId: string }) =>
  engine.channel === 'llm' ? `llm|${engine.modelId}` : `cli|${engine.profileId}|${engine.modelId}`

export function SkillField({ options, selected, notice }: { options: CompileOptions; selected?: string | undefined; notice?: string | undefined }) {
  const current = selected ?? options.defaults.skill ?? ''
  return (
    <div id="compile-skill-field" class="compile-skill-field">
      <label>
        Compile skill
        <select name="skill" id="compile-skill">
          <option value="" selected={current === ''}>
            (none)
          </option>
          {options.skills.map((skill) => (
            <option value={skill.ref} selected={skill.ref === current} title={skill.description}>
              {skill.source === 'user' ? `${skill.name} (yours)` : skill.name}
            </option>
          ))}
        </select>
      </label>
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
    </div>
  )
}

export function CompileForm({ directoryUri, files, models, options, jobs, skillNotice }: CompileFormProps) {
  const { defaults } = options
  // Only a model that takes a reasoning effort is offered levels; the others run without one.
  const llmLevels = (model: ModelOption | undefined) => (model?.supportsReasoningEffort === true ? options.reasoning_levels : [])
  const defaultLevels = llmLevels(models.find((model) => model.id === defaults.model_id))
  const selectedLevel = defaultLevels.includes(defaults.reasoning_level) ? defaults.reasoning_level : (defaultLevels[0] ?? '')
  const raw = files.filter((file) => file.generated === null)
  const generated = files.filter((file) => file.generated !== null)
  return (
    <div class="compile">
      <form class="compile-form" id="compile-form" hx-post="/workspace/compile" hx-target="#compile-result" hx-swap="innerHTML">
        <input type="hidden" name="directory_uri" value={directoryUri} />
        <fieldset class="compile-files">
          <legend>
            Raw files in <code>{directoryUri}</code> (up to {MAX_COMPILE_FILES})
          </legend>
          {raw.length === 0 ? <p class="muted">No raw files in this directory.</p> : null}
          {raw.map((file, index) => (
            <label class="check">
              <input type="checkbox" name="uris" value={file.uri} checked={index < MAX_COMPILE_FILES} />
              {file.name}
            </label>
          ))}
          {generated.map((file) => (
            <label class="check generated" title="written by a compile job; compile the raw files instead">
              <input type="checkbox" disabled aria-describedby="compile-generated-note" />
              {file.name} <span class="muted">— generated {file.generated}, not a compile input</span>
            </label>
          ))}
          {generated.length > 0 ? (
            <p class="muted" id="compile-generated-note">
              Generated artifacts (summaries, overview, abstract) are excluded.
            </p>
          ) : null}
          <p class="muted compile-count" data-max={MAX_COMPILE_FILES} aria-live="polite"></p>
        </fieldset>
        <div class="form-grid">
          <label>
            Engine and model
            <select name="engine" id="compile-engine">
              <optgroup label="LLM API">
                {models.map((model) => (
                  <option value={engineValue({ channel: 'llm', modelId: model.id })} selected={model.id === defaults.model_id} data-levels={llmLevels(model).join(',')}>
                    {model.name}
                  </option>
                ))}
              </optgroup>
              {options.cli_profiles.map((profile) => (
                <optgroup label={`CLI: ${profile.name}`}>
                  {profile.models.map((model) => (
                    <option value={engineValue({ channel: 'cli', profileId: profile.id, modelId: model })} data-levels={profile.reasoning_levels.join(',')}>
                      {profile.name} · {model}
                    </option>
                  ))}
                </optgroup>
              ))}
            </select>
          </label>
          <label>
            Reasoning level
            <select name="reasoning_level" id="compile-reasoning">
              {[...new Set([...options.reasoning_levels, ...options.cli_profiles.flatMap((profile) => profile.reasoning_levels)])].map((level) => (
                <option value={level} selected={level === selectedLevel} disabled={!defaultLevels.includes(level)}>
                  {level}
                </option>
              ))}
              <option value="" selected={selectedLevel === ''} disabled={defaultLevels.length > 0}>
                (none)
              </option>
            </select>
          </label>
          <label>
            Call budget
            <input type="number" name="call_budget" value={String(defaults.call_budget)} min="1" max={String(options.limits.max_call_budget)} required />
          </label>
          <label>
            Timeout (seconds)
            <input type="number" name="timeout_seconds" value={String(defaults.timeout_seconds)} min={String(options.limits.min_timeout_seconds)} max={String(options.limits.max_timeout_seconds)} required />
          </label>
          <label>
            Artifacts parent directory
            <input type="text" name="artifact_parent_uri" placeholder={directoryUri} />
          </label>
          <SkillField options={options} notice={skillNotice} />
        </div>
        <details class="skill-editor">
          <summary>Create or edit one of your compile skills</summary>
          <div class="form-grid" id="skill-editor-fields">
            <label>
              Name (letters, digits, "-")
              <input type="text" name="skill_name" pattern="[a-z0-9][a-z0-9-]{0,63}" placeholder="team-notes" />
            </label>
            <label>
              Description
              <input type="text" name="skill_description" maxlength={500} placeholder="Short notes for the on-call team" />
            </label>
            <label>
              Audience
              <input type="text" name="skill_audience" maxlength={300} placeholder="on-call engineers" />
            </label>
            <label>
              Language
              <input type="text" name="skill_language" maxlength={100} placeholder="the language of the source" />
            </label>
            <label>
              What to keep
              <input type="text" name="skill_keep" maxlength={500} placeholder="commands, error codes, decisions" />
            </label>
          </div>
          <p class="muted">Saved as kb://me/.skills/&lt;name&gt;/SKILL.md in your own workspace; only your jobs can use it.</p>
          <button type="button" class="small" hx-post="/workspace/compile/skills" hx-include="#compile-form" hx-target="#compile-skill-field" hx-swap="outerHTML">
            Save skill
          </button>
        </details>
        <div class="dialog-foot">
          <a href={`/tasks?directory=${encodeURIComponent(directoryUri)}`} class="task-center-link">
            Task center
          </a>
          <button type="button" class="ghost" data-close-dialog>
            Close
          </button>
          <button type="submit">Queue compile</button>
        </div>
        <div id="compile-result" class="compile-result" aria-live="polite"></div>
      </form>
      <section class="compile-jobs" aria-label="Compile jobs of this directory">
        <JobTable
          jobs={jobs}
          streamUrl={`/tasks/stream?directory=${encodeURIComponent(directoryUri)}`}
          caption="Compile jobs of this directory"
          empty="No compile jobs for this directory yet."
        />
      </section>
    </div>
  )
}

const REFUSAL_TITLE: Readonly<Record<string, string>> = {
  not_visible: 'not visible to you',
  not_raw: 'not a raw file',
  generated_artifact: 'a generated artifact',
  over_limit: 'over the 32-file limit',
  duplicate: 'listed twice',
  other_directory: 'in another directory',
  conflicting_active_job: 'already being compiled differently',
  unknown_model: 'unknown model',
  unknown_profile: 'unknown CLI profile',
  model_not_allowed: 'model not allowed',
  reasoning_not_allowed: 'reasoning level not allowed',
  unknown_skill: 'unknown skill',
  invalid_parent: 'invalid artifact parent',
}

export function CompileResult({ jobs, refused }: { jobs: ReadonlyArray<CompileJobView & { created: boolean }>; refused: ReadonlyArray<Refusal> }) {
  return (
    <div class="compile-outcome">
      {jobs.length === 0 && refused.length === 0 ? <p class="muted">Pick at least one file.</p> : null}
      {jobs.map((job) => (
        <p class="compile-queued" role="status" data-job-id={job.id}>
          {job.created ? 'Queued' : 'Already queued with the same configuration:'} job <code>{job.id.slice(0, 8)}</code> for {job.files.length} file
          {job.files.length === 1 ? '' : 's'}. <a href={`/tasks?directory=${encodeURIComponent(job.directory_uri)}`}>Follow it in the task center</a>
        </p>
      ))}
      {refused.length > 0 ? (
        <ul class="compile-refusals" aria-label="Files not queued">
          {refused.map((refusal) => (
            <li data-code={refusal.code}>
              <strong>{decodeURIComponent(refusal.uri.split('/').filter(Boolean).at(-1) ?? refusal.uri)}</strong>: {REFUSAL_TITLE[refusal.code] ?? refusal.code} — <span>{refusal.message}</span>
              {refusal.configuration ? (
                <span class="muted">
                  {' '}
                  (that job uses {refusal.configuration.channel === 'cli' ? `CLI ${refusal.configuration.profile_id} · ` : ''}
                  {refusal.configuration.model_id}, budget {refusal.configuration.call_budget})
                </span>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  )
}

export function CompileError({ message }: { message: string }) {
  return (
    <p class="compile-error" role="alert">
      {message}
    </p>
  )
}
