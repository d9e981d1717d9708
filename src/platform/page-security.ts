import type { FastifyReply } from 'fastify';

/**
 * The headers of every page this service serves to a browser (the dashboard at `/`, the API docs
 * at `/docs`), built in this one place. A page may run only scripts and styles served from this
 * origin, talk only to this origin, be framed by no one, and submit forms only here; the same
 * base policy for both, each page adding only what it needs.
 */
type Directives = Record<string, string[]>;

const BASE: Directives = {
  'default-src': ["'self'"],
  'script-src': ["'self'"],
  'script-src-attr': ["'none'"],
  'style-src': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
  'object-src': ["'none'"],
  'frame-ancestors': ["'none'"],
  'base-uri': ["'none'"],
  'form-action': ["'self'"],
};

function policy(extra: Directives): string {
  return Object.entries({ ...BASE, ...extra })
    .map(([name, sources]) => `${name} ${sources.join(' ')}`)
    .join('; ');
}

/** The dashboard plays a call's recording from a blob URL of the file it fetched. */
export const DASHBOARD_POLICY = policy({ 'media-src': ["'self'", 'blob:'] });

/**
 * Swagger UI: its own bundled scripts and styles only (no validator badge, no remote fonts), and
 * the one inline stylesheet its top bar's logo (an SVG) carries, allowed by its hash alone. A
 * Swagger UI upgrade that changes it is caught by the browser test of /docs.
 */
const SWAGGER_LOGO_STYLE = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='";
export const DOCS_POLICY = policy({ 'style-src': ["'self'", SWAGGER_LOGO_STYLE] });

/** Sets a page's Content-Security-Policy and its companions (no MIME sniffing, no Referer to other sites). */
export function pageHeaders(reply: FastifyReply, contentSecurityPolicy: string): void {
  reply
    .header('content-security-policy', contentSecurityPolicy)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer');
}
