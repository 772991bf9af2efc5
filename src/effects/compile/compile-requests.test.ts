import * as Effect from 'effect/Effect'
import { describe, expect, it } from 'vitest'
import { CompileRateLimited, ConflictingActiveJob, JobFinished, JobNotFound, JobNotRetryable } from './compile-errors.ts'
import { decodeQueueRequest, isJobId } from './compile-requests.ts'

const decoded = (request: unknown) => Effect.runPromise(Effect.result(decodeQueueRequest(request)))

describe('decodeQueueRequest: one decoding for every face', () => {
  it('gives the request in our words', async () => {
    const outcome = await decoded({ uris: ['kb://me/a.md'], channel: 'cli', profile_id: 'codex', model_id: 'o4', reasoning_level: 'low', call_budget: 3, timeout_seconds: 60, artifact_parent_uri: 'kb://me/out/', skill: '' })
    expect(outcome).toMatchObject({
      _tag: 'Success',
      success: { uris: ['kb://me/a.md'], channel: 'cli', profileId: 'codex', modelId: 'o4', reasoningLevel: 'low', callBudget: 3, timeoutSeconds: 60, artifactParentUri: 'kb://me/out/', skill: '' },
    })
  })

  it.each([
    [{ uris: [], channel: 'llm' }, /^invalid request: "uris": /],
    [{ uris: ['kb://me/a.md'], channel: 'shell' }, /^invalid request: "channel" must be one of "llm", "cli"$/],
    [{ uris: ['kb://me/a.md'], channel: 'llm', command: ['/bin/sh'] }, /^invalid request: "command" is not a field this request takes$/],
    [{ uris: ['kb://me/a.md'], channel: 'llm', profile_id: 'fake' }, /^"profile_id" is for channel "cli"/],
  ])('refuses %j with invalid_request, in words', async (request, words) => {
    const outcome = await decoded(request)
    expect(outcome._tag).toBe('Failure')
    if (outcome._tag !== 'Failure') return
    expect(outcome.failure).toMatchObject({ _tag: 'InvalidCompileRequest', code: 'invalid_request', status: 400 })
    expect(outcome.failure.message).toMatch(words)
  })
})

describe('the refusals carry their public face', () => {
  it.each([
    [new JobNotFound({ id: 'x'.repeat(100) }), 404, 'job_not_found', `no compile job ${'x'.repeat(64)}`],
    [new JobFinished({ id: 'j1', jobStatus: 'succeeded' }), 409, 'job_finished', 'job j1 is succeeded; only a queued or running job can be cancelled'],
    [new JobNotRetryable({ id: 'j1', jobStatus: 'running' }), 409, 'job_not_retryable', 'job j1 is running; only a failed or cancelled job can be retried'],
    [new JobNotRetryable({ id: 'j1', jobStatus: undefined }), 409, 'job_not_retryable', 'job j1 changed meanwhile; reload and try again'],
    [new CompileRateLimited({ limit: 3, retryAfterSeconds: 42 }), 429, 'rate_limited', 'at most 3 compile requests per minute; retry in 42 s'],
  ])('%s', (error, status, code, message) => {
    expect({ status: error.status, code: error.code, message: error.message }).toEqual({ status, code, message })
  })

  it('a rate limit says when to come back; a conflict says which job holds the files', () => {
    expect(new CompileRateLimited({ limit: 3, retryAfterSeconds: 42 }).headers).toEqual({ 'Retry-After': '42' })
    expect(new ConflictingActiveJob({ holderId: 'j2', configuration: undefined }).details).toEqual({ job_id: 'j2', configuration: undefined })
  })

  it('a job id is a UUID; anything else names no job', () => {
    expect(isJobId('00000000-0000-4000-8000-000000000000')).toBe(true)
    expect(isJobId('not-a-uuid')).toBe(false)
  })
})
