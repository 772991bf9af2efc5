// The administration pages share one frame: the sections (ADMIN_SECTIONS: users, model
// connections, retrieval defaults) beside the section, as the settings pages do.
import type { Child } from 'hono/jsx'
import { ADMIN_SECTIONS, Layout, type NavLink } from '../layout.tsx'

export type AdminSectionId = (typeof ADMIN_SECTIONS)[number]['id']

export function AdminFrame({
  title,
  current,
  login,
  csrfToken,
  nav,
  children,
}: {
  title: string
  current: AdminSectionId
  login: string
  csrfToken: string | undefined
  /** The top bar's links (as on every page). */
  nav?: ReadonlyArray<NavLink> | undefined
  children?: Child
}) {
  return (
    <Layout title={title} login={login} csrfToken={csrfToken} nav={nav} bodyClass="page-settings page-admin">
      <div class="settings">
        <nav class="settings-nav" aria-label="Administration sections">
          <ul>
            {ADMIN_SECTIONS.map((section) => (
              <li>
                <a href={section.href} aria-current={section.id === current ? 'page' : undefined}>
                  {section.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="settings-body">{children}</div>
      </div>
    </Layout>
  )
}
