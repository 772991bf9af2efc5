// Model-based tests replay each path once, by whichever test asks first: a machine's coverage test
// awaits every path's replay itself, so it depends neither on the path tests running before it nor
// on them running at all (a `-t` filter).
export function replayOnce<Path extends object, Result>(run: (path: Path) => Promise<Result>): (path: Path) => Promise<Result> {
  const replays = new WeakMap<Path, Promise<Result>>()
  return (path) => {
    const known = replays.get(path)
    if (known) return known
    const started = run(path)
    replays.set(path, started)
    return started
  }
}
