// The model gateway uses the machine's data types (defined once in src/machines/turn-types.ts, so
// `knowagent/machines` embeds without effect code). This file fails to type-check if they part.
import { expectTypeOf, it } from 'vitest'
import type * as Llm from '../../src/effects/llm/model.ts'
import type * as Machines from '../../src/machines/index.ts'

it('uses the same message, tool and result shapes as the model contract', () => {
  expectTypeOf<Machines.ChatMessage>().toEqualTypeOf<Llm.ChatMessage>()
  expectTypeOf<Machines.ToolCallMessagePart>().toEqualTypeOf<Llm.ToolCallMessagePart>()
  expectTypeOf<Machines.ToolSchema>().toEqualTypeOf<Llm.ToolSchema>()
  expectTypeOf<Machines.AssembledToolCall>().toEqualTypeOf<Llm.AssembledToolCall>()
  expectTypeOf<Machines.Usage>().toEqualTypeOf<Llm.Usage>()
  expectTypeOf<Machines.FinishReason>().toEqualTypeOf<Llm.FinishReason>()
  expectTypeOf<Machines.ModelResult>().toEqualTypeOf<Llm.ModelResult>()
  expectTypeOf<Llm.ModelInfo>().toExtend<Machines.TurnModelInfo>()
})
