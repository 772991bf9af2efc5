// A count with its noun: "1 file", "3 files", "2 entries".
export const plural = (count: number, one: string, many = `${one}s`): string => `${count} ${count === 1 ? one : many}`
