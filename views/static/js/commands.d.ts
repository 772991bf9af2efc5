export type ParsedCommand =
  | { kind: 'run'; command: 'ls' | 'read' | 'search' | 'status'; path?: string; query?: string; offset?: string }
  | { kind: 'dialog' }
  | { kind: 'compile' }
  | { kind: 'error'; message: string }
export function parseCommand(text: string): ParsedCommand
export function initCommands(options: { chat: unknown }): void
