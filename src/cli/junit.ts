/**
 * A test suite's run as a JUnit XML report, the format CI systems read: one <testsuite> of one
 * <testcase> per scenario, a <failure> naming each failed assertion and why, <skipped> with its
 * reason. Written by hand (three elements; decision 0059): every text and attribute value goes
 * through `escapeXml`, which also drops the characters XML 1.0 cannot hold at all.
 */

/** The run as GET /test-suite-runs/{id} answers it, as far as the report needs. */
export interface RunReport {
  id: string;
  suiteId: string;
  agentVersion: number | null;
  results: {
    name: string;
    status: 'passed' | 'failed' | 'skipped';
    reason: string | null;
    durationMs: number;
    assertions: { assertion: { type: string }; verdict: string; why: string; reasoning?: string }[];
  }[];
}

// Characters outside XML 1.0's Char production (C0 controls but tab, newline and carriage return;
// lone surrogates; U+FFFE and U+FFFF): no escape can carry them, so they are left out.
const NOT_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

export function escapeXml(text: string): string {
  return text
    .replace(NOT_XML, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;')
    .replace(/\r/g, '&#13;')
    .replace(/\n/g, '&#10;')
    .replace(/\t/g, '&#9;');
}

const attributes = (values: Record<string, string | number>) =>
  Object.entries(values)
    .map(([name, value]) => ` ${name}="${escapeXml(String(value))}"`)
    .join('');

const seconds = (ms: number) => (ms / 1000).toFixed(3);

export function junitXml(suiteName: string, run: RunReport): string {
  const count = (status: string) => run.results.filter((result) => result.status === status).length;
  const totalMs = run.results.reduce((sum, result) => sum + result.durationMs, 0);
  const suite = `${suiteName}${run.agentVersion === null ? ' (live agent)' : ` (version ${run.agentVersion})`}`;
  const cases = run.results.map((result) => {
    const head = `  <testcase${attributes({ classname: suite, name: result.name, time: seconds(result.durationMs) })}`;
    if (result.status === 'passed') return `${head}/>`;
    if (result.status === 'skipped')
      return `${head}>\n    <skipped${attributes({ message: result.reason ?? 'nothing could be judged' })}/>\n  </testcase>`;
    const failed = result.assertions.filter((verdict) => verdict.verdict === 'failed');
    const message = result.reason ?? failed.map((verdict) => `${verdict.assertion.type}: ${verdict.why}`).join(' ');
    const body = [
      ...(result.reason ? [result.reason] : []),
      ...result.assertions.map(
        (verdict) =>
          `[${verdict.verdict}] ${JSON.stringify(verdict.assertion)}: ${verdict.why}${verdict.reasoning ? ` Reasoning: ${verdict.reasoning}` : ''}`,
      ),
    ].join('\n');
    return `${head}>\n    <failure${attributes({ message, type: 'AssertionFailed' })}>${escapeXml(body)}</failure>\n  </testcase>`;
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites${attributes({ name: 'callforge', tests: run.results.length, failures: count('failed'), skipped: count('skipped'), time: seconds(totalMs) })}>`,
    `<testsuite${attributes({ name: suite, id: run.id, tests: run.results.length, failures: count('failed'), errors: 0, skipped: count('skipped'), time: seconds(totalMs) })}>`,
    ...cases,
    '</testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}
