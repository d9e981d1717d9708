import { randomInt } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSecretsKey } from '../src/platform/secrets.ts';
import { freeLoopbackPort, listenOnLoopback } from '../src/providers/fake-server.ts';
import { startFakeTwilio, type FakeTwilio } from '../src/providers/twilio/fake.ts';
import { createTestDatabase, until } from './harness.ts';
import { apiRequest, startServerProcess, startWorkerProcess, type ServerProcess } from './processes.ts';
import { uniqueNumber } from './voice-fixtures.ts';

// A worker process is SIGKILLed while it holds jobs: SMS sends whose Twilio answer has not come
// back and webhook POSTs whose receiver has not answered. A new worker takes the stranded jobs
// up once their lease (JOBS_RECOVERY_SECONDS, 3 s here) has lapsed: every webhook is delivered,
// and every SMS reaches Twilio exactly once (the ones in flight are not sent again; Twilio's
// status callback then tells what became of them). Two processes on one database: PostgreSQL
// only (PGlite is one process by design).

const TWILIO = { accountSid: `AC${'c3'.repeat(16)}`, authToken: 'twilio-auth-token-crash-0123' };
const CONTACTS = 8;
const RECOVERY_SECONDS = 3;
/**
 * After the lease has lapsed and a worker is up: a sweep (a third of the lease), the send queue's
 * first retry delay (5–10 s), a poll, with room for a loaded machine.
 */
const RESUMED_AFTER_READY_MS = 20_000;

interface LoggedMessage {
  id: string;
  status: string;
  failureReason: string | null;
}

describe.skipIf(!process.env.DATABASE_URL)('jobs of a worker killed mid-batch', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let api: ServerProcess;
  let twilio: FakeTwilio;
  let receiver: { url: string; close(): Promise<void> };
  let first: ServerProcess;
  const workers: ServerProcess[] = [];
  const secretsKey = generateSecretsKey();
  let apiUrl: string;
  /** Webhook requests as they came: webhook-id, when, and the event. */
  const hooks: { id: string; at: number; type: string; data: Record<string, unknown> }[] = [];
  let holdHooks = true;
  const heldHooks: ServerResponse[] = [];

  beforeAll(async () => {
    twilio = await startFakeTwilio(TWILIO);
    receiver = await listenOnLoopback(
      createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; data: Record<string, unknown> };
          hooks.push({ id: String(req.headers['webhook-id']), at: Date.now(), type: event.type, data: event.data });
          if (holdHooks) heldHooks.push(res);
          else res.writeHead(204).end();
        });
      }),
    );
    database = await createTestDatabase('callforge_jobcrash');
    // Twilio posts message statuses to PUBLIC_URL: the API process listens there.
    const port = await freeLoopbackPort();
    apiUrl = `http://127.0.0.1:${port}`;
    // The first worker starts beside the API; it has nothing to do until the campaign starts.
    [api, first] = await Promise.all([
      startServerProcess(
        {
          DATABASE_URL: database!.url,
          SECRETS_KEY: secretsKey,
          PORT: String(port),
          PUBLIC_URL: apiUrl,
          TWILIO_API_URL: twilio.url,
          STARTING_CREDIT: '100000',
          // The webhook receiver is on loopback, refused at save otherwise.
          ALLOW_PRIVATE_URLS: '1',
        },
        ['--role', 'api'],
        90_000,
      ),
      startWorker(),
    ]);
  }, 120_000);

  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    for (const res of heldHooks) res.destroy();
    await api?.stop();
    await Promise.all([receiver?.close(), twilio?.close()]);
    await database?.drop();
  }, 60_000);

  const startWorker = async (healthPort = 0) => {
    const worker = await startWorkerProcess({
      WORKER_HEALTH_PORT: String(healthPort),
      DATABASE_URL: database!.url,
      SECRETS_KEY: secretsKey,
      PUBLIC_URL: apiUrl,
      TWILIO_API_URL: twilio.url,
      ALLOW_PRIVATE_URLS: '1',
      WEBHOOK_RETRY_SECONDS: '1',
      JOBS_RECOVERY_SECONDS: String(RECOVERY_SECONDS),
      JOBS_POLL_SECONDS: '0.5',
      SIMULATOR_RING_SECONDS: '0',
      SIMULATOR_TALK_SECONDS: '1',
      DIALER_TICK_MS: '50',
      DIALER_CALLS_PER_SECOND: '1000',
      DB_POOL_SIZE: '4',
    });
    workers.push(worker);
    return worker;
  };

  async function http(method: string, path: string, token: string | undefined, body?: unknown) {
    const { status, body: answer } = await apiRequest(api.url, method, path, token, body);
    if (status >= 300) throw new Error(`${method} ${path} answered ${status}: ${JSON.stringify(answer)}`);
    return answer;
  }

  it('resumes the stranded jobs within the recovery time: every webhook delivered, every SMS sent exactly once', async () => {
    const tag = randomInt(1_000_000_000).toString(36);
    const signup = await http('POST', '/auth/signup', undefined, {
      tenantName: `Job crash ${tag}`,
      email: `jobs-${tag}@example.com`,
      password: 'long enough password',
    });
    const session = signup.accessToken as string;
    await http('PUT', '/integrations/twilio', session, TWILIO);
    const key = (await http('POST', '/api-keys', session, { name: 'crash', webhookUrl: `${receiver.url}/hook` })).key as string;
    const agent = await http('POST', '/agents', key, { name: `Agent ${tag}` });
    const number = await http('POST', '/voice-numbers', key, { phoneNumber: uniqueNumber(), provider: 'SIMULATOR' });
    const list = await http('POST', '/contact-lists', key, { name: `List ${tag}` });
    await http('POST', `/contact-lists/${list.id as string}/contacts/bulk`, key, {
      contacts: Array.from({ length: CONTACTS }, (_, i) => ({ phoneNumber: `+1212555${String(2000 + i)}`, name: `Contact ${i + 1}` })),
    });
    await http('POST', '/sms-agent/campaigns', key, {
      agentId: agent.id,
      senderNumber: '+14155550123',
      senderProvider: 'TWILIO',
      templates: [{ callStatus: 'ANSWERED', messageBody: 'Thanks for talking with us, {{name|there}}.' }],
    });
    const now = new Date();
    const campaign = await http('POST', '/campaigns', key, {
      name: `Campaign ${tag}`,
      agentId: agent.id,
      voiceNumberId: number.id,
      contactListId: list.id,
      timezone: now.getUTCHours() === 23 && now.getUTCMinutes() >= 50 ? 'Etc/GMT+12' : 'UTC',
      callWindowStart: '00:00',
      callWindowEnd: '23:59',
      callDays: [1, 2, 3, 4, 5, 6, 7],
      maxAttempts: 1,
      maxConcurrentCalls: CONTACTS,
      // New York numbers dialled at whatever hour the test runs: the statutory hours (on by default)
      // would hold them overnight, so this campaign's calls are declared no solicitation.
      callingRules: false,
    });

    // The first worker dials; its SMS sends and webhook POSTs get no answer while it lives.
    const releaseTwilio = twilio.holdMessageAnswers();
    await http('POST', `/campaigns/${campaign.id as string}/start`, key, {});
    await until(
      'the calls to end and the first worker to be mid-send and mid-delivery',
      async () =>
        twilio.messages.size >= 4 &&
        heldHooks.length >= 4 &&
        (await http('GET', `/campaigns/${campaign.id as string}`, key)).status === 'COMPLETED',
      60_000,
    );
    const inFlightSms = new Set([...twilio.messages.values()].map((m) => new URL(m.statusCallback!).searchParams.get('message')!));
    const strandedHooks = new Set(heldHooks.map((_, i) => hooks[i]!.id));

    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    releaseTwilio();
    holdHooks = false;
    for (const res of heldHooks.splice(0)) res.destroy();
    // A new worker starts (as a process manager would restart it); it looks for lapsed leases at once.
    const healthPort = await freeLoopbackPort();
    await startWorker(healthPort);
    const readyMs = Date.now() - killedAt;
    // The worker role's probes, for process managers.
    for (const path of ['/healthz', '/readyz']) {
      const probe = await fetch(`http://127.0.0.1:${healthPort}${path}`);
      expect([path, probe.status, await probe.json()]).toEqual([path, 200, { status: 'ok' }]);
    }
    const deadline = Math.max(readyMs, RECOVERY_SECONDS * 1000) + RESUMED_AFTER_READY_MS;

    // Deadlines from the kill, not stopwatches: the stranded jobs are taken up by the new worker.
    const messagesNow = async () => ((await http('GET', '/messages?limit=200', key)) as { data: LoggedMessage[] }).data;
    const settled = await until(
      'every message to leave QUEUED and SENDING',
      async () => {
        const messages = await messagesNow();
        return messages.length === CONTACTS && messages.every((m) => m.status !== 'QUEUED' && m.status !== 'SENDING') && messages;
      },
      deadline - (Date.now() - killedAt),
    );
    const smsSettledMs = Date.now() - killedAt;
    await until(
      'every stranded webhook delivery to be attempted again',
      () => [...strandedHooks].every((id) => hooks.some((hook) => hook.id === id && hook.at > killedAt)),
      deadline - (Date.now() - killedAt),
    );
    const hooksResumedMs = Math.max(...[...strandedHooks].map((id) => hooks.find((h) => h.id === id && h.at > killedAt)!.at - killedAt));
    console.log(
      `after the SIGKILL: new worker ready ${readyMs} ms, stranded webhooks re-attempted ${hooksResumedMs} ms, stranded SMS settled ${smsSettledMs} ms`,
    );

    // Exactly one Twilio message per message; none of the in-flight ones sent twice.
    const sentFor = new Map<string, number>();
    for (const sms of twilio.messages.values()) {
      const id = new URL(sms.statusCallback!).searchParams.get('message')!;
      sentFor.set(id, (sentFor.get(id) ?? 0) + 1);
    }
    expect(settled.map((m) => sentFor.get(m.id) ?? 0)).toEqual(settled.map(() => 1));
    for (const message of settled) {
      if (inFlightSms.has(message.id))
        expect(message).toMatchObject({ status: 'FAILED', failureReason: expect.stringContaining('Unconfirmed') });
      else expect(message.status).toBe('SENT');
    }
    // Twilio reports the in-flight ones delivered: the unconfirmed messages are corrected by our id.
    for (const sms of twilio.messages.values()) expect(await twilio.sendMessageStatus(sms.sid, 'delivered')).toBeLessThan(300);
    const final = await messagesNow();
    expect(final.filter((m) => inFlightSms.has(m.id)).map((m) => m.status)).toEqual([...inFlightSms].map(() => 'DELIVERED'));

    // The tenant heard of each message in doubt (the default policy, FAIL: not sent again).
    await until(
      'a message.unconfirmed event for every message that was in flight',
      () => [...inFlightSms].every((id) => hooks.some((h) => h.type === 'message.unconfirmed' && h.data.messageId === id)),
      30_000,
    );
    for (const hook of hooks.filter((h) => h.type === 'message.unconfirmed'))
      expect(hook.data).toMatchObject({ policy: 'FAIL', outcome: 'FAILED', channel: 'SMS', provider: 'TWILIO' });

    // Every event is delivered.
    await until(
      'every webhook delivery to be recorded as delivered',
      async () => {
        const page = (await http('GET', '/webhook-deliveries?limit=100', key)) as { data: { status: string }[] };
        return page.data.length >= CONTACTS && page.data.every((d) => d.status === 'DELIVERED');
      },
      30_000,
    );
  }, 180_000);
});
