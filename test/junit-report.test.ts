import { describe, expect, it } from 'vitest';
import { parseXml } from './xml-parser.ts';
import { escapeXml, junitXml, type RunReport } from '../src/cli/junit.ts';

/** Parses `xml` with a real XML parser, failing on any error or warning it reports. */
function parse(xml: string) {
  const { document, problems } = parseXml(xml);
  expect(problems).toEqual([]);
  return document;
}

// Every character a scenario's name, an assertion or a model's reasoning may hold.
const NASTY = `Tom & "Jerry" <b>'s</b> ]]> \u0000\u0007\u001b bell, tab\there, line\nbreak, \uFFFE and a lone \uD800 surrogate, 😀 stays`;

const run: RunReport = {
  id: 'run-1',
  suiteId: 'suite-1',
  agentVersion: 3,
  results: [
    { name: 'passes', status: 'passed', reason: null, durationMs: 1234, assertions: [] },
    {
      name: NASTY,
      status: 'failed',
      reason: null,
      durationMs: 20,
      assertions: [
        { assertion: { type: 'said' }, verdict: 'failed', why: `No turn of the agent says "${NASTY}".` },
        { assertion: { type: 'rubric' }, verdict: 'passed', why: 'The model judged the rubric met.', reasoning: NASTY },
      ],
    },
    { name: 'needs a model', status: 'skipped', reason: 'skipped: a persona needs a model <none>', durationMs: 0, assertions: [] },
  ],
};

describe('the JUnit report', () => {
  it('is well-formed XML whatever the names and reasons hold, and says them back', () => {
    const xml = junitXml('Front <desk> & co', run);
    // The parser is lenient about these two; checked on the text itself.
    // eslint-disable-next-line no-control-regex -- the characters XML 1.0 cannot hold are what is looked for
    expect(xml).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
    expect(xml).not.toMatch(/&(?!(amp|lt|gt|quot|apos|#\d+);)/);
    const document = parse(xml);
    const suite = document.getElementsByTagName('testsuite')[0]!;
    expect(suite.getAttribute('name')).toBe('Front <desk> & co (version 3)');
    expect([suite.getAttribute('tests'), suite.getAttribute('failures'), suite.getAttribute('skipped')]).toEqual(['3', '1', '1']);
    const cases = document.getElementsByTagName('testcase');
    expect(cases.length).toBe(3);
    expect(cases[0]!.getAttribute('time')).toBe('1.234');
    // What XML cannot hold is dropped; everything else comes back as it was, newline and tab included.
    // eslint-disable-next-line no-control-regex -- the control characters put in NASTY, taken out again
    const kept = NASTY.replace(/[\u0000\u0007\u001b\uFFFE\uD800]/g, '');
    expect(cases[1]!.getAttribute('name')).toBe(kept);
    const failure = cases[1]!.getElementsByTagName('failure')[0]!;
    expect(failure.getAttribute('message')).toBe(`said: No turn of the agent says "${kept}".`);
    expect(failure.textContent).toContain(`Reasoning: ${kept}`);
    expect(cases[2]!.getElementsByTagName('skipped')[0]!.getAttribute('message')).toBe('skipped: a persona needs a model <none>');
  });

  it('escapes the five XML characters and the whitespace attributes would otherwise lose', () => {
    expect(escapeXml(`<a href="x">'&'</a>\n\t\r`)).toBe('&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;&#10;&#9;&#13;');
    expect(escapeXml('\u0001\uFFFF\u{1F600}')).toBe('\u{1F600}');
  });
});
