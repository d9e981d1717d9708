import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { session } from './api.ts';
import { useProfile } from './profile.ts';
import { formatMoney } from './ui.tsx';

export const NAV: [string, string][] = [
  ['/campaigns', 'Campaigns'],
  ['/calls', 'Calls'],
  ['/contacts', 'Contacts'],
  ['/agents', 'Agents & numbers'],
  ['/messaging', 'Messaging'],
  ['/knowledge', 'Knowledge'],
  ['/do-not-call', 'Do not call'],
  ['/consents', 'Consents'],
  ['/compliance-records', 'Compliance records'],
  ['/scorecard', 'Scorecard'],
  ['/analytics', 'Call results'],
  ['/usage', 'Usage'],
  ['/keys', 'API keys'],
  ['/webhooks', 'Webhooks'],
  ['/integrations', 'Integrations'],
];

/** Header (account, wallet, log out), navigation, and the page; focus moves to the page title on navigation, to a detail page too. */
export function Layout({ path, children }: { path: string; children: ComponentChildren }) {
  const { profile } = useProfile();
  const [menuOpen, setMenuOpen] = useState(false);
  const main = useRef<HTMLElement>(null);
  const section = '/' + (path.split('/')[1] ?? '');
  // A page is its path without the query: filters in the link are not a new page.
  const page = path.split('?')[0];
  const first = useRef(true);
  useEffect(() => {
    setMenuOpen(false);
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.querySelector<HTMLElement>('h1')?.focus();
  }, [page]);
  const low = profile && Number(profile.wallet.balance) < Number(profile.wallet.lowBalanceThreshold);
  return (
    <div class="shell">
      <a class="skip-link" href="#main" onClick={(event) => (event.preventDefault(), main.current?.focus())}>
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">callforge</span>
        <button type="button" class="menu-toggle" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}>
          Menu
        </button>
        {profile && (
          <div class="account" aria-label="Account">
            <span class="tenant">{profile.tenant.name}</span>
            {profile.user && <span class="user">{profile.user.email}</span>}
            <span
              class={low ? 'wallet low' : 'wallet'}
              data-testid="wallet-balance"
              title={low ? 'Below the low-balance threshold' : undefined}
            >
              Balance {formatMoney(profile.wallet.balance, profile.wallet.currency)}
            </span>
            <button type="button" onClick={() => void session.logOut()}>
              Log out
            </button>
          </div>
        )}
      </header>
      <nav id="nav" class={menuOpen ? 'nav open' : 'nav'} aria-label="Main">
        <ul>
          {NAV.map(([href, label]) => (
            <li key={href}>
              <a href={`#${href}`} aria-current={section === href ? 'page' : undefined}>
                {label}
              </a>
            </li>
          ))}
          <li class="nav-external">
            {/* The API's interactive reference (Swagger UI), served beside the dashboard. */}
            <a href="/docs/" target="_blank" rel="noopener">
              API docs
            </a>
          </li>
        </ul>
      </nav>
      <main id="main" ref={main} tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
