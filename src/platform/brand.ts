/**
 * callforge's mark, drawn here once: a handset inside a speech bubble, in the dashboard's blue.
 * The API docs (/docs) show it in their top bar and as their tab's icon instead of Swagger's.
 */
const MARK = `<rect x="2" y="2" width="44" height="44" rx="12" fill="#2563eb"/>
<path d="M17.5 13.5c1-.9 2.6-.8 3.4.3l2.3 3.2c.7 1 .6 2.3-.2 3.1l-1.6 1.6c1.2 2.6 3.3 4.8 5.9 6l1.6-1.6c.8-.8 2.2-.9 3.1-.2l3.2 2.3c1.1.8 1.2 2.4.3 3.4l-1.7 1.9c-1.3 1.4-3.4 1.9-5.2 1.1-6.1-2.6-11-7.5-13.6-13.6-.8-1.8-.3-3.9 1.1-5.2z" fill="#fff"/>`;

/** The icon alone (48×48), for the browser tab. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 48 48">${MARK}</svg>`;

/** The icon and the name, for the docs' top bar (white text: the bar is dark). */
export const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 210 48" width="210" height="48">${MARK}
<text x="58" y="33" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="26" font-weight="600" fill="#fff">callforge</text></svg>`;
