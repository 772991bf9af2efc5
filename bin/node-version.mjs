// The oldest Node that runs the sources: type stripping and module.registerHooks (22.18).
const MINIMUM = [22, 18]

/** Exits with a message saying what to run when this Node is older than MINIMUM. */
export function checkNodeVersion(version = process.versions.node) {
  const [major, minor] = version.split('.').map(Number)
  if (major > MINIMUM[0] || (major === MINIMUM[0] && minor >= MINIMUM[1])) return
  process.stderr.write(
    `knowagent needs Node ${MINIMUM.join('.')} or newer; this is Node ${version}.\n` +
      'Run it through npm (`npm start`, `npx knowagent …`), which uses the Node 24 the project installs, ' +
      'or put a newer Node first on the PATH.\n',
  )
  process.exit(1)
}
