import { existsSync, mkdirSync } from 'node:fs';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { dashboardAssets } from '../../src/dashboard/assets.ts';
import { jobDefinitions } from '../../src/jobs.ts';
import { startDialer } from '../../src/modules/campaigns/dialer.ts';
import { startTestApp, type TestApp } from '../harness.ts';

/** Debian's chromium (installed by .ci/run); CHROMIUM_PATH points elsewhere. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const DESKTOP = { width: 1280, height: 800 };
/** Where the browser suites save their screenshots, which docs/dashboard.md shows. */
export const SCREENSHOTS = new URL('../../docs/screenshots/', import.meta.url);
/** Without a browser on a developer's machine the suites say so and skip; CI installs one and runs them. */
export const NO_BROWSER = !existsSync(CHROMIUM) && !process.env.CI;
export const PHONE = { width: 390, height: 844 };
/** The service's environment for short simulated calls: they ring and talk for a second, and the dialer looks for work often. */
export const SHORT_CALLS = { SIMULATOR_RING_SECONDS: '1', SIMULATOR_TALK_SECONDS: '1', DIALER_TICK_MS: '100' };

export interface Dashboard {
  t: TestApp;
  url: string;
  browser: Browser;
  close(): Promise<void>;
}

/** A fresh service (API, workers and dialer, as `npm start` runs them) on loopback, and a headless Chromium. */
export async function startDashboard(env: Record<string, string> = {}, browserArgs: string[] = []): Promise<Dashboard> {
  if (!existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: install it (apt-get install chromium) or set CHROMIUM_PATH.`);
  const t = await startTestApp({ env });
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
  const dialer = startDialer(t.runtime);
  const url = await t.app.listen({ host: '127.0.0.1', port: 0 });
  // Built here, within the suite's start-up time, rather than on the first page a test opens.
  await dashboardAssets();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage', ...browserArgs] });
  return {
    t,
    url,
    browser,
    async close() {
      await browser.close();
      await dialer.stop();
      await t.close();
    },
  };
}

export interface DashboardPageOptions {
  /** The service's environment. */
  env?: Record<string, string>;
  /** Chromium's command-line switches (a fake microphone). */
  browserArgs?: string[];
  /** What the page may use without asking (the microphone). */
  permissions?: string[];
}

export interface DashboardPage {
  dashboard: Dashboard;
  page: Page;
  problems: string[];
}

/** A fresh service and browser (startDashboard), a page at desktop width whose problems are watched, and the screenshots' folder. */
export async function startDashboardPage({ env = {}, browserArgs = [], permissions }: DashboardPageOptions = {}): Promise<DashboardPage> {
  const dashboard = await startDashboard(env, browserArgs);
  const page = await dashboard.browser.newPage({ viewport: DESKTOP, permissions });
  const problems = watchProblems(page);
  mkdirSync(SCREENSHOTS, { recursive: true });
  return { dashboard, page, problems };
}

/**
 * Registers the hooks of the dashboard page a test file's tests share: before them it is started
 * (startDashboardPage with what `options` answers then) and handed to `started`; after them it is
 * closed. Vitest runs beforeAll hooks in the order registered and afterAll hooks in reverse, so the
 * fakes a file's own hooks, registered before this, start are up when `options` reads their
 * addresses, and still up while the service closes. Without a browser nothing starts, the file's
 * suites skip (describe.skipIf(NO_BROWSER)) and the log says why.
 */
export function sharedDashboardPage(options: () => DashboardPageOptions, started: (shared: DashboardPage) => void | Promise<void>): void {
  if (NO_BROWSER) console.warn(`Skipping the browser tests: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH).`);
  let shared: DashboardPage | undefined;
  beforeAll(async () => {
    if (NO_BROWSER) return;
    shared = await startDashboardPage(options());
    await started(shared);
  }, 180_000);
  afterAll(async () => {
    await shared?.dashboard.close();
  });
}

/** Collects the page's console errors and failed requests, so a test can insist there were none. */
export function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (message) => message.type() === 'error' && problems.push(`console: ${message.text()}`));
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return problems;
}

/** Signs up through the dashboard's own form and waits for the signed-in shell. */
export async function signUpInBrowser(page: Page, url: string, company = 'Acme Clinics') {
  const email = `owner-${Math.random().toString(36).slice(2, 10)}@example.com`;
  await page.goto(`${url}/#/signup`);
  await page.getByLabel('Company name').fill(company);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.getByTestId('wallet-balance').waitFor();
  return { email, password: 'correct horse battery' };
}

/**
 * A fixed-offset time zone in which it is about midday now, so a campaign whose window is
 * 00:00–23:59 in it dials whenever the test runs (in UTC it would not between 23:59 and midnight).
 */
export function middayTimeZone(now = new Date()): string {
  const offset = 12 - now.getUTCHours(); // −11…+12 hours, all of which exist as Etc/GMT zones
  // Etc/GMT zones are named with the sign inverted: Etc/GMT-5 is five hours ahead of UTC.
  // At noon UTC, UTC itself: the service names Etc/GMT so (its canonical name), and a page says UTC.
  return offset === 0 ? 'UTC' : `Etc/GMT${offset > 0 ? '-' : '+'}${Math.abs(offset)}`;
}

const OPTIONS_DEADLINE_MS = 30_000;

/** The page at desktop and phone width, whole or only its `part` (on a long page); nothing scrolls sideways on the phone. */
export async function screenshots(page: Page, name: string, part?: Locator) {
  const shoot = (path: string) => (part ? part.screenshot({ path }) : page.screenshot({ path, fullPage: true }));
  await page.waitForLoadState('networkidle');
  await shoot(new URL(`${name}-desktop.png`, SCREENSHOTS).pathname);
  await page.setViewportSize(PHONE);
  const sideways = await page.evaluate<boolean>('document.documentElement.scrollWidth > document.documentElement.clientWidth');
  await shoot(new URL(`${name}-phone.png`, SCREENSHOTS).pathname);
  await page.setViewportSize(DESKTOP);
  expect(sideways, `${name} scrolls sideways on a phone`).toBe(false);
}

/** The refused requests the browser logged (a 4xx the page showed), taken off the list of `problems`: how many there were. */
export function takeRefusals(problems: string[], status: number) {
  const refused = problems.filter((problem) => problem.includes(`status of ${status}`));
  problems.splice(0, problems.length, ...problems.filter((problem) => !refused.includes(problem)));
  return refused.length;
}

/** A request of the signed-in page to the API (set-up the walk does not look at), answering its body. */
export async function apiInPage<T>(page: Page, method: string, path: string, body?: unknown): Promise<T> {
  return page.evaluate<T>(`(async () => {
    const csrf = decodeURIComponent(/(?:^|;\\s*)(?:__Host-)?callforge_csrf=([^;]*)/.exec(document.cookie)?.[1] ?? '');
    const response = await fetch('/api/v1${path}', {
      method: '${method}',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: ${body === undefined ? 'undefined' : JSON.stringify(JSON.stringify(body))},
    });
    if (!response.ok) throw new Error('${path}: HTTP ' + response.status);
    return response.json();
  })()`);
}

/** The API's problem shown at a control (its `<id>-problem` note, which its aria-describedby names); empty when none. */
export async function problemAt(page: Page, label: string) {
  const id = await page.getByLabel(label, { exact: true }).getAttribute('id');
  const problem = page.locator(`[id="${id}-problem"]`);
  return (await problem.count()) > 0 ? ((await problem.textContent()) ?? '') : '';
}

/**
 * The signed-in tenant relaxes the statutory calling rules (declaring its calls no solicitation:
 * appointment reminders), the one relaxation the law allows, so its test campaigns dial whatever
 * the hour in their contacts' zones when the test runs; answers the status of the request.
 */
export function relaxStatutoryRules(page: Page): Promise<number> {
  return page.evaluate<number>(`(async () => {
    const csrf = decodeURIComponent(/(?:^|;\\s*)(?:__Host-)?callforge_csrf=([^;]*)/.exec(document.cookie)?.[1] ?? '');
    const response = await fetch('/api/v1/compliance/settings', {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify({ callingRules: false }),
    });
    return response.status;
  })()`);
}

/** Waits until the select offers an option whose text matches (its options are loaded from the API). */
export async function optionAppears(page: Page, label: string, text: RegExp) {
  const options = page.getByLabel(label, { exact: true }).locator('option');
  await expect
    .poll(async () => (await options.allTextContents()).some((option) => text.test(option)), { timeout: OPTIONS_DEADLINE_MS })
    .toBe(true);
}

/** Picks the option whose text matches (option texts carry more than the name), once the API's list has loaded it. */
export async function selectOptionByText(page: Page, label: string, text: RegExp) {
  await optionAppears(page, label, text);
  const select = page.getByLabel(label, { exact: true });
  const options = await select
    .locator('option')
    .evaluateAll((found) => found.map((option) => ({ value: option.getAttribute('value'), text: option.textContent ?? '' })));
  const value = options.find((option) => text.test(option.text))?.value;
  expect(value, `${label}: an option matching ${text}`).toBeTruthy();
  await select.selectOption(value!);
}

/** On the agents page: creates an agent by name, then registers a SIMULATOR number. */
export async function createAgentAndSimulatorNumber(page: Page, agentName: string, phoneNumber: string) {
  await page.getByLabel('Agent name').fill(agentName);
  await page.getByRole('button', { name: /Create agent/ }).click();
  await page.getByRole('cell', { name: agentName, exact: true }).waitFor();
  await page.getByLabel('Phone number').fill(phoneNumber);
  await page.getByLabel('Provider', { exact: true }).selectOption('SIMULATOR');
  await page.getByRole('button', { name: /Register number/ }).click();
  // Exact: the row's inbound-agent cell names the number too.
  await page.getByRole('cell', { name: phoneNumber, exact: true }).waitFor();
}
