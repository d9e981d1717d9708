import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { CallScorecard, ListedRehearsal, Rehearsal } from '../../src/api-types.ts';
import type { PageOf } from '../../src/platform/pagination.ts';
import {
  apiInPage as apiInPageOf,
  middayTimeZone,
  NO_BROWSER,
  problemAt,
  screenshots as screenshotsOf,
  signUpInBrowser,
  sharedDashboardPage,
  SHORT_CALLS,
  takeRefusals as takeRefusalsOf,
  type Dashboard,
} from './harness.ts';

// Issue 41 in the browser: a campaign rehearsed from its page (who would be called when, the
// dialer's reasons, the scripted conversations, the follow-ups and the cost forecast, nothing
// dialled or sent), then the tenant's scorecard set on its page and the campaign's real calls
// scored: a failed one found with the filter and its verdicts on the call's page.
const DEADLINE_MS = 60_000;

let dashboard: Dashboard;
let page: Page;
let problems: string[];

// No LLM_API_URL: the retrieval agent converses, offline.
sharedDashboardPage(
  () => ({ env: SHORT_CALLS }),
  (shared) => {
    ({ dashboard, page, problems } = shared);
  },
);

const screenshots = (name: string, part?: Locator) => screenshotsOf(page, name, part);
const takeRefusals = (status: number) => takeRefusalsOf(problems, status);
const apiInPage = <T>(method: string, path: string, body?: unknown) => apiInPageOf<T>(page, method, path, body);
const texts = async (locator: Locator) => (await locator.allTextContents()).map((text) => text.trim());

/** A zone where it is about midnight now: a contact there waits for a 09:00–17:00 window. */
const midnightTimeZone = () => middayTimeZone(new Date(Date.now() + 12 * 3600_000));

describe.skipIf(NO_BROWSER)('campaign rehearsals and scorecards in the browser', () => {
  let campaignId: string;

  // A rehearsal on the job queue, then its report compared with the API's.
  it(
    'rehearses a campaign from its page and shows the real report: verdicts, reasons, conversations, follow-ups and the forecast',
    { timeout: 60_000 },
    async () => {
      await signUpInBrowser(page, dashboard.url, 'Rehearsing Clinics');
      // Set-up through the API: an agent that names the contact, its SMS follow-ups, a number, a list of four (one on the do-not-call list).
      const agent = await apiInPage<{ id: string }>('POST', '/agents', {
        name: 'Reminder desk',
        firstMessage: "Hello {{name|there}}, this is the clinic's automated assistant about your visit.",
      });
      await apiInPage('POST', '/sms-agent/campaigns', {
        agentId: agent.id,
        senderNumber: '+14155550199',
        senderProvider: 'SIMULATOR',
        templates: [
          { callStatus: 'ANSWERED', messageBody: 'Thanks {{name|there}}, see you at the clinic.' },
          { callStatus: 'UNANSWERED', messageBody: 'We tried to call you about your visit, {{name|there}}.' },
        ],
      });
      const number = await apiInPage<{ id: string }>('POST', '/voice-numbers', { phoneNumber: '+14155550142', provider: 'SIMULATOR' });
      await apiInPage('POST', '/dnc', { phoneNumber: '+14155550302', reason: 'Asked by e-mail' });
      const list = await apiInPage<{ id: string }>('POST', '/contact-lists', { name: 'Visits' });
      const midday = middayTimeZone();
      await apiInPage('POST', `/contact-lists/${list.id}/contacts/bulk`, {
        contacts: [
          { name: 'Ana', phoneNumber: '+14155550301', timezone: midday },
          { name: 'Ben', phoneNumber: '+14155550302', timezone: midday },
          { phoneNumber: '+14155550303', timezone: midday },
          { name: 'Dee', phoneNumber: '+14155550304', timezone: midnightTimeZone() },
        ],
      });
      const campaign = await apiInPage<{ id: string }>('POST', '/campaigns', {
        name: 'Visit reminders',
        agentId: agent.id,
        voiceNumberId: number.id,
        contactListId: list.id,
        timezone: midday,
        windowTimeZone: 'CONTACT',
        callWindowStart: '09:00',
        callWindowEnd: '17:00',
        callDays: [1, 2, 3, 4, 5, 6, 7],
        maxAttempts: 1,
        callingRules: false,
        simulatorScript: ['Hello?', 'Yes, I am coming.'],
      });
      campaignId = campaign.id;

      await page.goto(`${dashboard.url}/#/campaigns/${campaignId}`);
      await page.getByRole('heading', { level: 1, name: 'Visit reminders' }).waitFor();
      const section = page.locator('section.rehearsals');
      await section.getByText('Not rehearsed yet.').waitFor();
      await page.getByRole('button', { name: 'Rehearse', exact: true }).click();
      const report = page.getByTestId('rehearsal-report');
      await report.getByTestId('nothing-dialled').waitFor({ timeout: DEADLINE_MS });
      expect(await report.getByTestId('nothing-dialled').textContent()).toMatch(/^Nothing was dialled or sent/);

      // The figures are the API's own.
      const listed = await apiInPage<PageOf<ListedRehearsal>>('GET', `/campaigns/${campaignId}/rehearsals`);
      expect(listed.total).toBe(1);
      const rehearsal = await apiInPage<Rehearsal>('GET', `/campaigns/${campaignId}/rehearsals/${listed.data[0]!.id}`);
      expect(rehearsal.summary).toEqual({
        contacts: 4,
        wouldBeCalled: 3,
        byVerdict: { dial: 2, wait: 1, skip: 1 },
        byReason: { dnc: 1, outside_window: 1 },
      });
      const card = (label: string) => report.locator('.counts > div', { has: page.getByText(label, { exact: true }) }).locator('dd');
      await expect(card('Contacts rehearsed').textContent()).resolves.toBe('4');
      await expect(card('Would be called').textContent()).resolves.toBe('3');
      await expect(card('Called now').textContent()).resolves.toBe('2');
      await expect(card('Waiting for their window').textContent()).resolves.toBe('1');
      await expect(card('Skipped').textContent()).resolves.toBe('1');
      expect(await card('Forecast cost').textContent()).toContain(rehearsal.costTotal);
      expect(await card('Billed for the rehearsal').textContent()).toContain('0.0000');
      for (const note of rehearsal.notes) await report.getByText(note, { exact: true }).waitFor();

      const reasons = report.getByRole('table', { name: 'Reasons' });
      for (const [reason, count] of Object.entries(rehearsal.summary!.byReason)) {
        const contact = rehearsal.contacts.find((found) => found.reason === reason)!;
        await expect(texts(reasons.getByRole('row', { name: new RegExp(`^${reason}`) }).getByRole('cell'))).resolves.toEqual([
          contact.verdict === 'skip' ? 'Skipped' : 'Would wait',
          contact.why,
          String(count),
        ]);
      }

      // Each contact: its verdict, the dialer's sentence and its first call in its own time.
      const contacts = report.getByRole('table', { name: "Contacts, in the list's order" });
      await expect(texts(contacts.getByRole('rowheader'))).resolves.toEqual(['Ana', 'Ben', '+14155550303', 'Dee']);
      for (const contact of rehearsal.contacts) {
        const cells = await texts(
          contacts
            .getByRole('row', { name: new RegExp(`^${(contact.name ?? contact.phoneNumber).replace('+', '\\+')}`) })
            .getByRole('cell'),
        );
        expect(cells.slice(0, 3)).toEqual([
          contact.phoneNumber,
          { dial: 'Would be called', wait: 'Would wait', skip: 'Skipped' }[contact.verdict],
          contact.why,
        ]);
        if (!contact.firstCallAt) expect(cells[3]).toBe('Not called');
        for (const local of contact.firstCallAt?.local ?? []) expect(cells[3]).toContain(`${local.time.slice(11, 16)} ${local.timeZone}`);
      }

      // A conversation, opened: the scripted contact's lines, the agent's, the follow-ups and the forecast with its basis.
      const ana = rehearsal.contacts.find((contact) => contact.name === 'Ana')!;
      const details = report.locator('details.rehearsed', { hasText: 'Ana (+14155550301)' });
      await details.locator('summary').click();
      const transcript = details.getByRole('list', { name: 'Rehearsed conversation with Ana (+14155550301)' });
      await expect(transcript.locator('> li').count()).resolves.toBe(ana.conversation!.transcript.length);
      for (const turn of ana.conversation!.transcript.filter((found) => found.role !== 'tool'))
        await transcript.getByText(turn.text, { exact: true }).first().waitFor();
      expect(ana.conversation!.transcript[0]!.text).toContain('Hello Ana');
      for (const message of [...ana.followUp!.answered.messages, ...ana.followUp!.unanswered.messages])
        await details.getByText(message.body!, { exact: false }).waitFor();
      expect(ana.followUp!.answered.messages.map((message) => message.body)).toEqual(['Thanks Ana, see you at the clinic.']);
      const forecast = details.getByRole('table', { name: /^Cost forecast/ });
      const rows = await forecast.locator('tbody tr').all();
      const basis = await Promise.all(rows.map(async (row) => (await row.locator('td').last().textContent())?.trim()));
      expect(basis).toEqual([
        ana.cost!.basis.telephony,
        ana.cost!.basis.stt,
        ana.cost!.basis.tts,
        ana.cost!.basis.llm,
        ana.cost!.basis.platformFee,
      ]);
      expect(await forecast.locator('tfoot').textContent()).toContain(ana.cost!.cost.total);
      await screenshots('campaign-rehearsal', section);

      // A smaller sample: listed first, and still nothing was dialled or sent.
      await page.getByLabel('Contacts to rehearse (optional)', { exact: true }).fill('2');
      await page.getByRole('button', { name: 'Rehearse', exact: true }).click();
      const history = section.getByRole('table', { name: 'Rehearsals, newest first' });
      await expect
        .poll(async () => (await texts(history.locator('tbody tr td:nth-of-type(2)'))).join(), { timeout: DEADLINE_MS })
        .toBe('2,4');
      const calls = await apiInPage<PageOf<unknown>>('GET', `/call-logs?campaignId=${campaignId}`);
      const messages = await apiInPage<PageOf<unknown>>('GET', '/messages');
      expect([calls.total, messages.total]).toEqual([0, 0]);
      expect(problems).toEqual([]);
    },
  );

  // Two simulated calls dialled, talked and scored on the job queue before the pages show them.
  it(
    "sets the tenant's checks with their problems at the field, scores the campaign's calls and finds the failed one",
    { timeout: 120_000 },
    async () => {
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Scorecard' }).click();
      await page.getByRole('heading', { level: 1, name: 'Scorecard' }).waitFor();
      await page.getByText('No checks set: calls are not scored.', { exact: false }).waitFor();
      const checks = page.getByLabel('Checks (JSON)', { exact: true });
      await checks.fill('[{"name": ');
      await page.getByRole('button', { name: 'Save checks' }).click();
      await expect.poll(() => problemAt(page, 'Checks (JSON)')).toMatch(/^is not JSON/);

      const greets = { name: 'Greets by name', assertion: { type: 'never_said', phrase: 'Hello there' } };
      await checks.fill(JSON.stringify([greets, greets]));
      await page.getByRole('button', { name: 'Save checks' }).click();
      await expect.poll(() => problemAt(page, 'Checks (JSON)')).toBe('checks/1/name: repeats the name of another check');
      expect(takeRefusals(400)).toBe(1);

      const set = [{ name: 'AI disclosed', assertion: { type: 'said', phrase: 'automated assistant' } }, greets];
      await checks.fill(JSON.stringify(set));
      await page.getByRole('button', { name: 'Save checks' }).click();
      await page.getByText(/^2 checks, set /).waitFor();
      await page.getByText('No call has been scored yet.').waitFor();

      // The campaign runs: Ana and the contact without a name are called now (Dee waits for her window).
      await page.goto(`${dashboard.url}/#/campaigns/${campaignId}`);
      await page.getByRole('button', { name: 'Start', exact: true }).click();
      await expect
        .poll(async () => (await apiInPage<PageOf<CallScorecard>>('GET', '/call-scorecards')).total, { timeout: DEADLINE_MS })
        .toBe(2);
      const failed = await apiInPage<PageOf<CallScorecard>>('GET', '/call-scorecards?passed=false');
      expect(failed.total).toBe(1);
      const failure = failed.data[0]!;
      expect(failure.checks.map((check) => [check.name, check.verdict])).toEqual([
        ['AI disclosed', 'passed'],
        ['Greets by name', 'failed'],
      ]);

      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Scorecard' }).click();
      const table = page.locator('table.call-scorecards');
      await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
      await expect(texts(table.locator('tbody tr td:nth-of-type(1)'))).resolves.toEqual(expect.arrayContaining(['Passed', 'Failed']));
      await screenshots('scorecard');

      await page.getByLabel('Show', { exact: true }).selectOption('failed');
      await expect.poll(() => table.locator('tbody tr').count()).toBe(1);
      const row = table.locator('tbody tr');
      await expect(row.locator('td').first().textContent()).resolves.toBe('Failed');
      for (const check of failure.checks) await row.getByText(check.why, { exact: true }).waitFor();

      await row.getByRole('link').click();
      await page.waitForURL(new RegExp(`#/calls/${failure.callId}$`));
      const verdicts = page.getByTestId('call-scorecard');
      await verdicts.waitFor({ timeout: DEADLINE_MS });
      await expect(verdicts.locator('p .status').textContent()).resolves.toBe('Failed');
      await expect(texts(verdicts.locator('.verdicts > li'))).resolves.toEqual(
        failure.checks.map(
          (check) =>
            `${check.verdict === 'passed' ? 'Passed' : 'Failed'} ${check.name}: ${check.assertion.type === 'said' ? 'said' : 'never said'} “${(check.assertion as { phrase: string }).phrase}”: ${check.why}`,
        ),
      );
      await screenshots('call-scorecard', page.locator('section', { has: page.getByRole('heading', { name: 'Scorecard' }) }));
      expect(problems).toEqual([]);
    },
  );
});
