// What a generated page is, shown above its preview (issue 35): a summary of which file, the
// overview or abstract of which folder, and — when out of date — what changed and a way to compile
// again (layer-freshness.ts decides; the route gives the words).
import { NodeLink } from './tree.tsx'

/** What a generated page is and whether what it was compiled from changed since (layer-freshness.ts). */
export interface GeneratedMark {
  readonly kind: 'summary' | 'overview' | 'abstract'
  /** A summary's source where it is now; null when it is gone; undefined when unknown or not a summary. */
  readonly source?: { readonly uri: string; readonly name: string } | null | undefined
  /** The folder it describes (overview, abstract) or whose compile writes it again (summary). */
  readonly folderUri?: string | undefined
  /** When its current version was written (ISO). */
  readonly writtenAt?: string | undefined
  /** What changed since, each as describeChanges says it (the last may say how many more); empty when it is up to date. */
  readonly changes: ReadonlyArray<string>
}

const folderName = (uri: string) => `${decodeURIComponent(uri.replace(/\/$/, '').split('/').pop() ?? uri)}/`

/** "Summary of a.md", "Overview of team/", and — when out of date — what changed and a way to compile again. */
export function GeneratedNote({ mark }: { mark: GeneratedMark }) {
  const stale = mark.changes.length > 0
  const what =
    mark.kind === 'summary' ? (
      <>
        Summary of{' '}
        {mark.source ? (
          <NodeLink uri={mark.source.uri} class="layer-source">
            {mark.source.name}
          </NodeLink>
        ) : mark.source === null ? (
          'a file that no longer exists'
        ) : (
          'a file'
        )}
      </>
    ) : (
      <>
        {mark.kind === 'overview' ? 'Overview (L1)' : 'Abstract (L0)'} of{' '}
        {mark.folderUri ? (
          <NodeLink uri={mark.folderUri} class="layer-source">
            {folderName(mark.folderUri)}
          </NodeLink>
        ) : (
          'its folder'
        )}
      </>
    )
  return (
    <div class={`layer-mark${stale ? ' stale' : ''}`} data-generated={mark.kind} data-stale={String(stale)}>
      <p>
        {what}, written by a compile job{mark.writtenAt ? ` on ${mark.writtenAt.slice(0, 16).replace('T', ' ')}` : ''}.{stale ? null : ' Up to date with its sources.'}
      </p>
      {stale ? (
        <>
          <p class="stale-mark" role="status">
            <strong>Out of date:</strong> its sources changed since it was written.
          </p>
          <ul class="layer-changes" aria-label="What changed since">
            {mark.changes.map((change) => (
              <li>{change}</li>
            ))}
          </ul>
          {mark.folderUri ? (
            <button type="button" class="small" data-open-compile data-compile-uri={mark.folderUri}>
              Compile {folderName(mark.folderUri)} again
            </button>
          ) : null}
        </>
      ) : null}
    </div>
  )
}
