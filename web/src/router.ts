import { useEffect, useState } from 'preact/hooks';

/** Hash routes (`#/campaigns/…`): every page is served by `/`, so no other server path exists. */
export const currentPath = () => location.hash.replace(/^#/, '') || '/';

export function navigate(path: string) {
  if (currentPath() !== path) location.hash = path;
}

export function useRoute(): string {
  const [path, setPath] = useState(currentPath());
  useEffect(() => {
    const onChange = () => setPath(currentPath());
    addEventListener('hashchange', onChange);
    // A page may have moved the hash while rendering, before this listener (the log-in page does).
    onChange();
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return path;
}

/** `/campaigns/:id` against `/campaigns/42` → `{id: '42'}`; null when it does not match. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/');
  const got = path.split('?')[0]!.split('/');
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i]!.startsWith(':')) params[want[i]!.slice(1)] = decodeURIComponent(got[i]!);
    else if (want[i] !== got[i]) return null;
  }
  return params;
}

/** `/login` or `/signup` when the path is one of them (with or without a query), else null. */
export function authPageOf(path: string): '/login' | '/signup' | null {
  const page = path.split('?')[0];
  return page === '/login' || page === '/signup' ? page : null;
}

/** The log-in page for a signed-out visitor who asked for `path`: it leads back there afterwards. */
export const loginPathFor = (path: string) => (path === '/' ? '/login' : `/login?next=${encodeURIComponent(path)}`);

/** Where a visitor goes once signed in: the page asked for before logging in (`?next=`), else the campaigns. */
export function pageAfterLogin(path: string): string {
  const next = new URLSearchParams(path.split('?')[1] ?? '').get('next');
  return next?.startsWith('/') && !authPageOf(next) ? next : '/campaigns';
}
