import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { deliverWebhook, emitEvent } from '../src/modules/events/service.ts';
import { insertDeliveries, insertEvent, recordAttempts } from '../src/modules/events/repo.ts';
import { creditWallet } from '../src/modules/identity/service.ts';
import { manualClock } from '../src/platform/clock.ts';
import { tenantCtx } from '../src/platform/context.ts';
import { listenOnLoopback } from '../src/providers/fake-server.ts';
import { capturedLog, createKey, signUp, startTestApp, until, type TestApp } from './harness.ts';
import { apiAs, uniqueNumber } from './voice-fixtures.ts';

// Contract §9: events from real changes, signed per Standard Webhooks, retried with backoff,
// every attempt recorded. The receiver verifies each delivery with the reference library.
// The clock starts at the real time (signatures carry it; receivers check it is recent).
const clock = manualClock(new Date());
let t: TestApp;
const logged = capturedLog('info');
let receiver: { url: string; close(): Promise<void> };
/** What the receiver got, per path: headers, body, and the status it answered. */
const received: Record<string, { headers: IncomingHttpHeaders; body: string; answered: number }[]> = {};
/** Statuses each path answers in turn; 200 once the list is used up. */
const answers: Record<string, number[]> = {};

beforeAll(async () => {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      const answered = answers[path]?.shift() ?? 200;
      (received[path] ??= []).push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered });
      res.writeHead(answered, { 'content-type': 'text/plain' }).end(answered === 200 ? 'ok' : 'try again');
    });
  });
  receiver = await listenOnLoopback(server);
  t = await startTestApp({
    clock,
    log: logged.log,
    env: {
      ALLOW_PRIVATE_URLS: '1',
      WEBHOOK_RETRY_SECONDS: '1',
      SIMULATOR_RING_SECONDS: '0',
      SIMULATOR_TALK_SECONDS: '30',
      JOBS_POLL_SECONDS: '0.5',
      STARTING_CREDIT: '10',
      LOW_BALANCE_THRESHOLD: '5',
    },
  });
});
afterAll(async () => {
  await t.close();
  await receiver.close();
});

let workersStarted = false;
const startWorkers = async () => {
  if (workersStarted) return;
  workersStarted = true;
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
};

async function tenant() {
  const session = (await signUp(t.app)).token;
  const owner = await createKey(t.app, session);
  const api = apiAs(t.app, owner.key);
  const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
  return { session, api, tenantId };
}

/** An answered inbound call of `talkSeconds` on a fresh SIMULATOR number of the agent. */
async function call(api: ReturnType<typeof apiAs>, agentId: string, talkSeconds = 30) {
  const number = (
    await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'SIMULATOR', inboundAgentId: agentId })
  ).json();
  const placed = (await api('POST', '/simulator/inbound-calls', { voiceNumberId: number.id, fromNumber: uniqueNumber() })).json();
  await dialerTick(t.runtime); // answered at once (ring 0 s)
  clock.advance(talkSeconds * 1000);
  await dialerTick(t.runtime); // ended
  return placed.id as string;
}

describe('webhook deliveries', () => {
  it('signs per Standard Webhooks and retries a failing receiver with one webhook-id until it answers 200', async () => {
    const { session, api } = await tenant();
    const hook = await createKey(t.app, session, { name: 'CRM', webhookUrl: `${receiver.url}/retry` });
    answers['/retry'] = [500, 500, 500];
    const agentId = (await api('POST', '/agents', { name: 'Caller' })).json().id;
    const callId = await call(api, agentId);
    await startWorkers();

    const attempts = await until('four attempts', () => (received['/retry']?.length ?? 0) >= 4 && received['/retry'], 40_000);
    expect(attempts.map((a) => a.answered)).toEqual([500, 500, 500, 200]);
    expect(new Set(attempts.map((a) => a.headers['webhook-id'])).size).toBe(1);
    const verifier = new Webhook(hook.webhookSecret!);
    for (const attempt of attempts) {
      const payload = verifier.verify(attempt.body, attempt.headers as Record<string, string>) as {
        type: string;
        timestamp: string;
        data: { id: string; status: string; outcome: string };
      };
      expect(payload).toMatchObject({ type: 'call.completed', data: { id: callId, status: 'ENDED', outcome: 'ANSWERED' } });
    }
    expect(() =>
      new Webhook(`whsec_${Buffer.from('not the secret, not at all').toString('base64')}`).verify(
        attempts[0]!.body,
        attempts[0]!.headers as Record<string, string>,
      ),
    ).toThrow();

    // Each attempt is recorded on the delivery.
    const list = await until('the delivery recorded as DELIVERED', async () => {
      const page = (await api('GET', '/webhook-deliveries?eventType=call.completed')).json();
      return page.data[0]?.status === 'DELIVERED' && page;
    });
    expect(list.total).toBe(1);
    expect(list.data[0]).toMatchObject({
      status: 'DELIVERED',
      attemptCount: 4,
      lastStatusCode: 200,
      eventId: attempts[0]!.headers['webhook-id'],
      apiKeyId: hook.id,
      url: `${receiver.url}/retry`,
    });
    expect(list.data[0].attempts.map((a: { statusCode: number }) => a.statusCode)).toEqual([500, 500, 500, 200]);

    // Each failed attempt is one log line with the reason: a receiver that is down is no bug, so no stack trace.
    const failures = logged.entries.filter((entry) => entry.queue === 'webhook.deliver');
    expect(failures.map((entry) => [entry.msg, entry.retryCount, 'err' in entry])).toEqual(
      [0, 1, 2].map((retryCount) => ['job failed: The receiver answered HTTP 500.', retryCount, false]),
    );
  }, 60_000);

  it("moves a key's webhooks to a new URL with PATCH, keeping its signing secret; a key given its first URL gets one, once", async () => {
    const { session, api } = await tenant();
    const patch = (token: string, id: string, payload: Record<string, unknown>) =>
      t.app.inject({ method: 'PATCH', url: `/api/v1/api-keys/${id}`, headers: { authorization: `Bearer ${token}` }, payload });
    const hook = await createKey(t.app, session, { name: 'CRM', webhookUrl: `${receiver.url}/moved-from` });
    const moved = await patch(session, hook.id, { webhookUrl: `${receiver.url}/moved-to`, name: 'CRM v2' });
    expect(moved.statusCode).toBe(200);
    expect(moved.json()).toMatchObject({ id: hook.id, name: 'CRM v2', webhookUrl: `${receiver.url}/moved-to` });
    expect(moved.json().webhookSecret).toBeUndefined();
    const agentId = (await api('POST', '/agents', { name: 'Mover' })).json().id;
    const callId = await call(api, agentId);
    await startWorkers();
    const [delivery] = await until('the delivery at the new URL', () =>
      received['/moved-to']?.length ? received['/moved-to'] : undefined,
    );
    expect(new Webhook(hook.webhookSecret!).verify(delivery!.body, delivery!.headers as Record<string, string>)).toMatchObject({
      type: 'call.completed',
      data: { id: callId },
    });
    expect(received['/moved-from']).toBeUndefined();

    const plain = await createKey(t.app, session, { name: 'No hook yet' });
    const first = (await patch(session, plain.id, { webhookUrl: `${receiver.url}/first` })).json();
    expect(first.webhookSecret).toMatch(/^whsec_/);
    expect((await patch(session, plain.id, { webhookUrl: `${receiver.url}/second` })).json().webhookSecret).toBeUndefined();
    expect((await patch(session, plain.id, { webhookUrl: null })).json()).toMatchObject({ webhookUrl: null });

    expect((await patch(session, hook.id, {})).statusCode).toBe(400);
    expect((await patch(session, hook.id, { webhookUrl: 'ftp://example.com/' })).statusCode).toBe(400);
    expect((await patch(hook.key, hook.id, { name: 'x' })).json()).toMatchObject({
      statusCode: 403,
      message: 'API key authentication is not allowed for this route',
    });
    const stranger = await tenant();
    expect((await patch(stranger.session, hook.id, { name: 'mine' })).statusCode).toBe(404);
  }, 60_000);

  it("sends a key pinned to an agent only that agent's calls, and an unpinned key every call", async () => {
    const { session, api } = await tenant();
    const [first, second] = [
      (await api('POST', '/agents', { name: 'First' })).json().id,
      (await api('POST', '/agents', { name: 'Second' })).json().id,
    ];
    await createKey(t.app, session, { name: 'All', webhookUrl: `${receiver.url}/all-${first}` });
    await createKey(t.app, session, { name: 'Pinned', webhookUrl: `${receiver.url}/pinned-${first}`, agentId: first });
    await startWorkers();
    const calls = [await call(api, first), await call(api, second)];
    const callIds = (path: string) => (received[path] ?? []).map((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id).sort();
    await until('both calls at the unpinned key', () => callIds(`/all-${first}`).length === 2);
    await until("the first agent's call at the pinned key", () => callIds(`/pinned-${first}`).length === 1);
    expect(callIds(`/all-${first}`)).toEqual([...calls].sort());
    expect(callIds(`/pinned-${first}`)).toEqual([calls[0]]);
  }, 60_000);

  it('writes events in the transaction of the change: nothing from a rolled-back one, and nothing lost while no worker runs', async () => {
    const { session, tenantId, api } = await tenant();
    await createKey(t.app, session, { name: 'CRM', webhookUrl: `${receiver.url}/tx-${tenantId}` });
    const ctx = tenantCtx(t.runtime, tenantId);
    await t.runtime.db
      .transaction(async (tx) => {
        await emitEvent({ ...ctx, db: tx }, 'campaign.status_changed', { campaignId: 'rolled-back' }, null);
        throw new Error('the change failed');
      })
      .catch(() => undefined);
    const stored = async () => (await t.runtime.db.query('SELECT 1 FROM webhook_events WHERE tenant_id = $1', [tenantId])).rowCount;
    expect(await stored()).toBe(0);
    // Committed while workers may be down: it waits in the queue and is delivered once they run.
    await t.runtime.db.transaction((tx) => emitEvent({ ...ctx, db: tx }, 'campaign.status_changed', { campaignId: 'committed' }, null));
    expect(await stored()).toBe(1);
    await startWorkers();
    const [delivered] = await until('the committed event', () => received[`/tx-${tenantId}`]);
    expect(JSON.parse(delivered!.body)).toMatchObject({ type: 'campaign.status_changed', data: { campaignId: 'committed' } });
    expect((await api('GET', '/webhook-deliveries')).json().total).toBe(1);
  }, 30_000);

  it('announces wallet.low_balance once per crossing below the threshold', async () => {
    const { session, tenantId, api } = await tenant();
    await createKey(t.app, session, { name: 'Finance', webhookUrl: `${receiver.url}/wallet-${tenantId}` });
    await startWorkers();
    const agentId = (await api('POST', '/agents', { name: 'Talker' })).json().id;
    await creditWallet(t.runtime.db, tenantId, '-4.99', 'test: just above the threshold of 5'); // 10 → 5.01
    const lowEvents = async () => (await api('GET', '/webhook-deliveries?eventType=wallet.low_balance')).json().total as number;
    await call(api, agentId, 60); // crosses below 5
    await call(api, agentId, 60); // still below: no second event
    expect(await lowEvents()).toBe(1);
    await creditWallet(t.runtime.db, tenantId, '10', 'test: top up'); // back above
    await call(api, agentId, 1);
    expect(await lowEvents()).toBe(1);
    await creditWallet(
      t.runtime.db,
      tenantId,
      (-(Number((await api('GET', '/profile')).json().data.wallet.balance) - 5.0001)).toFixed(4),
      'test: down to 5.0001',
    );
    await call(api, agentId, 60); // crosses again
    expect(await lowEvents()).toBe(2);
    const first = await until('the first low-balance delivery', () =>
      received[`/wallet-${tenantId}`]?.find((r) => r.body.includes('"wallet.low_balance"')),
    );
    expect(JSON.parse(first.body)).toMatchObject({
      type: 'wallet.low_balance',
      data: { threshold: '5.0000', currency: 'USD', balance: expect.stringMatching(/^4\.\d{4}$/) },
    });
  }, 60_000);

  it("announces campaign status changes, lists deliveries with filters, redelivers with the same webhook-id, and hides other tenants' deliveries", async () => {
    const { session, api, tenantId } = await tenant();
    await createKey(t.app, session, { name: 'CRM', webhookUrl: `${receiver.url}/campaigns-${tenantId}` });
    await startWorkers();
    const agentId = (await api('POST', '/agents', { name: 'Dialer' })).json().id;
    const number = (await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'SIMULATOR' })).json();
    const list = (await api('POST', '/contact-lists', { name: 'Two' })).json();
    await api('POST', `/contact-lists/${list.id}/contacts/bulk`, {
      contacts: [{ phoneNumber: uniqueNumber() }, { phoneNumber: uniqueNumber() }],
    });
    const campaign = (
      await api('POST', '/campaigns', {
        name: 'Webhooked',
        agentId,
        voiceNumberId: number.id,
        contactListId: list.id,
        timezone: 'UTC',
        callWindowStart: '00:00',
        callWindowEnd: '23:59',
      })
    ).json();
    expect((await api('POST', `/campaigns/${campaign.id}/start`, {})).statusCode).toBe(202);
    expect((await api('POST', `/campaigns/${campaign.id}/pause`, {})).statusCode).toBe(202);
    const statuses = async () =>
      (
        (await api('GET', '/webhook-deliveries?eventType=campaign.status_changed&limit=200')).json().data as {
          payload: { data: { status: string } };
          createdAt: string;
        }[]
      )
        .map((d) => d.payload.data.status)
        .reverse();
    expect(await statuses()).toEqual(['RUNNING', 'PAUSED']);

    const delivered = await until('both deliveries made', async () => {
      const page = (await api('GET', '/webhook-deliveries?status=DELIVERED')).json();
      // A page's rows and its total are read by two statements side by side (two snapshots on
      // PostgreSQL): wait for both to show the two deliveries.
      return page.total === 2 && page.data.length === 2 && page;
    });
    const one = delivered.data[0];
    expect((await api('GET', `/webhook-deliveries/${one.id}`)).json()).toMatchObject({ id: one.id, status: 'DELIVERED', attemptCount: 1 });
    const redelivery = await api('POST', `/webhook-deliveries/${one.id}/redeliver`, {});
    expect(redelivery.statusCode).toBe(202);
    expect(redelivery.json()).toMatchObject({ id: one.id, eventId: one.eventId, status: 'PENDING', attemptCount: 1 });
    const again = await until('the redelivery', async () => {
      const view = (await api('GET', `/webhook-deliveries/${one.id}`)).json();
      return view.attemptCount === 2 && view.status === 'DELIVERED' && view;
    });
    expect(again.attempts).toHaveLength(2);
    const ids = (received[`/campaigns-${tenantId}`] ?? [])
      .filter((r) => (JSON.parse(r.body) as { data: { status: string } }).data.status === one.payload.data.status)
      .map((r) => r.headers['webhook-id']);
    expect(ids).toEqual([one.eventId, one.eventId]);

    const other = await tenant();
    expect((await other.api('GET', `/webhook-deliveries/${one.id}`)).statusCode).toBe(404);
    expect((await other.api('POST', `/webhook-deliveries/${one.id}/redeliver`, {})).statusCode).toBe(404);
    expect((await other.api('GET', '/webhook-deliveries')).json().total).toBe(0);
    expect((await api('GET', '/webhook-deliveries?status=LOST')).statusCode).toBe(400);
  }, 60_000);

  it('fails at once, without a retry, a delivery to an address the rules refuse', async () => {
    const { session, tenantId, api } = await tenant();
    const key = await createKey(t.app, session, { name: 'Intranet', webhookUrl: 'http://10.0.0.7/hooks' });
    // A delivery without its job, driven here with the address rule on (this app allows private URLs).
    const [eventId, deliveryId] = [randomUUID(), randomUUID()];
    await insertEvent(t.runtime.db, tenantId, { id: eventId, type: 'wallet.low_balance', agentId: null, data: {}, at: clock.now() });
    await insertDeliveries(t.runtime.db, tenantId, eventId, [{ id: deliveryId, apiKeyId: key.id, url: 'http://10.0.0.7/hooks' }]);
    const strict = { ...t.runtime, config: { ...t.runtime.config, allowPrivateUrls: false } };
    await deliverWebhook(strict, { tenantId, deliveryId }, { retryCount: 0 });
    expect((await api('GET', `/webhook-deliveries/${deliveryId}`)).json()).toMatchObject({
      status: 'FAILED',
      attemptCount: 1,
      lastStatusCode: null,
      lastError: expect.stringContaining('10.0.0.7 is a private address'),
    });
  });
  it('delivers a batch handled at once with shared statements: each signed with its own key, a delivery run twice recorded twice', async () => {
    const { session, tenantId, api } = await tenant();
    const keys = await Promise.all(
      ['one', 'two'].map(async (name) => ({
        name,
        ...(await createKey(t.app, session, { name, webhookUrl: `${receiver.url}/batch-${name}` })),
      })),
    );
    const deliveries = Array.from({ length: 6 }, (_, n) => ({ id: randomUUID(), key: keys[n % 2]! }));
    const eventId = randomUUID();
    await insertEvent(t.runtime.db, tenantId, { id: eventId, type: 'wallet.low_balance', agentId: null, data: { n: 1 }, at: clock.now() });
    await insertDeliveries(
      t.runtime.db,
      tenantId,
      eventId,
      deliveries.map(({ id, key }) => ({ id, apiKeyId: key.id, url: `${receiver.url}/batch-${key.name}` })),
    );
    // As a parallel batch of jobs does: all at once, the first delivery twice (a redelivery's job beside the original).
    await Promise.all(
      [...deliveries, deliveries[0]!].map(({ id }) => deliverWebhook(t.runtime, { tenantId, deliveryId: id }, { retryCount: 0 })),
    );
    for (const [index, { id }] of deliveries.entries()) {
      const delivery = (await api('GET', `/webhook-deliveries/${id}`)).json();
      expect(delivery).toMatchObject({ status: 'DELIVERED', lastStatusCode: 200, attemptCount: index === 0 ? 2 : 1 });
      expect(delivery.attempts.map((attempt: { attempt: number }) => attempt.attempt)).toEqual(index === 0 ? [1, 2] : [1]);
    }
    // Two attempts of one delivery recorded by one statement (two of its jobs answered in the same turn): numbered in order, the last one's status kept.
    const twice = randomUUID();
    await insertDeliveries(t.runtime.db, tenantId, eventId, [{ id: twice, apiKeyId: keys[0]!.id, url: `${receiver.url}/batch-one` }]);
    const attempt = (statusCode: number, status: 'PENDING' | 'DELIVERED') => ({
      deliveryId: twice,
      at: clock.now(),
      statusCode,
      error: status === 'PENDING' ? `The receiver answered HTTP ${statusCode}.` : null,
      durationMs: 3,
      status,
    });
    await recordAttempts(t.runtime.db, tenantId, [attempt(503, 'PENDING'), attempt(200, 'DELIVERED')]);
    const recorded = (await api('GET', `/webhook-deliveries/${twice}`)).json();
    expect(recorded).toMatchObject({ status: 'DELIVERED', attemptCount: 2, lastStatusCode: 200, lastError: null });
    expect(recorded.attempts.map((one: { attempt: number; statusCode: number }) => [one.attempt, one.statusCode])).toEqual([
      [1, 503],
      [2, 200],
    ]);
    for (const key of keys) {
      const got = received[`/batch-${key.name}`]!;
      expect(got).toHaveLength(key.name === 'one' ? 4 : 3);
      const verifier = new Webhook(key.webhookSecret!);
      for (const { headers, body } of got) expect(() => verifier.verify(body, headers as Record<string, string>)).not.toThrow();
    }
  });
});
