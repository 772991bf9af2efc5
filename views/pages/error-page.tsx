// A page that could not be shown, inside the app's layout: what was asked for, what happened, and
// a link back to the nearest folder that exists.
import { Layout, type NavLink } from '../layout.tsx'
import { NodeProblemPanel, problemTitle, type NodeProblem } from '../partials/content-pane.tsx'

export function ErrorPage({
  login,
  csrfToken,
  nav,
  problem,
}: {
  login: string | undefined
  csrfToken: string | undefined
  nav?: ReadonlyArray<NavLink> | undefined
  problem: NodeProblem
}) {
  return (
    <Layout title={problemTitle(problem.code)} login={login} csrfToken={csrfToken} nav={nav} bodyClass="page-problem">
      <section class="problem-page" aria-label="Problem">
        <NodeProblemPanel problem={problem} standalone />
      </section>
    </Layout>
  )
}
