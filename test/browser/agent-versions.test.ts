import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import {
  apiInPage as apiInPageOf,
  middayTimeZone,
  NO_BROWSER,
  problemAt as problemAtIn,
  relaxStatutoryRules,
  screenshots as screenshotsOf,
  selectOptionByText,
  signUpInBrowser,
  sharedDashboardPage,
  SHORT_CALLS,
  takeRefusals as takeRefusalsOf,
  type Dashboard,
} from './harness.ts';

// Issue 41 in the browser: an agent's versions (publish, diff with the current settings, restore),
// a test suite written offline against the retrieval agent (no model), run against two versions
// with its verdicts and pass rates side by side, and a campaign splitting its contacts between
// versions, whose page shows the experiment's arms.
const DEADLINE_MS = 30_000;
const AGENT = 'Versioned front desk';

let dashboard: Dashboard;
let page: Page;
let problems: string[];

// No LLM_API_URL: the agent answers through the retrieval agent, and a suite runs offline.
sharedDashboardPage(
  () => ({ env: SHORT_CALLS }),
  (shared) => {
    ({ dashboard, page, problems } = shared);
  },
);

const problemAt = (label: string) => problemAtIn(page, label);
const screenshots = (name: string, part?: Locator) => screenshotsOf(page, name, part);
const takeRefusals = (status: number) => takeRefusalsOf(problems, status);
const apiInPage = <T>(method: string, path: string, body: unknown) => apiInPageOf<T>(page, method, path, body);

const versionsTable = () => page.getByRole('table', { name: 'Published versions, newest first' });

async function setFirstMessage(text: string) {
  await page.getByLabel('First message (optional)', { exact: true }).fill(text);
  await page.getByRole('button', { name: 'Save agent' }).click();
  await page.getByText('Saved.', { exact: true }).waitFor();
}

async function publish(note: string, version: number) {
  await page.getByLabel('What changed (optional)', { exact: true }).fill(note);
  await page.getByRole('button', { name: 'Publish version' }).click();
  await versionsTable()
    .getByRole('rowheader', { name: `Version ${version}`, exact: true })
    .waitFor();
}

describe.skipIf(NO_BROWSER)('agent versions, test suites and experiments in the browser', () => {
  let agentUrl: string;

  it('publishes a version, lists it, diffs it against an edit field by field and restores it', async () => {
    await signUpInBrowser(page, dashboard.url, 'Versioned Clinics');
    await page.goto(`${dashboard.url}/#/agents`);
    await page.getByLabel('Agent name').fill(AGENT);
    await page.getByRole('button', { name: /Create agent/ }).click();
    await page.getByRole('link', { name: AGENT, exact: true }).first().click();
    await page.getByRole('heading', { level: 1, name: AGENT }).waitFor();
    agentUrl = page.url();
    await page.getByText('No version published yet: calls run the agent as it is.').waitFor();

    await setFirstMessage('Hello from version one.');
    await publish('First greeting', 1);
    await expect(versionsTable().getByRole('cell', { name: 'First greeting' }).count()).resolves.toBe(1);
    // The same config again is refused with the API's sentence.
    await page.getByRole('button', { name: 'Publish version' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/version 1/i);
    expect(takeRefusals(409)).toBe(1);

    await setFirstMessage('Hello from version two.');
    await page.getByRole('button', { name: 'Compare version 1 with now' }).click();
    const diff = page.locator('#version-diff');
    const row = diff.getByRole('row', { name: /First message/ });
    await row.waitFor();
    await expect(row.getByRole('cell').allTextContents()).resolves.toEqual(['Hello from version two.', 'Hello from version one.']);
    // Only what differs is listed.
    await expect(diff.getByRole('row').count()).resolves.toBe(2);
    await screenshots('agent-versions', page.locator('section.agent-versions'));

    await publish('Second greeting', 2);
    const listed = await versionsTable().getByRole('rowheader').allTextContents();
    expect(listed).toEqual(['Version 2', 'Version 1']);

    await page.getByRole('button', { name: 'Restore version 1' }).click();
    const dialog = page.getByRole('dialog', { name: 'Restore version 1?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Yes, restore' }).click();
    await page.getByRole('status').filter({ hasText: "The agent's settings are version 1's again" }).waitFor();
    await expect(page.getByLabel('First message (optional)', { exact: true }).inputValue()).resolves.toBe('Hello from version one.');
    // Restoring publishes nothing.
    await expect(versionsTable().getByRole('rowheader').count()).resolves.toBe(2);
    expect(problems).toEqual([]);
  });

  it('writes a suite offline with its problems shown at the field, runs it against two versions and shows verdicts and pass rates side by side', async () => {
    await page.getByRole('button', { name: 'New test suite' }).click();
    await page.getByLabel('Suite name', { exact: true }).fill('Greeting');
    const scenarios = page.getByLabel('Scenarios (JSON)', { exact: true });

    await scenarios.fill('[{"name": "greets"');
    await page.getByRole('button', { name: 'Create suite' }).click();
    await expect.poll(() => problemAt('Scenarios (JSON)')).toMatch(/^is not JSON/);

    // A scenario with no caller: the API names it.
    await scenarios.fill(JSON.stringify([{ name: 'greets', assertions: [{ type: 'said', phrase: 'version one' }] }]));
    await page.getByRole('button', { name: 'Create suite' }).click();
    await expect
      .poll(() => problemAt('Scenarios (JSON)'))
      .toBe('scenarios/0: needs exactly one caller: a script (lines) or a persona (a model plays it)');
    expect(takeRefusals(400)).toBe(1);

    await scenarios.fill(
      JSON.stringify([
        {
          name: 'greets as version one',
          script: ['Hello?'],
          assertions: [
            { type: 'said', phrase: 'version one' },
            { type: 'rubric', rubric: 'The agent is polite.' },
          ],
        },
      ]),
    );
    await page.getByRole('button', { name: 'Create suite' }).click();
    await page.getByRole('heading', { level: 3, name: 'Greeting' }).waitFor();
    await page.getByText('Not run yet.').waitFor();

    const run = page.getByTestId('suite-run');
    await selectOptionByText(page, 'Run against', /^Version 1$/);
    await page.getByRole('button', { name: 'Run suite' }).click();
    await run.getByText('Passed Version 1:').waitFor({ timeout: DEADLINE_MS });
    const runText = (await run.textContent()) ?? '';
    expect(runText).toMatch(/1 passed, 0 failed, 0 skipped of 1; pass rate 100%/);
    // Each assertion's verdict and its sentence; the rubric needs a model, and says so.
    expect(runText).toContain('said “version one”: The agent said "version one" in turn');
    expect(runText).toMatch(/Skipped met the rubric “The agent is polite\.”: skipped: needs a model/);

    // Through the voice pipeline: this agent cannot hear (no speech-to-text ships offline), and the page says what to set.
    const throughVoice = page.getByLabel(/Through the voice pipeline/);
    await throughVoice.check();
    await page.getByRole('button', { name: 'Run suite' }).click();
    await page
      .getByText(/has no speech-to-text to hear the caller with, and none ships offline; choose one in its Voice settings/)
      .waitFor();
    expect(takeRefusals(409)).toBe(1);
    await throughVoice.uncheck();

    await selectOptionByText(page, 'Run against', /^Version 2$/);
    await page.getByRole('button', { name: 'Run suite' }).click();
    await run.getByText('Failed Version 2:').waitFor({ timeout: DEADLINE_MS });
    expect(await run.textContent()).toMatch(/0 passed, 1 failed, 0 skipped of 1; pass rate 0%/);

    const rates = page.getByRole('table', { name: 'Pass rates per version' });
    await expect
      .poll(async () => rates.getByRole('columnheader').allTextContents(), { timeout: DEADLINE_MS })
      .toEqual(['Scenario', 'Version 2', 'Version 1']);
    await expect
      .poll(async () =>
        rates
          .getByRole('row', { name: /^Pass rate/ })
          .getByRole('cell')
          .allTextContents(),
      )
      .toEqual(['0%', '100%']);
    await expect
      .poll(async () =>
        rates
          .getByRole('row', { name: /greets as version one/ })
          .getByRole('cell')
          .allTextContents(),
      )
      .toEqual(['Failed', 'Passed']);
    await screenshots('agent-suites', page.locator('section.agent-suites'));
    expect(problems).toEqual([]);
  });

  it(
    "splits a campaign's contacts between two versions, refusing a repeated arm at its field, and shows the arms as it runs",
    { timeout: 120_000 },
    async () => {
      // Set-up through the API: a simulated number and six contacts, called whatever the hour.
      expect(await relaxStatutoryRules(page)).toBe(200);
      await apiInPage('POST', '/voice-numbers', { phoneNumber: '+14155550142', provider: 'SIMULATOR' });
      const list = await apiInPage<{ id: string }>('POST', '/contact-lists', { name: 'Experiment patients' });
      const contacts = Array.from({ length: 6 }, (_, index) => ({ name: `Patient ${index + 1}`, phoneNumber: `+1415555020${index}` }));
      await apiInPage('POST', `/contact-lists/${list.id}/contacts/bulk`, { contacts });

      await page.goto(`${dashboard.url}/#/campaigns/new`);
      await page.getByRole('heading', { level: 1, name: 'New campaign' }).waitFor();
      await page.getByLabel('Campaign name', { exact: true }).fill('Greeting experiment');
      await selectOptionByText(page, 'Agent', new RegExp(AGENT));
      await selectOptionByText(page, 'Voice number', /\+14155550142/);
      await selectOptionByText(page, 'Contact list', /Experiment patients \(6 contacts\)/);
      await page.getByLabel('Time zone').fill(middayTimeZone());
      await page.getByLabel('Call window start').fill('00:00');
      await page.getByLabel('Call window end').fill('23:59');
      for (const day of await page.getByRole('group', { name: 'Call days' }).getByRole('checkbox').all()) await day.check();
      await page.getByLabel('Attempts per contact').fill('1');
      await page.getByLabel('The calls run', { exact: true }).selectOption('experiment');
      await selectOptionByText(page, 'Arm 1: version', /^Version 1: First greeting$/);
      await selectOptionByText(page, 'Arm 2: version', /^Version 1: First greeting$/);
      await page.getByLabel('Arm 2: weight', { exact: true }).fill('3');
      await page.getByRole('button', { name: 'Save campaign' }).click();
      await expect.poll(() => problemAt('Arm 2: version')).toMatch(/./);
      expect(takeRefusals(400)).toBe(1);

      await selectOptionByText(page, 'Arm 2: version', /^Version 2: Second greeting$/);
      await page.getByRole('button', { name: 'Save campaign' }).click();
      await page.getByRole('heading', { level: 1, name: 'Greeting experiment' }).waitFor();
      await page.getByText('Experiment: Version 1 (weight 1), Version 2 (weight 3)').waitFor();

      const arms = page.locator('table.experiment-arms');
      await arms.waitFor();
      await expect(arms.getByRole('rowheader').allTextContents()).resolves.toEqual(['Version 1', 'Version 2']);
      await expect(
        arms
          .getByRole('row', { name: /^Version 2/ })
          .getByRole('cell')
          .first()
          .textContent(),
      ).resolves.toBe('3');

      // Started, every contact is given an arm and called once with its version.
      await page.getByRole('button', { name: 'Start', exact: true }).click();
      await page.getByRole('main').locator('.status', { hasText: 'Completed' }).first().waitFor({ timeout: 90_000 });
      const sum = async (header: string) => {
        const index = (await arms.getByRole('columnheader').allTextContents()).indexOf(header);
        const cells = await Promise.all(
          (await arms.locator('tbody tr').all()).map((row) => row.locator('th, td').nth(index).textContent()),
        );
        return cells.reduce((total, cell) => total + Number(cell), 0);
      };
      await expect.poll(() => sum('Contacts'), { timeout: DEADLINE_MS }).toBe(6);
      await expect.poll(() => sum('Calls'), { timeout: DEADLINE_MS }).toBe(6);
      // Each contact says which version called it, as many as its arm's row counts.
      const contactRows = page.getByRole('table').filter({ hasText: 'Patient 1' });
      for (const [row, version] of [
        [0, 'Version 1'],
        [1, 'Version 2'],
      ] as const) {
        const counted = await arms.locator('tbody tr').nth(row).locator('td').nth(1).textContent();
        await expect(contactRows.getByRole('cell', { name: version, exact: true }).count()).resolves.toBe(Number(counted));
      }
      // The verdict is the API's own sentence.
      const campaignId = new URL(page.url()).hash.split('/')[2]!;
      const report = await page.evaluate<{ comparisons: { message: string }[] }>(
        `fetch('/api/v1/analytics/campaigns/${campaignId}/experiment').then((response) => response.json())`,
      );
      expect(report.comparisons).toHaveLength(1);
      await page.locator('.experiment-verdicts').getByText(report.comparisons[0]!.message, { exact: true }).waitFor();
      await screenshots('campaign-experiment');

      // Back on the agent's page, the suites and versions are still there.
      await page.goto(agentUrl);
      await versionsTable().waitFor();
      expect(problems).toEqual([]);
    },
  );
});
