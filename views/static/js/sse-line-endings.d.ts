export function lineEndingNormalizer(): TransformStream<Uint8Array, Uint8Array>
export function fetchEventStream(input: RequestInfo | URL, init?: RequestInit): Promise<Response>
