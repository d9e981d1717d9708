/**
 * Opens one dashboard page in headless Chromium on a fresh in-memory service, signed up, and saves
 * a screenshot at desktop and phone width; prints console errors. For developing pages:
 *   node --import tsx scripts/dashboard-smoke.ts /campaigns /tmp/campaigns
 */
import { DESKTOP, PHONE, signUpInBrowser, startDashboard, watchProblems } from '../test/browser/harness.ts';

const path = process.argv[2] ?? '/campaigns';
const out = process.argv[3] ?? '/tmp/dashboard';
const dashboard = await startDashboard({ ALLOW_PRIVATE_URLS: '1' });
try {
  const page = await dashboard.browser.newPage({ viewport: DESKTOP });
  const problems = watchProblems(page);
  await signUpInBrowser(page, dashboard.url);
  await page.goto(`${dashboard.url}/#${path}`);
  await page.waitForLoadState('networkidle');
  await page.screenshot({ path: `${out}-desktop.png`, fullPage: true });
  await page.setViewportSize(PHONE);
  await page.screenshot({ path: `${out}-phone.png`, fullPage: true });
  console.log(problems.length ? problems.join('\n') : 'no console errors');
  console.log(`screenshots: ${out}-desktop.png ${out}-phone.png`);
} finally {
  await dashboard.close();
}
