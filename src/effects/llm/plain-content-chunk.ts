// The fast path of the chat-completions stream parser: a chunk that carries nothing but text.
//
// Nearly every chunk of a streamed answer is one shape — an envelope of scalar fields, one choice,
// a delta holding a `content` string — and JSON.parse was ~60 % of the parser's CPU per delta
// (building five objects to read one string). `readPlainContentChunk` recognises that shape with
// one regular expression over the `data:` text and returns the content; anything else (another
// key, another value, whitespace between tokens, an error shape, a second choice, a finish
// reason, usage) returns undefined and takes the general path (JSON.parse + the chunk assembler).
//
// The contract, checked by a property test against the general path: when this returns a string,
// JSON.parse accepts the text and the chunk assembler would find exactly that content (emitting a
// delta when it is not empty) and nothing else — no error, no reasoning, no tool call, no finish
// reason, no usage. So the grammar below accepts only valid JSON (strings with legal escapes and
// no raw control characters, numbers without leading zeros) and only keys whose values the
// assembler ignores or that are fixed here:
//   envelope: id, model, system_fingerprint, service_tier, provider, obfuscation (string or null),
//             object ("chat.completion.chunk" only: "error" is an error shape), created (integer),
//             usage (null only); `choices` exactly once, holding exactly one choice
//   choice:   index (0 only), logprobs, finish_reason, native_finish_reason (null only); `delta`
//             exactly once
//   delta:    role ("assistant" only), reasoning_content / reasoning / refusal / tool_calls (null
//             only); `content` exactly once, a string
// Members may come in any order around the one required member; a repeated optional member is
// harmless (its value is fixed or ignored). The text is bounded before matching, so a hostile
// line costs at most one linear scan of MAX_FAST_PATH_CHARS.

/** Longer `data:` texts take the general path (the regular expression's backtracking stack stays small). */
export const MAX_FAST_PATH_CHARS = 8_192

const JSON_STRING = String.raw`"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"`
const STRING_OR_NULL = `(?:${JSON_STRING}|null)`
const ENVELOPE_MEMBER =
  `"(?:id|model|system_fingerprint|service_tier|provider|obfuscation)":${STRING_OR_NULL}` +
  `|"object":"chat\\.completion\\.chunk"|"created":(?:0|[1-9][0-9]*)|"usage":null`
const CHOICE_MEMBER = `"index":0|"logprobs":null|"(?:native_)?finish_reason":null`
const DELTA_MEMBER = `"role":"assistant"|"(?:reasoning_content|reasoning|refusal|tool_calls)":null`

/** `{ (member,)* required (,member)* }` for one object level. */
const objectWith = (member: string, required: string): string => `\\{(?:(?:${member}),)*${required}(?:,(?:${member}))*\\}`

const DELTA = objectWith(DELTA_MEMBER, `"content":(${JSON_STRING})`)
const CHOICE = objectWith(CHOICE_MEMBER, `"delta":${DELTA}`)
const PLAIN_CONTENT_CHUNK = new RegExp(`^${objectWith(ENVELOPE_MEMBER, `"choices":\\[${CHOICE}\\]`)}$`)

/**
 * The `content` of a chunk that carries nothing but text (possibly ""), or undefined when the
 * chunk must go through JSON.parse and the chunk assembler. `data` is the event's trimmed data.
 */
export function readPlainContentChunk(data: string): string | undefined {
  if (data.length > MAX_FAST_PATH_CHARS) return undefined
  const match = PLAIN_CONTENT_CHUNK.exec(data)
  if (match === null) return undefined
  const literal = match[1]!
  // Without a backslash the literal's inside is the string itself; escapes are decoded by JSON.parse
  // (the grammar has already checked they are legal).
  return literal.includes('\\') ? (JSON.parse(literal) as string) : literal.slice(1, -1)
}
