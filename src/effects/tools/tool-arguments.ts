// Argument Schemas shared by the workspace tools. Optional arguments are `optionalKey` so the
// derived JSON Schema says "may be absent", not "may be null".
import * as Schema from 'effect/Schema'

export const ToolUri = Schema.String.check(Schema.isMaxLength(4096))
export const ToolOffset = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
