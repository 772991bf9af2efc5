/** The V8 flags the server runs with (`npm start`, the benchmark's knowagent). */
export declare const SERVER_NODE_FLAGS: ReadonlyArray<string>
