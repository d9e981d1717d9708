import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The README and docs/ stand alone: a reader of the repository can follow every link and every
 * reference in them. Nothing points outside it (no sibling folder, no document only the authors
 * had, no numbered issue or section of one).
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .map((name) => join('docs', name)),
];

/** References to documents outside the repository: a spec's numbered sections, an issue number, a sibling checkout. */
const OUTSIDE_REFERENCES = [/\bseed §/i, /\bcontract §/i, /\bissues? #?\d/i, /\.\.\/shared\b/, /\bseed-api\.md\b/, /\bcontract\.md\b/];
/** Web addresses a reader may open: the service on their own machine. */
const LOCAL_URL = /^https?:\/\/(localhost|127\.0\.0\.1)([:/]|$)/;

function linksOf(text: string): string[] {
  const inline = [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => match[1]!);
  const auto = [...text.matchAll(/<(https?:\/\/[^>]+)>/g)].map((match) => match[1]!);
  return [...inline, ...auto];
}

/** The text of a Markdown document without its fenced code blocks (a `#` there is no heading). */
function withoutCode(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** The anchors GitHub gives a document's headings: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of withoutCode(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const rendered = match[1]!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text
      .replace(/<[^>]+>/g, '') // inline HTML
      .replace(/[`*~]/g, ''); // emphasis and code marks (an underscore stays, as in snake_case names)
    const slug = rendered
      .toLowerCase()
      .trim()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

describe('README.md and docs/', () => {
  it.each(DOCUMENTS)('%s cites nothing outside the repository', (document) => {
    const text = readFileSync(join(ROOT, document), 'utf8');
    for (const pattern of OUTSIDE_REFERENCES) expect(text, `${document} matches ${pattern}`).not.toMatch(pattern);
  });

  it.each(DOCUMENTS)('%s links only to files of the repository or to the local service', (document) => {
    const text = readFileSync(join(ROOT, document), 'utf8');
    for (const link of linksOf(text)) {
      if (/^[a-z]+:/i.test(link)) {
        expect(link, `${document} links to ${link}`).toMatch(LOCAL_URL);
        continue;
      }
      const path = link.split('#')[0]!;
      if (path === '') continue; // an anchor in the same document
      const target = resolve(dirname(join(ROOT, document)), decodeURIComponent(path));
      expect(relative(ROOT, target).startsWith('..'), `${document} links outside the repository: ${link}`).toBe(false);
      expect(existsSync(target), `${document} links to a missing file: ${link}`).toBe(true);
    }
  });

  it.each(DOCUMENTS)('%s links only to headings that exist', (document) => {
    const text = readFileSync(join(ROOT, document), 'utf8');
    for (const link of linksOf(withoutCode(text))) {
      if (/^[a-z]+:/i.test(link) || !link.includes('#')) continue;
      const [path, anchor] = link.split('#') as [string, string];
      const target = path === '' ? join(ROOT, document) : resolve(dirname(join(ROOT, document)), decodeURIComponent(path));
      if (!target.endsWith('.md') || !existsSync(target)) continue; // a missing file is the test above's
      const anchors = anchorsOf(readFileSync(target, 'utf8'));
      expect(anchors.has(decodeURIComponent(anchor)), `${document} links to a missing heading: ${link}`).toBe(true);
    }
  });

  it('the check itself catches what it is meant to', () => {
    const caught = (text: string) => OUTSIDE_REFERENCES.some((pattern) => pattern.test(text));
    expect(caught('as seed §4.3 says')).toBe(true);
    expect(caught('(contract §11)')).toBe(true);
    expect(caught('## Dashboard (issue 8)')).toBe(true);
    expect(caught('see ../shared/spec')).toBe(true);
    expect(caught('see docs/decisions/0027-conversations.md')).toBe(false);
    expect(linksOf('[a](../shared/x.md) <https://example.org/>')).toEqual(['../shared/x.md', 'https://example.org/']);
    const anchors = anchorsOf("# Title\n\n## The agent's voice (`voicePipeline`)\n\n```sh\n# not a heading\n```\n\n## Title\n");
    expect([...anchors]).toEqual(['title', 'the-agents-voice-voicepipeline', 'title-1']);
    expect(anchorsOf('## Scale-out: N API (`npm run bench:scale-out`)').has('scale-out-n-api-npm-run-benchscale-out')).toBe(true);
  });
});
