// A value that did not decode, in words a person reads: each field and what it must be. Shared by
// the HTTP decoders (src/http/decode-request.ts) and the use cases that decode their own input
// (src/effects/compile/compile-requests.ts).
import * as SchemaIssue from 'effect/SchemaIssue'

const standardIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** A field's path as a person reads it: `messages[0].content`. */
function fieldName(path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined): string | undefined {
  if (!path || path.length === 0) return undefined
  return path
    .map((part) => (typeof part === 'object' && part !== null ? part.key : part))
    .reduce<string>((name, key) => (typeof key === 'number' ? `${name}[${key}]` : name === '' ? String(key) : `${name}.${String(key)}`), '')
}

/** One issue in words: `"notice" must be one of "uploaded", "token_revoked"` rather than the schema's `Expected "uploaded" | … at ["notice"]`. */
function issueInWords(name: string | undefined, message: string): string {
  const field = name === undefined ? 'the request' : JSON.stringify(name)
  if (message === 'Missing key') return `${field} is required`
  if (message === 'Expected no excess property') return `${field} is not a field this request takes`
  const choices = /^Expected ((?:"[^"]*"(?: \| )?)+)$/.exec(message)
  if (choices) return `${field} must be one of ${choices[1]!.split(' | ').join(', ')}`
  return `${field}: ${message.charAt(0).toLowerCase()}${message.slice(1)}`
}

/** What did not decode, in words: each field and what it must be (at most five). */
export function describeDecodeError(error: unknown): string {
  const issue = (error as { readonly issue?: SchemaIssue.Issue } | null)?.issue
  if (issue === undefined) return (error as Error).message.replace(/\n\s*/g, ' ')
  const { issues } = standardIssues(issue)
  const words = issues.slice(0, 5).map(({ path, message }) => issueInWords(fieldName(path), message.replace(/\n\s*/g, ' ')))
  return `${words.join('; ')}${issues.length > 5 ? `; and ${issues.length - 5} more` : ''}`
}
