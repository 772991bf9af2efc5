export function newMessageKey(): string
