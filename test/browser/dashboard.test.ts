import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardAssets } from '../../src/dashboard/assets.ts';
import { appendRecording } from '../../src/modules/calls/service.ts';
import { tenantCtx } from '../../src/platform/context.ts';
import { startFakeElevenLabs } from '../../src/providers/elevenlabs/fake-server.ts';
import { createCampaign, voiceSetup } from '../voice-fixtures.ts';
import {
  createAgentAndSimulatorNumber,
  DESKTOP,
  middayTimeZone,
  NO_BROWSER,
  optionAppears as optionAppearsIn,
  PHONE,
  problemAt as problemAtIn,
  relaxStatutoryRules,
  SCREENSHOTS,
  selectOptionByText,
  sharedDashboardPage,
  signUpInBrowser,
  watchProblems,
  type Dashboard,
} from './harness.ts';

// Issue 8: the dashboard in a real browser (Debian's chromium through playwright-core) on a fresh
// service running API, workers and dialer: sign up, create a key and see it once, upload a CSV
// with two bad rows, create and start a SIMULATOR campaign, watch calls appear, hang one up,
// revoke the key and see the API refuse it. Every page is saved at desktop and phone width.
const DEADLINE_MS = 30_000;

let dashboard: Dashboard;
let page: Page;
let problems: string[];
let elevenLabs: Awaited<ReturnType<typeof startFakeElevenLabs>>;

// ElevenLabs is a local fake speaking its wire format (its voice list, its key header).
beforeAll(async () => {
  if (NO_BROWSER) return;
  elevenLabs = await startFakeElevenLabs();
});
afterAll(async () => {
  await elevenLabs?.close();
});
// Calls last long enough to be hung up; the dialer looks for work often.
sharedDashboardPage(
  () => ({
    env: { SIMULATOR_RING_SECONDS: '1', SIMULATOR_TALK_SECONDS: '120', DIALER_TICK_MS: '100', ELEVENLABS_API_URL: elevenLabs.url },
  }),
  (shared) => {
    ({ dashboard, page, problems } = shared);
  },
);

async function screenshots(name: string) {
  await page.waitForLoadState('networkidle');
  await page.screenshot({ path: new URL(`${name}-desktop.png`, SCREENSHOTS).pathname, fullPage: true });
  await page.setViewportSize(PHONE);
  await page.screenshot({ path: new URL(`${name}-phone.png`, SCREENSHOTS).pathname, fullPage: true });
  await page.setViewportSize(DESKTOP);
}

/** Every form control on the page has an accessible name (a label or aria-label). */
async function expectLabelledControls() {
  // Browser-side code as text: this project's TypeScript has no DOM types outside web/.
  const unlabelled = await page.evaluate<string[]>(`[...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
    .filter((control) => control.labels.length === 0 && !control.getAttribute('aria-label') && !control.getAttribute('aria-labelledby'))
    .map((control) => control.outerHTML.slice(0, 120))`);
  expect(unlabelled).toEqual([]);
}

async function open(path: string, heading: string | RegExp) {
  await page.goto(`${dashboard.url}/#${path}`);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

const selectByText = (label: string, text: RegExp) => selectOptionByText(page, label, text);
const optionAppears = (label: string, text: RegExp) => optionAppearsIn(page, label, text);

const problemAt = (label: string) => problemAtIn(page, label);

const api = (path: string, key: string) => fetch(`${dashboard.url}/api/v1${path}`, { headers: { authorization: `Bearer ${key}` } });

describe.skipIf(NO_BROWSER)('the dashboard in a browser', () => {
  let apiKey: string;
  let owner: { email: string; password: string };

  it('signs up and shows the account and wallet balance', async () => {
    await page.goto(`${dashboard.url}/#/login`);
    await screenshots('login');
    owner = await signUpInBrowser(page, dashboard.url, 'Acme Clinics');
    await expect(page.getByTestId('wallet-balance').textContent()).resolves.toMatch(/Balance/);
    await expect(page.locator('.tenant').textContent()).resolves.toBe('Acme Clinics');

    // Log out, a wrong password shows the API's sentence, the right one signs in again.
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Log in to callforge' }).waitFor();
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Invalid email or password.');
    // The browser logs that refused request (a 401) as a console error: expected, and only that.
    expect(problems).toEqual([expect.stringContaining('status of 401')]);
    problems.length = 0;
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByTestId('wallet-balance').waitFor();
  });

  it('opens the page a deep link asked for once its visitor has logged in, and links to the API docs', async () => {
    const visitor = await dashboard.browser.newPage({ viewport: DESKTOP });
    await visitor.goto(`${dashboard.url}/#/knowledge`);
    await visitor.getByRole('heading', { level: 1, name: 'Log in to callforge' }).waitFor();
    expect(new URL(visitor.url()).hash).toBe('#/login?next=%2Fknowledge');
    await visitor.getByLabel('Email').fill(owner.email);
    await visitor.getByLabel('Password').fill(owner.password);
    await visitor.getByRole('button', { name: 'Log in' }).click();
    await visitor.getByRole('heading', { level: 1, name: 'Knowledge bases' }).waitFor();
    await visitor.waitForURL((url) => url.hash === '#/knowledge');
    const docs = visitor.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API docs' });
    expect(await docs.getAttribute('href')).toBe('/docs/');
    await visitor.close();
  });

  it('keeps the session where page scripts cannot read it: an httpOnly cookie, nothing in localStorage', async () => {
    const jar = await page.context().cookies();
    const sessionCookie = jar.find((cookie) => cookie.name === 'callforge_session');
    expect(sessionCookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    const token = sessionCookie!.value;
    expect(token.length).toBeGreaterThan(20);
    // Browser-side code as text: what any script of the page (or one injected into it) could read.
    const readable = await page.evaluate<{ storage: string[]; cookies: string }>(`({
      storage: [...Array(localStorage.length).keys()].map((i) => localStorage.key(i) + '=' + localStorage.getItem(localStorage.key(i))),
      cookies: document.cookie,
    })`);
    expect(readable.storage.filter((entry) => entry.includes(token) || /session/i.test(entry))).toEqual([]);
    expect(readable.cookies).not.toContain(token);
    expect(readable.cookies).not.toContain('callforge_session');
    // What the page can read is the CSRF token it echoes, which is not the session.
    expect(readable.cookies).toMatch(/callforge_csrf=/);
    // Changing something through the page still works (it sends that token): covered by every form below.
  });

  it(
    'serves the API docs under their Content-Security-Policy: Swagger UI renders and nothing is refused',
    { timeout: 90_000 },
    async () => {
      const docs = await dashboard.browser.newPage({ viewport: DESKTOP });
      // Chromium reports every load or script the policy refuses as a console error.
      const docsProblems = watchProblems(docs);
      const response = await docs.goto(`${dashboard.url}/docs/`);
      expect(response!.headers()['content-security-policy']).toContain("script-src 'self'");
      await docs.getByRole('heading', { name: /callforge API/ }).waitFor();
      await docs.locator('.topbar img[src^="data:image/svg+xml"]').first().waitFor(); // callforge's logo
      await docs
        .getByRole('button', { name: /Authorize/ })
        .first()
        .waitFor();
      await docs.waitForLoadState('networkidle');
      expect(docsProblems).toEqual([]);
      await docs.close();
    },
  );

  it('creates an API key, shows it once with a copy button and a warning, and lists only its prefix', async () => {
    await open('/keys', 'API keys');
    await page.getByLabel('Name').fill('CRM sync');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByTestId('new-key');
    apiKey = (await shown.textContent())!;
    expect(apiKey).toMatch(/^aok_/);
    await expect(page.getByText('it is shown only this once').count()).resolves.toBe(1);
    await expect(page.getByRole('button', { name: 'Copy key' }).count()).resolves.toBe(1);
    expect((await api('/profile', apiKey)).status).toBe(200);
    await screenshots('api-keys');
    await page.getByRole('button', { name: 'I have stored it safely' }).click();
    await page.reload();
    await page.getByRole('cell', { name: 'CRM sync', exact: true }).waitFor();
    expect(await page.content()).not.toContain(apiKey);
    await expect(page.getByRole('cell', { name: `${apiKey.slice(0, 12)}…` }).count()).resolves.toBe(1);
    await expectLabelledControls();
  });

  it('creates an agent and a SIMULATOR voice number', async () => {
    await open('/agents', /Agents/);
    await createAgentAndSimulatorNumber(page, 'Reminder agent', '+14155550100');
    await expectLabelledControls();
    // The lists come first, within the first screen; the long form below them, a button away.
    const top = async (name: string) => (await page.getByRole('heading', { level: 2, name, exact: true }).boundingBox())!.y;
    await page.evaluate('scrollTo(0, 0)');
    expect(await top('Agents')).toBeLessThan(DESKTOP.height);
    expect(await top('Voice numbers')).toBeLessThan(await top('Create an agent'));
    await page.getByRole('button', { name: 'New agent' }).click();
    await expect.poll(() => page.evaluate('document.activeElement.labels[0].textContent')).toBe('Agent name');
    await screenshots('agents');
  });

  it("gives an agent its voice: eSpeak and a voice from the provider's list; the API's refusals show at their fields", async () => {
    type Saved = { name: string; language: string; stt: unknown; tts: { provider: string }; voice: string };
    const savedAgent = async (name: string) =>
      ((await (await api('/agents?limit=200', apiKey)).json()) as { data: Saved[] }).data.find((agent) => agent.name === name);
    await open('/agents', /Agents/);
    await page.getByLabel('Agent name').fill('Voz de Lucía');
    await page.getByLabel('Language', { exact: true }).fill('es');
    await expect(page.getByLabel('Text-to-speech provider').inputValue()).resolves.toBe('ESPEAK');
    // eSpeak NG's voices for Spanish, asked of the API; the search narrows the select to one.
    await optionAppears('Voice', /Spanish \(Latin America\)/);
    await page.getByLabel('Search voices').fill('latin');
    await expect
      .poll(() => page.getByLabel('Voice', { exact: true }).locator('option').allTextContents())
      .toEqual([expect.stringMatching(/^Default/), expect.stringMatching(/^Spanish \(Latin America\) · es-419, es-MX$/)]);
    await selectByText('Voice', /Latin America/);

    // A recogniser with no key anywhere: the API's sentence at the speech-to-text field.
    await page.getByLabel('Speech-to-text provider').selectOption('DEEPGRAM');
    await page.getByRole('button', { name: /Create agent/ }).click();
    await expect.poll(() => problemAt('Speech-to-text provider')).toMatch(/No DEEPGRAM server is configured.*deepgram integration/);
    expect(problems).toEqual([expect.stringContaining('status of 400')]);
    problems.length = 0;
    expect(await savedAgent('Voz de Lucía')).toBeUndefined();

    // A language eSpeak has no voice for: none listed, and the API says so at the voice.
    await page.getByLabel('Speech-to-text provider').selectOption({ index: 0 });
    await page.getByLabel('Search voices').fill('');
    await page.getByLabel('Language', { exact: true }).fill('tlh');
    await page.getByText('eSpeak NG has 0 voices for tlh.').waitFor();
    // The chosen voice stays (the API takes any voice of the provider), marked as not listed; the default is asked for.
    await optionAppears('Voice', /^roa\/es-419 \(not listed for tlh\)$/);
    await page.getByLabel('Voice', { exact: true }).selectOption({ index: 0 });
    await page.getByRole('button', { name: /Create agent/ }).click();
    await expect.poll(() => problemAt('Voice')).toMatch(/eSpeak NG has no voice for tlh/);
    expect(problems).toEqual([expect.stringContaining('status of 400')]);
    problems.length = 0;

    await page.getByLabel('Language', { exact: true }).fill('es');
    await optionAppears('Voice', /Latin America/);
    await selectByText('Voice', /Latin America/);
    await expectLabelledControls();
    await page.getByRole('button', { name: /Create agent/ }).click();
    await page.getByRole('cell', { name: 'Voz de Lucía', exact: true }).waitFor();
    expect(await savedAgent('Voz de Lucía')).toMatchObject({ language: 'es', stt: null, tts: { provider: 'ESPEAK' }, voice: 'roa/es-419' });
  });

  it('connects Deepgram and ElevenLabs (keys never shown again); the agent then speaks with an ElevenLabs voice', async () => {
    await open('/integrations', /Integrations/);
    const deepgramKey = 'dg-test-key-0123456789abcdef';
    for (const [title, key] of [
      ['Deepgram', deepgramKey],
      ['ElevenLabs', elevenLabs.apiKey],
    ] as const) {
      const card = page.getByRole('region', { name: title, exact: true });
      await card.getByLabel('API key').fill(key);
      await card.getByRole('button', { name: `Connect ${title}` }).click();
      await card.getByText('Set (hidden)').waitFor();
      await expect(card.getByLabel('API key').inputValue()).resolves.toBe('');
    }
    await page.reload();
    await page.getByRole('heading', { level: 1, name: /Integrations/ }).waitFor();
    const content = await page.content();
    expect(content).not.toContain(deepgramKey);
    expect(content).not.toContain(elevenLabs.apiKey);

    // On the agent's page another provider lists its own voices, through the tenant's key.
    await open('/agents', /Agents/);
    await page.getByRole('link', { name: 'Voz de Lucía' }).first().click();
    await page.getByRole('heading', { level: 1, name: 'Voz de Lucía' }).waitFor();
    await expect(page.getByLabel('Voice', { exact: true }).inputValue()).resolves.toBe('roa/es-419');
    await page.getByLabel('Text-to-speech provider').selectOption('ELEVENLABS');
    await optionAppears('Voice', /^Josh/);
    // Rachel speaks only English: not listed for es.
    await expect(page.getByLabel('Voice', { exact: true }).locator('option').allTextContents()).resolves.not.toContainEqual(
      expect.stringMatching(/Rachel/),
    );
    expect(elevenLabs.voiceListQueries.length).toBeGreaterThan(0);
    await selectByText('Voice', /^Josh/);
    await page.getByLabel('Speech-to-text provider').selectOption('DEEPGRAM');
    // Their words end the caller's turn unless the agent is told otherwise.
    await expect(page.getByLabel("End of the caller's turn").inputValue()).resolves.toBe('WORDS');
    await page.getByLabel("End of the caller's turn").selectOption('SILENCE');
    await page.getByRole('button', { name: 'Save agent' }).click();
    await page.getByText('Saved.', { exact: true }).waitFor();
    const agents = (await (await api('/agents?limit=200', apiKey)).json()) as { data: { name: string }[] };
    expect(agents.data.find((agent) => agent.name === 'Voz de Lucía')).toMatchObject({
      stt: { provider: 'DEEPGRAM', endOfTurn: 'SILENCE' },
      tts: { provider: 'ELEVENLABS' },
      voice: 'TxGEqnHWrfWFTfGW9XjX',
    });
  });

  it("voices an agent's Twilio calls through ConversationRelay: Twilio's Deepgram and ElevenLabs, refusals at their fields", async () => {
    await open('/agents', /Agents/);
    await page.getByLabel('Agent name').fill('Relay desk');
    await page.getByLabel('Twilio calls').selectOption('CONVERSATION_RELAY');
    // Twilio's ConversationRelay runs its own Deepgram and ElevenLabs: the form takes them.
    await expect(page.getByLabel('Speech-to-text provider').inputValue()).resolves.toBe('DEEPGRAM');
    await expect(page.getByLabel('Text-to-speech provider').inputValue()).resolves.toBe('ELEVENLABS');
    await expect(page.getByLabel('Text-to-speech model (optional)').count()).resolves.toBe(0);
    await expectLabelledControls();
    await screenshots('agent-conversation-relay');
    await page.getByLabel('Text-to-speech provider').selectOption('ESPEAK');
    await page.getByRole('button', { name: /Create agent/ }).click();
    await expect
      .poll(() => problemAt('Text-to-speech provider'))
      .toMatch(/^With voicePipeline CONVERSATION_RELAY, Twilio speaks with its own ElevenLabs/);
    expect(problems).toEqual([expect.stringContaining('status of 400')]);
    problems.length = 0;
    await page.getByLabel('Text-to-speech provider').selectOption('ELEVENLABS');
    await page.getByRole('button', { name: /Create agent/ }).click();
    await page.getByRole('cell', { name: 'Relay desk', exact: true }).waitFor();
    const agents = (await (await api('/agents?limit=200', apiKey)).json()) as { data: { name: string }[] };
    expect(agents.data.find((agent) => agent.name === 'Relay desk')).toMatchObject({
      voicePipeline: 'CONVERSATION_RELAY',
      stt: { provider: 'DEEPGRAM' },
      tts: { provider: 'ELEVENLABS' },
      voice: null,
    });
  });

  it('uploads a CSV with a progress indicator and reports its two bad rows', async () => {
    await open('/contacts', 'Contacts');
    await page.getByLabel('List name').fill('Spring reminders');
    await page.getByRole('button', { name: /Create list/ }).click();
    // The new list opens.
    await page.getByRole('heading', { level: 1, name: /Spring reminders/ }).waitFor();
    const csv = [
      'phone,name',
      '+14155552671,Ada',
      '+14155552672,Grace',
      'not-a-number,Bad',
      '+14155552673,Linus',
      '+14155552671,Ada again',
      '+14155552674,Barbara',
    ].join('\n');
    await page.getByLabel(/CSV file/).setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await page.getByRole('button', { name: /Upload/ }).click();
    const report = page.getByRole('region', { name: 'Upload result' });
    await report.waitFor();
    await expect(report.textContent()).resolves.toMatch(/4\D+imported/i);
    const rows = report.getByRole('row');
    await expect(rows.count()).resolves.toBe(3); // the header and the two bad rows
    await expect(report.getByRole('cell', { name: 'Invalid phone number' }).count()).resolves.toBe(1);
    await expect(report.getByRole('cell', { name: 'Duplicate phone number in this list' }).count()).resolves.toBe(1);
    await expect(page.locator('progress').count()).resolves.toBeGreaterThan(0);
    await expectLabelledControls();
    await screenshots('contact-list');
    await open('/contacts', 'Contacts');
    await screenshots('contacts');
  });

  it('creates and starts a SIMULATOR campaign, shows its calls live and hangs one up', { timeout: 120_000 }, async () => {
    await open('/campaigns/new', /campaign/i);
    // The contacts are Californian: at night there, the statutory hours would hold every call back.
    expect(await relaxStatutoryRules(page)).toBe(200);
    await page.getByLabel('Campaign name').fill('Spring reminder calls');
    await selectByText('Agent', /Reminder agent/);
    await selectByText('Voice number', /\+14155550100/);
    await selectByText('Contact list', /Spring reminders/);
    // Any day, nearly all day, in a zone where it is midday: the campaign dials whenever the test runs.
    await page.getByLabel('Time zone').fill(middayTimeZone());
    await page.getByLabel('Call window start').fill('00:00');
    await page.getByLabel('Call window end').fill('23:59');
    for (const day of await page.getByRole('group', { name: 'Call days' }).getByRole('checkbox').all()) await day.check();
    // The campaign's policies, each an API field: retry rules, follow-ups, answering machines, caller IDs, the simulator's script.
    await page.getByLabel('Busy: call again').selectOption('never');
    await page.getByLabel('Unanswered: call again').selectOption('minutes');
    await page.getByLabel('Unanswered: minutes').fill('5');
    await page.getByLabel('Follow-up messages').selectOption('FINAL_OUTCOME');
    await page.getByLabel('Answering machines').selectOption('LEAVE_VOICEMAIL');
    await page.getByLabel('Voicemail message').waitFor();
    await page.getByLabel('Answering machines').selectOption('off');
    await page.getByRole('group', { name: 'Caller-ID pool' }).waitFor();
    await page.getByLabel("Simulated contact's script (optional)").fill('Hello?\nYes, that works for me.');
    await expectLabelledControls();
    await screenshots('campaign-edit');
    await page.getByRole('button', { name: 'Save campaign' }).click();
    await page.getByRole('heading', { level: 1, name: /Spring reminder calls/ }).waitFor();
    const saved = (await (await api('/campaigns?limit=200', apiKey)).json()) as { data: Record<string, unknown>[] };
    expect(saved.data.find((campaign) => campaign.name === 'Spring reminder calls')).toMatchObject({
      retryRules: { BUSY: { never: true }, UNANSWERED: { afterMinutes: 5 } },
      postCallMessages: 'FINAL_OUTCOME',
      answeringMachine: null,
      simulatorScript: ['Hello?', 'Yes, that works for me.'],
    });
    await page.getByRole('button', { name: 'Start' }).click();
    const hangUp = page.getByRole('button', { name: /Hang up/ }).first();
    await hangUp.waitFor({ timeout: DEADLINE_MS });
    await screenshots('campaign-live');
    const liveBefore = await page.getByRole('button', { name: /Hang up/ }).count();
    await hangUp.click();
    await expect.poll(() => page.getByRole('button', { name: /Hang up/ }).count(), { timeout: DEADLINE_MS }).toBeLessThan(liveBefore);
    const calls = (await (await api('/call-logs?limit=200', apiKey)).json()) as { data: { status: string }[] };
    expect(calls.data.some((call) => call.status === 'ENDED')).toBe(true);
    await open('/campaigns', 'Campaigns');
    await screenshots('campaigns');
    await open('/calls', 'Calls');
    await page
      .getByRole('cell', { name: /^(Answered|No answer|Busy|Failed)/ })
      .first()
      .waitFor({ timeout: DEADLINE_MS });
    await screenshots('calls');
  });

  // The first source of a process waits for the embedding workers to load the model: on a busy machine, past 30 s.
  it('adds a text source to a knowledge base, watches it become READY and queries it', { timeout: 180_000 }, async () => {
    await open('/knowledge', /Knowledge/);
    await page.getByLabel('Name').fill('Clinic answers');
    await page.getByRole('button', { name: 'Create knowledge base' }).click();
    await page.getByRole('link', { name: 'Clinic answers' }).click();
    await page.getByRole('heading', { level: 1, name: /Clinic answers/ }).waitFor();
    await page.getByLabel('Source name').fill('Opening hours');
    const text = page.getByLabel('Text', { exact: true });
    // The text box takes the form's width (it was 140 px wide, its default of 20 columns).
    expect((await text.boundingBox())!.width).toBeGreaterThan(600);
    await text.fill('The clinic opens at 8:00 on weekdays. Parking is free behind the building.');
    await page.getByRole('button', { name: /Add source/ }).click();
    await page.getByRole('cell', { name: 'READY' }).waitFor({ timeout: 170_000 });
    await page.getByLabel('Query', { exact: true }).fill('Where do I park?');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('Parking is free behind the building.').last().waitFor();
    // Its strength said with its score and the best possible, not as a share of the page's best result.
    await page.getByText(/^(Strong|Partial) match · score 0\.\d\d of 0\.33$/).waitFor();
    await expectLabelledControls();
    await screenshots('knowledge-base');
  });

  it(
    'creates an agent on that knowledge, shows its secret once, and talks to it: the retrieval agent answers, at no cost',
    { timeout: 120_000 },
    async () => {
      await open('/agents', /Agents/);
      await page.getByLabel('Agent name').fill('Clinic helper');
      await page
        .getByRole('group', { name: /Knowledge bases/ })
        .getByLabel('Clinic answers')
        .check();
      // The API's and the dashboard's own problems show on the fields they concern.
      await page.getByLabel('System prompt (optional)').fill('You answer patients of {{clinic}}.');
      await page.getByRole('button', { name: /Create agent/ }).click();
      await page.getByText('{{clinic}} is not a template variable').first().waitFor();
      // The browser logs that refused request (a 400) as a console error: expected, and only that.
      expect(problems).toEqual([expect.stringContaining('status of 400')]);
      problems.length = 0;
      await page.getByLabel('System prompt (optional)').fill('You answer questions for {{agent.name}}, briefly.');
      await page.getByRole('button', { name: 'Add custom tool' }).click();
      await page.getByLabel('Tool name').fill('lookup');
      await page.getByLabel('Tool URL').fill('https://example.com/tools/lookup');
      await page.getByLabel('Tool description').fill('Looks a patient up.');
      await page.getByLabel('Tool parameters (JSON Schema)').fill('{"type": "object",');
      await page.getByRole('button', { name: /Create agent/ }).click();
      await page
        .getByText(/parameters are not valid JSON/)
        .first()
        .waitFor();
      await page.getByRole('button', { name: 'Remove custom tool 1' }).click();
      await page.getByLabel('Metadata (optional)').fill('["A-17"]');
      await page.getByRole('button', { name: /Create agent/ }).click();
      await page.getByText('Metadata is not a JSON object of your own keys and values.').waitFor();
      await page.getByLabel('Metadata (optional)').fill('{"crmId": "A-17"}');
      await expectLabelledControls();
      await page.getByRole('button', { name: /Create agent/ }).click();

      await expect(page.getByTestId('tool-signing-secret').textContent()).resolves.toMatch(/^whsec_/);
      await expect(page.getByText('it is shown only this once').count()).resolves.toBe(1);
      await expect(page.getByRole('button', { name: 'Copy secret' }).count()).resolves.toBe(1);
      await page.getByRole('link', { name: 'Open the agent and talk to it' }).click();
      await page.getByRole('heading', { level: 1, name: 'Clinic helper' }).waitFor();
      expect(JSON.parse(await page.getByLabel('Metadata (optional)').inputValue())).toEqual({ crmId: 'A-17' });

      await page.getByRole('button', { name: 'Talk to this agent' }).click();
      const chat = page.getByRole('list', { name: 'Chat' });
      const greeting = chat.getByRole('listitem').filter({ hasText: 'Hello, this is Clinic helper, an automated assistant.' });
      await greeting.waitFor();
      await expect(greeting.getByText('retrieval agent', { exact: true }).count()).resolves.toBe(1);
      await page.getByLabel('Your message').fill('Where do I park?');
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      await chat.getByRole('listitem').filter({ hasText: 'Where do I park?' }).waitFor();
      const answer = chat.getByRole('listitem').filter({ hasText: 'Parking is free behind the building.' });
      await answer.waitFor({ timeout: DEADLINE_MS });
      await expect(answer.getByText('retrieval agent', { exact: true }).count()).resolves.toBe(1);
      await expect(answer.textContent()).resolves.toContain('Sources: Opening hours');
      await expect(answer.textContent()).resolves.toMatch(/reply \d+ ms/);
      await expect(page.getByTestId('test-chat-brain').textContent()).resolves.toMatch(/Retrieval agent/);
      // One money format everywhere: the test chat's cost as a call's own page shows it.
      await expect(page.getByTestId('test-chat-cost').textContent()).resolves.toBe('$0.0000');
      await expectLabelledControls();
      await screenshots('agent-chat');
      // The agent ends the chat on a goodbye: no more messages, until a new chat.
      await page.getByLabel('Your message').fill('That is all, goodbye.');
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      await page.getByText('The agent ended this chat (agent ended).').waitFor();
      await expect(page.getByLabel('Your message').isDisabled()).resolves.toBe(true);
      await page.getByRole('button', { name: 'New chat' }).click();
      await expect.poll(() => page.getByLabel('Your message').isDisabled()).toBe(false);
      await expect(chat.getByRole('listitem').count()).resolves.toBe(1);

      // An extraction field, saved with the agent through the bindings endpoint.
      await page.getByRole('button', { name: 'Add field' }).click();
      await page.getByLabel('Field name').fill('asked_about_parking');
      await page.getByLabel('Field type').selectOption('boolean');
      await page.getByRole('button', { name: 'Save agent' }).click();
      await page.getByText('Saved.', { exact: true }).waitFor();
      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Clinic helper' }).waitFor();
      await expect(page.getByLabel('Field name').inputValue()).resolves.toBe('asked_about_parking');
    },
  );

  it(
    "opens a simulated call's page from the call log, follows it live to its end and labels who wrote each turn",
    { timeout: 90_000 },
    async () => {
      // A call of the campaign that the retrieval agent has talked on.
      type Listed = { id: string; status: string; transcript: { role: string }[] };
      let target: Listed | undefined;
      await expect
        .poll(
          async () => {
            const calls = (await (await api('/call-logs?limit=200', apiKey)).json()) as { data: Listed[] };
            const talked = calls.data.filter((call) => call.transcript.some((turn) => turn.role === 'contact'));
            // A live one if there is one, to follow it.
            target = talked.find((call) => call.status !== 'ENDED') ?? talked[0];
            return target !== undefined;
          },
          { timeout: DEADLINE_MS },
        )
        .toBe(true);
      await open('/calls', 'Calls');
      await page.locator(`a[href="#/calls/${target!.id}"]`).click();
      await page.getByRole('heading', { level: 1, name: /Call with/ }).waitFor();
      const transcript = page.getByRole('list', { name: 'Transcript' });
      const greeting = transcript.getByRole('listitem').filter({ hasText: 'Hello, this is Reminder agent, an automated assistant.' });
      await greeting.waitFor();
      await expect(greeting.getByText('retrieval agent', { exact: true }).count()).resolves.toBe(1);
      await transcript.getByRole('listitem').filter({ hasText: 'Hello?' }).first().waitFor();
      if (target!.status !== 'ENDED') {
        // Live: followed through its stream, which tells the page of the end (it does not ask again).
        await page.getByText('Following live…').waitFor();
        await page.getByRole('button', { name: /Hang up/ }).click();
        await page.getByText('Ended: hung up by user').waitFor({ timeout: DEADLINE_MS });
      }
      await page.reload();
      await page.getByRole('heading', { level: 1, name: /Call with/ }).waitFor();
      await expect(page.getByRole('rowheader', { name: 'Total' }).count()).resolves.toBe(1);
      await page.getByText('skipped: no model configured').waitFor({ timeout: DEADLINE_MS });
      await expect(transcript.getByText('retrieval agent', { exact: true }).count()).resolves.toBeGreaterThan(0);
      await expectLabelledControls();
      await screenshots('call');
    },
  );

  it('says in words who answered a call, why it ended and that the voicemail message was left', { timeout: 60_000 }, async () => {
    // A simulated answering machine, and a campaign that leaves it a voicemail, set up over the API.
    const machine = { simulate: { answeredBy: 'machine' } };
    const setup = await voiceSetup(dashboard.t.app, apiKey, [machine, machine]);
    const campaign = await createCampaign(dashboard.t.app, apiKey, {
      ...setup,
      timezone: middayTimeZone(),
      callWindowStart: '00:00',
      callWindowEnd: '23:59',
      callDays: [1, 2, 3, 4, 5, 6, 7],
      answeringMachine: { detect: true, onMachine: 'LEAVE_VOICEMAIL', voicemailMessage: 'Hello {{name|there}}, please call us back.' },
    });
    await fetch(`${dashboard.url}/api/v1/campaigns/${campaign.id}/start`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: '{}',
    });
    let callId: string | undefined;
    await expect
      .poll(
        async () => {
          const calls = (await (await api(`/call-logs?campaignId=${campaign.id}`, apiKey)).json()) as {
            data: { id: string; status: string }[];
          };
          callId = calls.data.find((call) => call.status === 'ENDED')?.id;
          return callId;
        },
        { timeout: DEADLINE_MS },
      )
      .toBeDefined();
    await open(`/calls/${callId}`, /Call with/);
    await page.getByText('Ended: voicemail left').waitFor();
    const answeredBy = page.getByRole('term').filter({ hasText: 'Answered by' }).locator('xpath=following-sibling::dd');
    await expect(answeredBy.textContent()).resolves.toBe('an answering machine');
    const voicemail = page
      .getByRole('list', { name: 'Transcript' })
      .getByRole('listitem')
      .filter({ hasText: /Hello Contact \d, please call us back\./ });
    await expect(voicemail.getByText('voicemail message', { exact: true }).count()).resolves.toBe(1);
    await expectLabelledControls();
  });

  it("turns on an agent's recording, and plays a call's recording on its page", { timeout: 60_000 }, async () => {
    type Listed = { id: string; name: string };
    const agents = (await (await api('/agents?limit=200', apiKey)).json()) as { data: Listed[] };
    const agent = agents.data.find((listed) => listed.name === 'Reminder agent')!;
    await open(`/agents/${agent.id}`, 'Reminder agent');
    await page.getByLabel("Record this agent's calls").check();
    await page.getByLabel('Keep recordings (days)').fill('14');
    await page.getByRole('button', { name: 'Save agent' }).click();
    await page.getByText('Saved.', { exact: true }).waitFor();
    const saved = (await (await api(`/agents/${agent.id}`, apiKey)).json()) as { recording: unknown };
    expect(saved.recording).toEqual({ enabled: true, retentionDays: 14 });

    // A simulated call has no audio line: one of its calls is given one second of recording through the calls module.
    const calls = (await (await api('/call-logs?limit=1', apiKey)).json()) as { data: Listed[] };
    const callId = calls.data[0]!.id;
    const profile = (await (await api('/profile', apiKey)).json()) as { data: { tenant: { id: string } } };
    const format = { encoding: 'mulaw', sampleRate: 8000 } as const;
    await appendRecording(
      tenantCtx(dashboard.t.runtime, profile.data.tenant.id),
      callId,
      { format, retentionDays: 14 },
      {
        seq: 0,
        audio: Buffer.alloc(16_000, 0x7f),
        frames: 8000,
      },
    );
    await open(`/calls/${callId}`, /Call with/);
    const player = page.getByLabel('Call recording');
    await player.waitFor();
    await expect(player.getAttribute('src')).resolves.toMatch(/^blob:/);
    // The browser read the WAV's header: one second.
    const duration = await player.evaluate(
      (audio: { readyState: number; duration: number; addEventListener(event: string, listener: () => void): void }) =>
        new Promise<number>((resolve) =>
          audio.readyState >= 1 ? resolve(audio.duration) : audio.addEventListener('loadedmetadata', () => resolve(audio.duration)),
        ),
    );
    expect(duration).toBeCloseTo(1, 1);
    await expectLabelledControls();
    await screenshots('call-recording');
  });

  it("keeps the do-not-call list, records and revokes consents, and shows a campaign's dial decisions with its chain checked", async () => {
    await open('/do-not-call', 'Do not call');
    await page.getByLabel('Phone number').fill('+14155550177');
    await page.getByLabel('Reason (optional)').fill('Asked by email');
    await page.getByRole('button', { name: 'Add to the list' }).click();
    await page.getByRole('cell', { name: 'Asked by email' }).waitFor();
    const listed = (await (await api('/dnc/%2B14155550177', apiKey)).json()) as { source: string };
    expect(listed.source).toBe('api');
    await expectLabelledControls();
    await screenshots('do-not-call');
    await page.getByRole('button', { name: 'Take off the list' }).click();
    await page.getByText('The list is empty.').waitFor();
    expect((await api('/dnc/%2B14155550177', apiKey)).status).toBe(404);

    await open('/consents', 'Consents');
    await page.getByLabel('Phone number').fill('+14155550178');
    await page.getByLabel('Channel').selectOption('voice');
    await page.getByLabel('Where it was given').fill('web-form');
    await page.getByRole('button', { name: 'Record consent' }).click();
    await page.getByRole('cell', { name: 'web-form' }).waitFor();
    await page.getByText('Valid', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('Revoked', { exact: true }).waitFor();
    await expectLabelledControls();
    await screenshots('consents');

    await open('/compliance-records', 'Compliance records');
    await selectByText('Campaign', /Spring reminder calls/);
    await page
      .getByRole('cell', { name: /^Dialled/ })
      .first()
      .waitFor();
    await page.getByRole('button', { name: 'Check the chain of records' }).click();
    await page.getByText(/^The chain is whole: \d+ records checked\.$/).waitFor();
    await expectLabelledControls();
    await screenshots('compliance-records');
  });

  it('shows the other pages without errors', async () => {
    for (const [path, heading, name] of [
      ['/messaging', /Messaging/, 'messaging'],
      ['/knowledge', /Knowledge/, 'knowledge'],
      ['/usage', /Usage/, 'usage'],
      ['/integrations', /Integrations/, 'integrations'],
      ['/analytics', /Call results/, 'call-results'],
      ['/webhooks', /Webhook deliveries/, 'webhooks'],
      ['/calls/simulate', /Test call/, 'test-call'],
    ] as const) {
      await open(path, heading);
      await expectLabelledControls();
      await screenshots(name);
    }
  });

  it('is keyboard usable: the skip link and the navigation take focus visibly', async () => {
    await open('/campaigns', 'Campaigns');
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Campaigns' }).waitFor();
    await page.keyboard.press('Tab');
    await expect(page.evaluate<string>('document.activeElement.textContent')).resolves.toBe('Skip to content');
    const outline = await page.evaluate<string>('getComputedStyle(document.activeElement).outlineStyle');
    expect(outline).not.toBe('none');
  });

  it('revokes the key after confirmation, and the API refuses it', async () => {
    await open('/keys', 'API keys');
    await page.getByRole('button', { name: 'Revoke CRM sync' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('cell', { name: 'REVOKED' }).waitFor();
    const refused = await api('/profile', apiKey);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { message: string }).message).toBe('Invalid API key');
  });

  it('logged no console errors and prints the page weight and the time to first render of the campaigns page', async () => {
    expect(problems).toEqual([]);
    const assets = await dashboardAssets();
    // A new tab of the signed-in user: from navigation to the campaigns page's title.
    const fresh = await dashboard.browser.newPage({ viewport: DESKTOP });
    await fresh.context().addCookies(await page.context().cookies());
    const started = Date.now();
    await fresh.goto(`${dashboard.url}/#/campaigns`);
    await fresh.getByRole('heading', { level: 1, name: 'Campaigns' }).waitFor();
    const firstRender = Date.now() - started;
    console.log(
      `page weight: JS ${assets.script.body.length} B (${assets.script.gzip.length} B gzipped), CSS ${assets.style.body.length} B (${assets.style.gzip.length} B gzipped); campaigns page first render ${firstRender} ms`,
    );
    await fresh.close();
  });
});
