import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { toolSigningSecret } from '../src/modules/agents/service.ts';
import { converseOnSimulatedCall } from '../src/modules/conversation/service.ts';
import { afterCallEnded } from '../src/modules/messaging/dispatch.ts';
import { tenantCtx } from '../src/platform/context.ts';
import { listenOnLoopback, readBody } from '../src/providers/fake-server.ts';
import { manualClock } from '../src/platform/clock.ts';
import { startTestApp, twoTenantKeys, type TestApp } from './harness.ts';
import { apiAs, createCampaign, voiceSetup } from './voice-fixtures.ts';

// Smarter outreach on the SIMULATOR, tick by tick with an injected clock: rings 2 s, answered
// calls last 6 s. 2026-11-23 is a Monday.
const clock = manualClock('2026-11-23T10:00:00.000Z');
let t: TestApp;

beforeAll(async () => {
  // Private URLs allowed: the pre-dial receiver listens on loopback.
  t = await startTestApp({
    clock,
    env: { SIMULATOR_RING_SECONDS: '2', SIMULATOR_TALK_SECONDS: '6', DIALER_CALLS_PER_SECOND: '1000', ALLOW_PRIVATE_URLS: '1' },
  });
});
afterAll(() => t.close());

async function tenant() {
  const { key } = await twoTenantKeys(t.app);
  return { key, api: apiAs(t.app, key) };
}

async function runningCampaign(key: string, contacts: Record<string, unknown>[], settings: Record<string, unknown> = {}) {
  const setup = await voiceSetup(t.app, key, contacts);
  const campaign = await createCampaign(t.app, key, { ...setup, timezone: 'UTC', redialDelayMin: 60, ...settings });
  const started = await apiAs(t.app, key)('POST', `/campaigns/${campaign.id}/start`, {});
  if (started.statusCode !== 202) throw new Error(started.body);
  return campaign.id;
}

interface ContactState {
  phoneNumber: string;
  status: string;
  skipReason: string | null;
  attempts: number;
  lastOutcome: string | null;
  nextAttemptAt: string | null;
  lastCallId: string | null;
}
const contactsOf = async (api: ReturnType<typeof apiAs>, id: string) =>
  (await api('GET', `/campaigns/${id}/contacts`)).json().data as ContactState[];

/** Dials at the clock's time, then lets the 2 s of ringing end (so BUSY, UNANSWERED and FAILED attempts end). */
async function dialAndRing() {
  await dialerTick(t.runtime);
  clock.advance(2_000);
  await dialerTick(t.runtime);
}

describe('retry rules per outcome', () => {
  it('waits each outcome its own delay, to the minute, and never retries an outcome ruled never', async () => {
    clock.set('2026-11-23T10:00:00.000Z');
    const { key, api } = await tenant();
    const id = await runningCampaign(key, [{ simulate: 'BUSY,ANSWERED' }, { simulate: 'UNANSWERED,ANSWERED' }, { simulate: 'FAILED' }], {
      retryRules: { BUSY: { afterMinutes: 10 }, FAILED: { never: true } },
    });
    await dialAndRing(); // all three end at 10:00:02
    const [busy, unanswered, failed] = await contactsOf(api, id);
    expect(busy).toMatchObject({ status: 'PENDING', attempts: 1, nextAttemptAt: '2026-11-23T10:10:02.000Z' });
    // Not named in the rules: redialDelayMin (60) as before.
    expect(unanswered).toMatchObject({ status: 'PENDING', attempts: 1, nextAttemptAt: '2026-11-23T11:00:02.000Z' });
    expect(failed).toMatchObject({ status: 'FAILED', attempts: 1, nextAttemptAt: null });

    clock.set('2026-11-23T10:10:01.999Z');
    await dialerTick(t.runtime);
    expect((await contactsOf(api, id))[0]!.attempts).toBe(1);
    clock.set('2026-11-23T10:10:02.000Z');
    await dialerTick(t.runtime);
    expect((await contactsOf(api, id))[0]).toMatchObject({ status: 'IN_PROGRESS', attempts: 2 });
  });

  it('moves a retry that falls after the window closes to the next opening', async () => {
    clock.set('2026-11-23T17:49:00.000Z');
    const { key, api } = await tenant();
    const id = await runningCampaign(key, [{ simulate: 'BUSY,ANSWERED' }, { simulate: 'BUSY,ANSWERED' }], {
      callWindowStart: '09:00',
      callWindowEnd: '18:00',
      retryRules: { BUSY: { afterMinutes: 11 } },
    });
    await dialAndRing(); // ends 17:49:02; +11 min = 18:00:02, outside: Tuesday 09:00
    expect((await contactsOf(api, id))[0]!.nextAttemptAt).toBe('2026-11-24T09:00:00.000Z');
  });

  it('nextDay waits for the first window opening on a later local day, even when today is still open', async () => {
    clock.set('2026-11-23T10:00:00.000Z');
    const { key, api } = await tenant();
    const id = await runningCampaign(key, [{ simulate: 'UNANSWERED,ANSWERED' }, {}], {
      timezone: 'America/New_York',
      callWindowStart: '00:00',
      callWindowEnd: '23:59',
      callDays: [1, 2, 3, 4, 5, 6, 7],
      retryRules: { UNANSWERED: { nextDay: true } },
    });
    await dialAndRing(); // 05:00:02 in New York on Monday
    expect((await contactsOf(api, id))[0]!.nextAttemptAt).toBe('2026-11-24T05:00:00.000Z'); // Tuesday 00:00 EST
  });

  it('never dials more than maxAttempts, whatever the rules', async () => {
    clock.set('2026-11-23T10:00:00.000Z');
    const { key, api } = await tenant();
    const id = await runningCampaign(key, [{ simulate: 'BUSY,BUSY,BUSY,BUSY' }, {}], {
      maxAttempts: 2,
      retryRules: { BUSY: { afterMinutes: 1 } },
    });
    for (let i = 0; i < 6; i++) {
      await dialAndRing();
      clock.advance(60_000);
    }
    expect((await contactsOf(api, id))[0]).toMatchObject({ status: 'BUSY', attempts: 2, nextAttemptAt: null });
  });

  it('refuses rules it cannot keep with a 400 naming the field, shows them on GET, and leaves them out of the update answer', async () => {
    const { key, api } = await tenant();
    const setup = await voiceSetup(t.app, key, [{}, {}]);
    for (const retryRules of [
      { BUSY: { afterMinutes: 0 } },
      { BUSY: { afterMinutes: 1.5 } },
      { ANSWERED: { afterMinutes: 5 } },
      { BUSY: { nextDay: false } },
      { BUSY: { afterMinutes: 5, never: true } },
      {},
    ]) {
      const refused = await api('POST', '/campaigns', { name: `Rules ${JSON.stringify(retryRules)}`, ...setup, retryRules });
      expect(refused.statusCode, JSON.stringify(retryRules)).toBe(400);
      expect(refused.json().code).toBe('VALIDATION_FAILED');
      expect(refused.json().details[0].path).toMatch(/^\/retryRules/);
    }
    const created = await createCampaign(t.app, key, { ...setup, retryRules: { VOICEMAIL: { afterMinutes: 1440 } } });
    expect(created.retryRules).toEqual({ VOICEMAIL: { afterMinutes: 1440 } });
    const patched = await api('PATCH', `/campaigns/${created.id}`, { retryRules: { BUSY: { afterMinutes: 10 }, FAILED: { never: true } } });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).not.toHaveProperty('retryRules');
    expect(patched.json()).not.toHaveProperty('postCallMessages');
    expect((await api('GET', `/campaigns/${created.id}`)).json().retryRules).toEqual({
      BUSY: { afterMinutes: 10 },
      FAILED: { never: true },
    });
    const cleared = await api('PATCH', `/campaigns/${created.id}`, { retryRules: null });
    expect(cleared.statusCode).toBe(200);
    expect((await api('GET', `/campaigns/${created.id}`)).json().retryRules).toBeNull();
  });
});

describe('post-call messages per campaign', () => {
  /** Runs a campaign whose agent has an SMS campaign; returns how many messages each ended call recorded, in call order. */
  async function messagesPerCall(postCallMessages: string | undefined) {
    clock.set('2026-11-23T10:00:00.000Z');
    const { key, api } = await tenant();
    const setup = await voiceSetup(t.app, key, [{ simulate: 'BUSY,UNANSWERED,ANSWERED' }, { simulate: 'BUSY,BUSY,BUSY' }]);
    const sms = await api('POST', '/sms-agent/campaigns', {
      agentId: setup.agentId,
      senderNumber: '+14155550100',
      senderProvider: 'twilio',
      templates: [
        { callStatus: 'ANSWERED', messageBody: 'Thanks for your time, {{name|there}}.' },
        { callStatus: 'UNANSWERED', messageBody: 'We tried to reach you, {{name|there}}.' },
      ],
    });
    expect(sms.statusCode).toBe(201);
    const campaign = await createCampaign(t.app, key, {
      ...setup,
      timezone: 'UTC',
      maxAttempts: 3,
      retryRules: { BUSY: { afterMinutes: 1 }, UNANSWERED: { afterMinutes: 1 } },
      ...(postCallMessages ? { postCallMessages } : {}),
    });
    expect((await api('GET', `/campaigns/${campaign.id}`)).json().postCallMessages).toBe(postCallMessages ?? 'FINAL_OUTCOME');
    expect((await api('POST', `/campaigns/${campaign.id}/start`, {})).statusCode).toBe(202);
    for (let tick = 0; tick < 400 && (await api('GET', `/campaigns/${campaign.id}`)).json().status !== 'COMPLETED'; tick++) {
      await dialerTick(t.runtime);
      clock.advance(5_000);
    }
    const calls = (await api('GET', `/call-logs?campaignId=${campaign.id}&limit=200`)).json().data as {
      id: string;
      toNumber: string;
      attempt: number;
      outcome: string;
    }[];
    calls.sort((a, b) => a.toNumber.localeCompare(b.toNumber) || a.attempt - b.attempt);
    const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
    const recorded = [];
    for (const call of calls) recorded.push([call.outcome, await afterCallEnded(t.runtime, { tenantId, callId: call.id })]);
    // Exactly once: a repeated call.ended records nothing more.
    for (const call of calls) expect(await afterCallEnded(t.runtime, { tenantId, callId: call.id })).toBe(0);
    return recorded;
  }

  it('EVERY_ATTEMPT follows up each ended call', async () => {
    expect(await messagesPerCall('EVERY_ATTEMPT')).toEqual([
      ['BUSY', 1],
      ['UNANSWERED', 1],
      ['ANSWERED', 1],
      ['BUSY', 1],
      ['BUSY', 1],
      ['BUSY', 1],
    ]);
  });

  it('FINAL_OUTCOME (the default) follows up only the call that settled the contact: answered, or the last attempt', async () => {
    expect(await messagesPerCall(undefined)).toEqual([
      ['BUSY', 0],
      ['UNANSWERED', 0],
      ['ANSWERED', 1],
      ['BUSY', 0],
      ['BUSY', 0],
      ['BUSY', 1],
    ]);
  });
});

describe('the pre-dial webhook', () => {
  it('asks once per attempt, signed; skip ends SKIPPED pre_dial_skip, a timeout takes onError, and call variables reach the agent', async () => {
    clock.set('2026-11-23T10:00:00.000Z');
    const { key, api } = await tenant();
    const setup = await voiceSetup(t.app, key, [{}, {}, {}]);
    expect(
      (await api('PATCH', `/agents/${setup.agentId}`, { firstMessage: 'Hello {{name|there}}, {{variables.offer|a new offer}} today.' }))
        .statusCode,
    ).toBe(200);
    const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
    const secret = (await toolSigningSecret(tenantCtx(t.runtime, tenantId), setup.agentId))!;
    const asked: { contact: string; attempt: number; verified: boolean }[] = [];
    const server = createServer(async (req, res) => {
      const body = await readBody(req);
      // Signed at the service's (injected) clock: the signature is recomputed here, since the library's
      // verify also checks the timestamp against the real clock.
      const id = String(req.headers['webhook-id']);
      const signedAt = new Date(Number(req.headers['webhook-timestamp']) * 1000);
      const verified =
        signedAt.getTime() === clock.now().getTime() && new Webhook(secret).sign(id, signedAt, body) === req.headers['webhook-signature'];
      const { contact, attempt } = JSON.parse(body) as { contact: { name: string }; attempt: number };
      asked.push({ contact: contact.name, attempt, verified });
      const answer =
        contact.name === 'Contact 1'
          ? { action: 'call', variables: { offer: '20% off' } }
          : contact.name === 'Contact 2'
            ? { action: 'skip' }
            : null;
      if (answer === null) return; // Contact 3: no answer before the deadline
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
    const receiver = await listenOnLoopback(server);
    try {
      const refused = await api('POST', '/campaigns', { name: 'Private pre-dial', ...setup, preDialWebhook: { url: 'ftp://127.0.0.1/x' } });
      expect(refused.statusCode).toBe(400);
      const campaign = await createCampaign(t.app, key, {
        ...setup,
        timezone: 'UTC',
        preDialWebhook: { url: `${receiver.url}/pre-dial`, timeoutMs: 3000, onError: 'SKIP' },
      });
      expect((await api('GET', `/campaigns/${campaign.id}`)).json().preDialWebhook).toEqual({
        url: `${receiver.url}/pre-dial`,
        timeoutMs: 3000,
        onError: 'SKIP',
      });
      expect((await api('POST', `/campaigns/${campaign.id}/start`, {})).statusCode).toBe(202);
      await dialerTick(t.runtime);
      const contacts = await contactsOf(api, campaign.id);
      expect(contacts.map((c) => [c.status, c.skipReason, c.attempts])).toEqual([
        ['IN_PROGRESS', null, 1],
        ['SKIPPED', 'pre_dial_skip', 0],
        ['SKIPPED', 'pre_dial_skip', 0],
      ]);
      expect(asked.sort((a, b) => a.contact.localeCompare(b.contact))).toEqual([
        { contact: 'Contact 1', attempt: 1, verified: true },
        { contact: 'Contact 2', attempt: 1, verified: true },
        { contact: 'Contact 3', attempt: 1, verified: true },
      ]);
      // Answered: the agent's first message carries the webhook's variable.
      clock.advance(2_000);
      await dialerTick(t.runtime);
      await converseOnSimulatedCall(t.runtime, { tenantId, callId: contacts[0]!.lastCallId! });
      const call = (await api('GET', `/call-logs/${contacts[0]!.lastCallId}`)).json();
      expect(call.transcript[0]).toMatchObject({ role: 'agent', text: 'Hello Contact 1, 20% off today.' });
      expect(asked).toHaveLength(3); // asked once per contact and attempt, not on every tick
    } finally {
      server.closeAllConnections();
      await receiver.close();
    }
  });
});
