export declare const BUNDLE_DIR: string
export declare function buildServerBundle(options?: { outDir?: string }): Promise<{ path: string; bytes: number; modules: number; projectFiles: number }>
export declare function inspectBundle(options?: { outDir?: string }): { ok: true; path: string } | { ok: false; problem: string }
export declare function serverEntry(options?: { outDir?: string; env?: Record<string, string | undefined> }): { kind: 'bundle' | 'sources'; url: string; reason?: string }
