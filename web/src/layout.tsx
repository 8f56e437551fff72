import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { v1 } from '../../src/client/index.ts';
import { api, currentSession, endSession } from './session.ts';

type Me = { email: string; name: string; role: string };

/** Who is signed in, and the way out: the session key is revoked on the server too, not only forgotten here. */
function useSignedIn() {
  const { route } = useLocation();
  const [me, setMe] = useState<Me | undefined>();
  useEffect(() => {
    api()
      .call(v1.meta.getMe)
      .then((who) => setMe({ email: who.email, name: who.name, role: who.role }))
      .catch(() => setMe(undefined));
  }, []);
  const logout = async () => {
    const keyId = currentSession()
      ? await api()
          .call(v1.meta.getMe)
          .then((who) => who.key.id)
          .catch(() => undefined)
      : undefined;
    if (keyId && me)
      await api()
        .call(v1.users.revokeApiKey, { params: { email: me.email, keyId } })
        .catch(() => undefined);
    endSession();
    route('/login');
  };
  return { me, logout };
}

/** A link of the navigation, marked where the page is under it. */
function NavLink({ path, href, label }: { path: string; href: string; label: string }) {
  return (
    <a
      href={href}
      class={path === href || path.startsWith(`${href}/`) ? 'active' : undefined}
      aria-current={path === href ? 'page' : undefined}
    >
      {label}
    </a>
  );
}

/** The frame of every page behind the login: the navigation, who is signed in, and the way out. */
export function Layout({ children }: { children: ComponentChildren }) {
  const { path } = useLocation();
  const { me, logout } = useSignedIn();
  const link = (href: string, label: string) => <NavLink path={path} href={href} label={label} />;
  const manages = me?.role === 'admin' || me?.role === 'manager';
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <a class="brand" href="/">
          Attest
        </a>
        <nav aria-label="Main">
          {link('/projects', 'Projects')}
          {link('/devices', 'Devices')}
          {manages ? link('/admin/users', 'Users') : null}
          {me?.role === 'admin' ? link('/admin/audit', 'Audit log') : null}
          {link('/keys', 'API keys')}
          {link('/account', 'Account')}
        </nav>
        <div class="who">
          {me ? (
            <span title={me.email}>
              {me.name} <span class="muted">({me.role})</span>
            </span>
          ) : null}
          <button type="button" class="link-button" onClick={logout}>
            Log out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
