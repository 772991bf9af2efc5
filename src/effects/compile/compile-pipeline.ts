// The effects of a compile attempt (SPEC §8): the actors the compile job machine invokes, and
// `runCompileAttempt`, which runs the machine over them for one claimed job.
//   begin     mark the row running for this claim; resolve the engine from the snapshot
//   parse     each file's parsed body (L2), re-parsed and saved when it had none
//   summarise one file → its summary (cached by fingerprint: same input + engine + skill ⇒ no call)
//   overview  the artifact directory's summaries → L1
//   abstract  L1 → L0
//   publish   every page as a new version and the job's success, in ONE transaction (compile-artifacts.ts)
import * as Effect from 'effect/Effect'
import type { Kysely } from 'kysely'
import {
  type AbstractInput,
  type ActorFailure,
  type BeginInput,
  type BeginOutput,
  type CompileJobEvent,
  type CompileJobOutput,
  compileJobMachine,
  type OverviewInput,
  type ParsedFile,
  type ParseInput,
  type ParseOutput,
  type PublishInput,
  type PublishOutput,
  type StepOutput,
  type SummariseInput,
} from '../../machines/index.ts'
import { fromEffect } from '../actor-bridge.ts'
import type { DB, GeneratedKind } from '../db/schema.ts'
import type { ModelRegistry } from '../llm/model-registry.ts'
import type { DocumentParser } from '../workspace/parse/document-parser.ts'
import { findNode, type WorkspaceNode } from '../workspace/store.ts'
import type { Db, Owner } from '../db/schema.ts'
import { parseKbUri, pathToSegments } from '../workspace/uri.ts'
import type { ChannelFailure } from './channel-failure.ts'
import { type CompileChannel, channelForModel, makeCliChannel } from './compile-channel.ts'
import type { CliProfile } from './compile-config.ts'
import { beginAttempt, finishAttempt, recordProgress } from './compile-attempts-store.ts'
import type { StoredCompileJob } from './compile-jobs-store.ts'
import { abstractRequest, type CompileRequest, overviewRequest, summaryRequest } from './compile-prompts.ts'
import { type CompileSnapshot, stepFingerprint } from './compile-snapshot.ts'
import { runActor } from '../actor-host.ts'
import { currentText } from '../workspace/ingest.ts'
import type { LocalCompiler } from './local-compile-thread.ts'
import { type AttemptClaim, earlierSummaries, failure, publishArtifacts } from './compile-artifacts.ts'

export type { AttemptClaim } from './compile-artifacts.ts'


/** Extra environment for a job's CLI (e.g. BAILIAN_WORKSPACE_ID resolved for its owner), when a provider is wired. */
export type CompileEnvironmentProvider = (owner: Owner) => Promise<Readonly<Record<string, string>>>

export interface CompileEngines {
  readonly models: ModelRegistry
  readonly cliProfiles: ReadonlyArray<CliProfile>
  readonly serverEnv: Readonly<Record<string, string | undefined>>
  readonly extraEnv?: CompileEnvironmentProvider | undefined
  /** Parses again a file whose parse had failed (the server's worker pool); without it such files are skipped. */
  readonly parser?: DocumentParser | undefined
  /** Runs the built-in local model's steps off the event loop (the compile worker's thread); without it they run on the caller's thread. */
  readonly localCompiler?: LocalCompiler | undefined
}


export interface CompileAttemptDeps {
  readonly db: Kysely<DB>
  readonly engines: CompileEngines
  readonly claim: AttemptClaim
  readonly owner: Owner
  readonly job: StoredCompileJob
  readonly snapshot: CompileSnapshot
  /** Called before each model call (tests count them; the cache is proven by their absence). */
  readonly onModelCall?: ((purpose: CompileRequest['purpose']) => void) | undefined
}


function fromDatabase<A>(what: string, run: () => Promise<A>): Effect.Effect<A, ActorFailure> {
  return Effect.tryPromise({
    try: run,
    catch: (error) => failure('database', `${what} failed: ${error instanceof Error ? error.message : String(error)}`, true),
  })
}

/** Expected failures become the actor's output (data for the machine's guards). */
const asOutput = <A>(effect: Effect.Effect<A, ActorFailure>): Effect.Effect<A | ActorFailure> => effect.pipe(Effect.catch((error: ActorFailure) => Effect.succeed(error)))

export function resolveChannel({ engines, snapshot, extraEnv }: { engines: CompileEngines; snapshot: CompileSnapshot; extraEnv: Readonly<Record<string, string>> }): CompileChannel | ActorFailure {
  if (snapshot.channel === 'llm') {
    const model = Effect.runSync(Effect.result(engines.models.get(snapshot.modelId)))
    if (model._tag === 'Failure') return failure('unknown_model', `model "${snapshot.modelId}" is no longer configured on this server`, false)
    return channelForModel(model.success, { localCompiler: engines.localCompiler, reasoningLevel: snapshot.reasoningLevel })
  }
  const profile = engines.cliProfiles.find((candidate) => candidate.id === snapshot.profileId)
  if (!profile) return failure('unknown_profile', `CLI profile "${snapshot.profileId}" is no longer configured on this server`, false)
  if (!profile.models.includes(snapshot.modelId)) return failure('model_not_allowed', `CLI profile "${profile.id}" no longer allows model "${snapshot.modelId}"`, false)
  return makeCliChannel({ profile, model: snapshot.modelId, reasoning: snapshot.reasoningLevel, serverEnv: engines.serverEnv, extraEnv })
}

interface NodeById {
  readonly node: WorkspaceNode
  readonly generated: GeneratedKind | null
}

async function nodeById(db: Db, owner: Owner, nodeId: string): Promise<NodeById | undefined> {
  const row = await db.selectFrom('nodes').select(['path', 'generated']).where('id', '=', nodeId).where('owner_id', '=', owner.id).executeTakeFirst()
  if (!row) return undefined
  const node = await findNode(db, owner, pathToSegments(row.path))
  return node ? { node, generated: row.generated } : undefined
}

interface LoadedFile {
  readonly name: string
  readonly uri: string
  readonly body: string
}

/**
 * Effects still running. A stopped actor's Effect is interrupted asynchronously (killing a CLI's
 * process group and waiting for it takes a moment); the attempt is over only when they are all done.
 */
export class InFlightEffects {
  private readonly running = new Set<Promise<void>>()
  track<A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> {
    return Effect.suspend(() => {
      let finished: () => void = () => {}
      const settled = new Promise<void>((resolve) => (finished = resolve))
      this.running.add(settled)
      return effect.pipe(
        Effect.ensuring(
          Effect.sync(() => {
            this.running.delete(settled)
            finished()
          }),
        ),
      )
    })
  }
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running])
  }
}

/** The actors of one attempt, closed over its claim and the bodies parsed so far. */
export function compileAttemptActors(deps: CompileAttemptDeps, inFlight: InFlightEffects = new InFlightEffects()) {
  const { db, claim, owner, snapshot } = deps
  const actor = <TOutput, TInput>(make: Parameters<typeof fromEffect<TOutput, TInput>>[0]) =>
    fromEffect<TOutput, TInput>((args) => inFlight.track(make(args)))
  const bodies = new Map<string, LoadedFile>()
  let channel: CompileChannel | undefined
  const skill = snapshot.skill ? { name: snapshot.skill.name, body: snapshot.skill.body } : undefined
  const parentSegments = pathToSegments(snapshot.artifactParent.path)
  const directoryName = parentSegments.at(-1) ?? owner.login

  /** A model step, or its cached output (same fingerprint ⇒ no call). */
  const step = (request: CompileRequest, callsLeft: number): Effect.Effect<StepOutput> =>
    asOutput(
      Effect.gen(function* () {
        if (!channel) return yield* Effect.fail(failure('internal_error', 'no engine resolved for this attempt', true))
        const engine = channel
        const fingerprint = stepFingerprint({ engine: engine.engine, reasoningLevel: snapshot.reasoningLevel, system: request.system, input: request.input, outputVersion: engine.outputVersion })
        const cached = yield* fromDatabase('reading the compile cache', () =>
          db.selectFrom('compile_cache').select('output').where('owner_id', '=', owner.id).where('fingerprint', '=', fingerprint).executeTakeFirst(),
        )
        if (cached) return { ok: true as const, text: cached.output, calls: 0, cached: true }
        if (callsLeft < 1) {
          return yield* Effect.fail(failure('budget_exhausted', `the call budget of ${snapshot.callBudget} is used up before the ${request.purpose} of ${request.title}`, false))
        }
        deps.onModelCall?.(request.purpose)
        const text = yield* engine.complete(request).pipe(Effect.mapError((error: ChannelFailure) => failure(error.code, error.message, error.retryable)))
        yield* fromDatabase('writing the compile cache', () =>
          db.insertInto('compile_cache').values({ owner_id: owner.id, fingerprint, output: text }).onConflict((oc) => oc.columns(['owner_id', 'fingerprint']).doNothing()).execute(),
        )
        return { ok: true as const, text, calls: 1, cached: false }
      }),
    )

  const begin = actor<BeginOutput, BeginInput>(() =>
    asOutput(
      Effect.gen(function* () {
        const result = yield* fromDatabase('claiming the job', () => beginAttempt(db, claim))
        if (result === 'cancelled') return yield* Effect.fail(failure('cancelled', 'the job was cancelled', false))
        if (result !== 'running') return yield* Effect.fail(failure('claim_refused', `this attempt no longer owns the job (${result})`, false))
        const extraEnv = deps.engines.extraEnv ? yield* fromDatabase('resolving the CLI environment', () => deps.engines.extraEnv!(owner)) : {}
        const resolved = resolveChannel({ engines: deps.engines, snapshot, extraEnv })
        if ('ok' in resolved) return yield* Effect.fail(resolved)
        channel = resolved
        return { ok: true as const }
      }),
    ),
  )

  const parse = actor<ParseOutput, ParseInput>(({ input, signal }) =>
    asOutput(
      Effect.gen(function* () {
        const files: ParsedFile[] = []
        for (const file of input.files) {
          const found = yield* fromDatabase('reading a file', () => nodeById(db, owner, file.nodeId))
          if (!found || found.node.kind !== 'file') {
            files.push({ ...file, readable: false, reason: 'deleted or moved since the job was queued' })
            continue
          }
          if (found.generated !== null) {
            files.push({ ...file, readable: false, reason: 'a generated artifact is not a compile input' })
            continue
          }
          const outcome = yield* fromDatabase('parsing a file', () => ensureParsedBody({ db, owner, node: found.node, signal, parser: deps.engines.parser }))
          if (outcome.body === undefined) files.push({ ...file, uri: found.node.uri, readable: false, reason: outcome.reason })
          else {
            bodies.set(file.nodeId, { name: found.node.name, uri: found.node.uri, body: outcome.body })
            files.push({ ...file, name: found.node.name, uri: found.node.uri, readable: true })
          }
        }
        return { ok: true as const, files }
      }),
    ),
  )

  const summarise = actor<StepOutput, SummariseInput>(({ input }) => {
    const file = bodies.get(input.file.nodeId)
    if (!file) return Effect.succeed(failure('internal_error', `no parsed body for ${input.file.uri}`, true))
    return step(summaryRequest({ name: file.name, uri: file.uri, body: file.body, skill, maxInputChars: channel?.maxInputChars ?? 50_000 }), input.callsLeft)
  })

  const overview = actor<StepOutput, OverviewInput>(({ input }) =>
    Effect.gen(function* () {
      const others = yield* asOutput(fromDatabase('reading earlier summaries', () => earlierSummaries({ db, owner, parentSegments, except: input.summaries })))
      if ('ok' in others) return others
      const summaries = [...input.summaries.map(({ name, uri, summary }) => ({ name, uri, summary })), ...others].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      return yield* step(overviewRequest({ directoryName, summaries, skill, maxInputChars: channel?.maxInputChars ?? 50_000 }), input.callsLeft)
    }),
  )

  const abstract = actor<StepOutput, AbstractInput>(({ input }) => step(abstractRequest({ directoryName, overview: input.overview, skill }), input.callsLeft))

  // Files deleted before this attempt began (their reference is gone: a retry after a delete) are
  // not the machine's inputs, but the result still says they were skipped.
  const goneBefore = deps.job.fileRefs.flatMap((file) =>
    file.nodeId === null ? [{ nodeId: '', uri: file.uri, name: fileNameOf(file.uri, owner), readable: false, reason: 'deleted or moved since the job was queued' }] : [],
  )
  const publish = actor<PublishOutput, PublishInput>(({ input }) =>
    asOutput(
      fromDatabase('publishing', () =>
        publishArtifacts({ db, owner, claim, snapshot, input: { ...input, skipped: [...goneBefore, ...input.skipped] }, engine: channel?.engine ?? snapshot.modelId }),
      ),
    ),
  )

  return { begin, parse, summarise, overview, abstract, publish }
}

/** The file's parsed body; a file whose parse had failed is parsed again (ingest.ts records the outcome). */
async function ensureParsedBody({
  db,
  owner,
  node,
  signal,
  parser,
}: {
  db: Kysely<DB>
  owner: Owner
  node: WorkspaceNode
  signal: AbortSignal
  parser: DocumentParser | undefined
}): Promise<{ body?: string; reason?: string }> {
  const text = await currentText(db, { owner, node, parser, signal })
  if (text._tag === 'NoContent') return { reason: 'the file has no content' }
  if (text._tag === 'WithoutText') return { reason: `not parseable: ${text.reason}` }
  if (text.text.trim() === '') return { reason: 'the parsed body is empty' }
  return { body: text.text }
}


function fileNameOf(uri: string, owner: Owner): string {
  try {
    return parseKbUri({ uri, callerLogin: owner.login }).segments.at(-1) ?? uri
  } catch {
    return uri
  }
}

export type AttemptStopReason = 'cancel' | 'shutdown' | 'claim_lost'

/**
 * Runs one claimed attempt to its end: the machine over the actors above, its progress recorded
 * on the row, its end recorded (fenced by the claim). `signal` stops it: abort with reason
 * 'cancel', 'shutdown' or 'claim_lost'.
 */
export async function runCompileAttempt(deps: CompileAttemptDeps & { readonly signal: AbortSignal }): Promise<CompileJobOutput> {
  const { db, claim, job, snapshot } = deps
  const files = job.fileRefs.flatMap((file) => (file.nodeId ? [{ nodeId: file.nodeId, uri: file.uri, name: fileNameOf(file.uri, deps.owner) }] : []))
  let progressWrite = Promise.resolve()
  const inFlight = new InFlightEffects()
  const output = await runActor({
    logic: compileJobMachine.provide({ actors: compileAttemptActors(deps, inFlight) }),
    input: { jobId: claim.jobId, attempt: claim.attempt, maxAttempts: snapshot.maxAttempts, files, callBudget: snapshot.callBudget, timeoutMs: snapshot.timeoutSeconds * 1000 },
    signal: deps.signal,
    stopEvent: (reason): CompileJobEvent =>
      reason === 'cancel' ? { type: 'job.cancel' } : { type: 'job.interrupt', reason: reason === 'claim_lost' ? 'claim_lost' : 'shutdown' },
    onEmitted: (event) => {
      if (event.type !== 'progress') return
      const { type: _, ...progress } = event
      progressWrite = progressWrite.then(() => recordProgress(db, { ...claim, progress }).catch(() => {}))
    },
  })
  await inFlight.settled() // a stopped stage's model call aborted, its CLI process tree gone
  await progressWrite
  if (output.status !== 'succeeded') await finishAttempt(db, { ...claim, output })
  return output
}
