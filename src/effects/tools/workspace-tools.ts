// The scoped workspace tools (SPEC §4): ls, read, search, status — one definition each. Every call
// re-resolves its target for the caller within the selected scope; failures are tool errors (data
// for the model), never exceptions.
import type { AnyToolDefinition } from './tool-definition.ts'
import { lsTool } from './ls.tool.ts'
import { readTool } from './read.tool.ts'
import { searchTool } from './search.tool.ts'
import { statusTool } from './status.tool.ts'

export { lsTool, readTool, searchTool, statusTool }

export const WORKSPACE_TOOLS: ReadonlyArray<AnyToolDefinition> = [lsTool, readTool, searchTool, statusTool]
