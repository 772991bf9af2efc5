// The administration pages share one frame: the settings pages' frame with the administration's
// sections (ADMIN_SECTIONS: users, model connections, retrieval defaults).
import type { Child } from 'hono/jsx'
import { ADMIN_SECTIONS, type NavLink } from '../layout.tsx'
import { SettingsFrame } from './settings.tsx'

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
    <SettingsFrame title={title} current={current} login={login} csrfToken={csrfToken} nav={nav} sections={ADMIN_SECTIONS} sectionsLabel="Administration sections" bodyClass="page-settings page-admin">
      {children}
    </SettingsFrame>
  )
}
