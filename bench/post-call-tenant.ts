/**
 * What the post-call benches (messaging.ts, scale-out.ts) share: a tenant with WhatsApp connected
 * (to a local fake of the Graph API) and an agent with a WhatsApp and an SMS (SIMULATOR) campaign,
 * set up through the API as a dashboard user would; then N ended calls with their `call.ended` jobs.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from '../src/platform/db.ts';
import type { JobQueue } from '../src/platform/jobs.ts';
import { CALL_ENDED, type CallEndedJob } from '../src/modules/calls/service.ts';
import { startFakeWhatsApp } from '../src/providers/whatsapp-cloud/fake.ts';
import { startTypeScriptWorker } from '../src/platform/worker.ts';
import { onCleanup } from './harness.ts';

const WHATSAPP = {
  accessToken: 'EAAG-bench-access-token-0123456789',
  appSecret: 'bench-app-secret-0123456789',
  wabaId: '102290129340398',
  sender: '106540352242922',
};
const ENQUEUE_BATCH = 500;

/** The fake Graph API the bench tenant is connected to; its `messages` are what it received. */
export const startBenchWhatsApp = () =>
  startFakeWhatsApp({
    accessToken: WHATSAPP.accessToken,
    businessAccountId: WHATSAPP.wabaId,
    phoneNumbers: [{ id: WHATSAPP.sender, displayPhoneNumber: '+1 555-000-1234', verifiedName: 'Bench Clinic', qualityRating: 'GREEN' }],
  });

/** The fake Graph API in this process, closed at exit. */
export async function fakeWhatsApp() {
  const graph = await startBenchWhatsApp();
  onCleanup('close the fake WhatsApp', () => graph.close());
  return graph;
}

/**
 * The fake Graph API on a thread of its own (whatsapp-thread.ts), closed at exit: for a bench whose
 * workers run in this process, so that serving the fake is not counted as their work (a real
 * provider is another machine). `received()` asks it how many messages it took.
 */
export async function fakeWhatsAppOnThread(): Promise<{ url: string; received(): Promise<number> }> {
  const thread = startTypeScriptWorker(new URL('./whatsapp-thread.ts', import.meta.url));
  const next = () =>
    new Promise<{ url?: string; received?: number }>((resolve, reject) => {
      thread.once('message', resolve);
      thread.once('error', reject);
    });
  const { url } = await next();
  onCleanup('close the fake WhatsApp', () => thread.terminate().then(() => undefined));
  return {
    url: url!,
    async received() {
      const answer = next();
      thread.postMessage('received');
      return (await answer).received!;
    },
  };
}

export type Request = (
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  token: string | undefined,
  payload?: object,
) => Promise<Record<string, unknown>>;

/** Signs up a tenant, connects WhatsApp, creates an API key, an agent and its two campaigns. */
export async function setUpPostCallTenant(request: Request): Promise<{ tenantId: string; agentId: string; key: string }> {
  const suffix = randomBytes(6).toString('hex');
  const session = await request('POST', '/auth/signup', undefined, {
    tenantName: `Bench ${suffix}`,
    email: `bench-${suffix}@example.com`,
    password: randomBytes(18).toString('base64url'),
  });
  const token = session.accessToken as string;
  const tenantId = (session.user as { tenantId: string }).tenantId;
  await request('PUT', '/integrations/whatsapp', token, {
    businessAccountId: WHATSAPP.wabaId,
    accessToken: WHATSAPP.accessToken,
    appSecret: WHATSAPP.appSecret,
    phoneNumberId: WHATSAPP.sender,
  });
  const key = (await request('POST', '/api-keys', token, { name: 'bench' })).key as string;
  const agentId = (await request('POST', '/agents', key, { name: 'Bench agent' })).id as string;
  await request('POST', '/whatsapp/campaigns', key, {
    agentId,
    templates: [{ templateName: 'thanks', process: 'OUTGOING', callStatus: 'ANSWERED', bodyParameters: ['{{phoneNumber}}'] }],
  });
  await request('POST', '/sms-agent/campaigns', key, {
    agentId,
    senderNumber: '+14155550000',
    senderProvider: 'SIMULATOR',
    templates: [{ callStatus: 'ANSWERED', messageBody: 'Thanks for talking with us.' }],
  });
  return { tenantId, agentId, key };
}

/**
 * N ended calls, written directly, and one call.ended job each (what the end of a call enqueues);
 * `batch` calls' jobs per transaction (all of them: the jobs appear at once, on commit).
 */
export async function endedCalls(
  runtime: { db: Db; jobs: JobQueue },
  tenant: { tenantId: string; agentId: string },
  calls: number,
  batch = ENQUEUE_BATCH,
): Promise<number> {
  const { rows } = await runtime.db.query<{ id: string }>(
    `INSERT INTO calls (tenant_id, id, agent_id, direction, from_number, to_number, status, outcome, provider, answered_at, ended_at, duration_sec)
     SELECT $1, gen_random_uuid(), $2, 'OUTGOING', '+14155550000', '+1212' || lpad((2000000 + i)::text, 7, '0'), 'ENDED', 'ANSWERED', 'SIMULATOR', now(), now(), 30
     FROM generate_series(1, $3::int) AS i RETURNING id`,
    [tenant.tenantId, tenant.agentId, calls],
  );
  for (let start = 0; start < rows.length; start += batch) {
    await runtime.db.transaction(async (tx) => {
      for (const row of rows.slice(start, start + batch))
        await runtime.jobs.send<CallEndedJob>(CALL_ENDED, { tenantId: tenant.tenantId, callId: row.id }, { tx });
    });
  }
  return rows.length;
}
