/**
 * A campaign to dial, set up over HTTP, for the benches that measure the dialer (dialer.ts,
 * scale-out.ts): a tenant with an agent and a SIMULATOR number, lists of distinct valid numbers,
 * campaigns that call around the clock at the highest concurrency a campaign accepts, one attempt
 * per contact; and the worker settings that make the simulated calls instant.
 */
import { performance } from 'node:perf_hooks';
import { createKey, distinctPhoneNumber, getJson, postJson } from './harness.ts';

export const MAX_CONCURRENT_CALLS = 50; // the highest a campaign accepts
const BULK_BATCH = 1_000;

/**
 * What the processes run with: instant simulated calls, a short idle tick, and a pace that never
 * limits (DIALER_CALLS_PER_SECOND accepts at most 10,000 per voice number, src/config.ts).
 */
export const INSTANT_CALLS = {
  SIMULATOR_RING_SECONDS: '0',
  SIMULATOR_TALK_SECONDS: '0',
  DIALER_TICK_MS: '10',
  DIALER_CALLS_PER_SECOND: '10000',
};

let nextCampaign = 1;

const idOf = (what: string, body: Record<string, unknown>): string => {
  if (typeof body.id !== 'string') throw new Error(`${what} returned no id: ${JSON.stringify(body)}`);
  return body.id;
};

export interface DialTenant {
  base: string;
  auth: Record<string, string>;
  agentId: string;
  voiceNumberId: string;
}

/** A fresh tenant with an API key, an agent and a SIMULATOR voice number. */
export async function setUpDialTenant(base: string): Promise<DialTenant> {
  const auth = { authorization: `Bearer ${await createKey(base)}` };
  const api = (path: string, body: unknown) => postJson(`${base}/api/v1${path}`, body, auth);
  const agentId = idOf('POST /agents', await api('/agents', { name: 'Bench agent' }));
  const voiceNumberId = idOf('POST /voice-numbers', await api('/voice-numbers', { phoneNumber: '+14159999999', provider: 'SIMULATOR' }));
  return { base, auth, agentId, voiceNumberId };
}

/** A list of `contacts` new numbers and a campaign on it (not started); its id and the seconds the list took to fill. */
export async function setUpCampaign(tenant: DialTenant, contacts: number): Promise<{ campaignId: string; fillSeconds: number }> {
  const api = (path: string, body: unknown) => postJson(`${tenant.base}/api/v1${path}`, body, tenant.auth);
  const name = `Bench dialer ${nextCampaign++}: ${contacts} contacts`;
  const listId = idOf('POST /contact-lists', await api('/contact-lists', { name }));
  const started = performance.now();
  for (let offset = 0; offset < contacts; offset += BULK_BATCH) {
    const size = Math.min(BULK_BATCH, contacts - offset);
    const batch = Array.from({ length: size }, () => {
      const phone = distinctPhoneNumber();
      return { phoneNumber: phone, name: `Contact ${phone.slice(1)}` };
    });
    const result = await api(`/contact-lists/${listId}/contacts/bulk`, { contacts: batch });
    if (result.imported !== size || result.skipped !== 0)
      throw new Error(`bulk add at ${offset}: expected imported: ${size}, skipped: 0; got ${JSON.stringify(result).slice(0, 2_000)}`);
  }
  const fillSeconds = (performance.now() - started) / 1_000;
  const campaignId = idOf(
    'POST /campaigns',
    await api('/campaigns', {
      name,
      agentId: tenant.agentId,
      voiceNumberId: tenant.voiceNumberId,
      contactListId: listId,
      timezone: 'UTC',
      callWindowStart: '00:00',
      callWindowEnd: '23:59',
      callDays: [1, 2, 3, 4, 5, 6, 7],
      maxConcurrentCalls: MAX_CONCURRENT_CALLS,
      maxAttempts: 1,
      // US numbers dialled at whatever hour the bench runs: the statutory hours (on by default) would
      // hold them overnight, so the bench's calls are declared no solicitation.
      callingRules: false,
    }),
  );
  return { campaignId, fillSeconds };
}

/** Starts a campaign; the milliseconds POST …/start took. */
export async function startCampaign(tenant: DialTenant, campaignId: string): Promise<number> {
  const url = `${tenant.base}/api/v1/campaigns/${campaignId}/start`;
  const started = performance.now();
  const response = await fetch(url, { method: 'POST', headers: { ...tenant.auth, 'content-type': 'application/json' }, body: '{}' });
  const elapsed = performance.now() - started;
  const text = await response.text();
  if (response.status !== 202) throw new Error(`POST ${url} answered ${response.status}, expected 202: ${text}`);
  return elapsed;
}

export interface CampaignView {
  status?: unknown;
  statusReason?: unknown;
  stats?: { total?: number; pending?: number; inProgress?: number; answered?: number; unanswered?: number; busy?: number; failed?: number };
}

/** GET /campaigns/{id}; throws unless it is RUNNING or COMPLETED. */
export async function campaignView(tenant: DialTenant, campaignId: string): Promise<CampaignView> {
  const view = (await getJson(`${tenant.base}/api/v1/campaigns/${campaignId}`, tenant.auth)) as CampaignView;
  if (view.status !== 'RUNNING' && view.status !== 'COMPLETED')
    throw new Error(
      `the campaign is ${String(view.status)} (${String(view.statusReason)}), expected RUNNING or COMPLETED: ${JSON.stringify(view.stats)}`,
    );
  return view;
}

export async function walletBalance(tenant: DialTenant): Promise<string> {
  const profile = (await getJson(`${tenant.base}/api/v1/profile`, tenant.auth)) as { data?: { wallet?: { balance?: unknown } } };
  const balance = profile.data?.wallet?.balance;
  if (typeof balance !== 'string') throw new Error(`GET /profile returned no wallet balance: ${JSON.stringify(profile)}`);
  return balance;
}
