// The V8 flags the server runs with: `npm start` passes them (package.json's start script; a test
// keeps the two equal), and the benchmark runs knowagent with them, so it measures what users run.
//
// A young generation of 4 MB semi-spaces instead of V8's default (up to 16 MB each, grown while
// modules load and streams run): ~30 MB less resident at idle and ~150 MB less at 100 concurrent
// streams, for somewhat more frequent scavenges (see docs/performance.md).
export const SERVER_NODE_FLAGS = ['--max-semi-space-size=4']
