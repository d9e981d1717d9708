import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import type { RehearsedContact } from '../src/modules/rehearsals/schemas.ts';
import { REHEARSE_CAMPAIGN, rehearseCampaign, rehearseCampaignJob } from '../src/modules/rehearsals/service.ts';
import { manualClock } from '../src/platform/clock.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { refusedWrites, startTestApp, until, type TestApp } from './harness.ts';
import { apiAs, newTenant, uniqueNumber } from './voice-fixtures.ts';

// Issue 41, item 4: a campaign rehearsed over (a sample of) its list without dialling: the
// dialer's own verdicts, the conversation with the scripted contact on the real engine (offline
// and with a model on a fake OpenAI-compatible server), the follow-ups and a cost forecast.
// 2026-11-23 is a Monday; 15:00Z is 10:00 in New York and 00:00 (Tuesday) in Tokyo.
const clock = manualClock('2026-11-23T15:00:00.000Z');
let t: TestApp;
let chat: Awaited<ReturnType<typeof startFakeChat>>;

beforeAll(async () => {
  chat = await startFakeChat();
  t = await startTestApp({
    clock,
    env: {
      ALLOW_PRIVATE_URLS: '1',
      SIMULATOR_RING_SECONDS: '0',
      SIMULATOR_TALK_SECONDS: '1',
      DIALER_CALLS_PER_SECOND: '1000',
      RATE_LLM_MODELS: '{"judge-model": {"input": "1", "output": "2"}}',
    },
  });
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
});
afterAll(async () => {
  await t?.close();
  await chat?.close();
});
// A test that ended early leaves the fake model nothing of its own for the next.
afterEach(() => {
  chat.answerBy(undefined);
  chat.forget();
});

type Api = ReturnType<typeof apiAs>;
type Contact = RehearsedContact;

/** Rows of every table a dial, a message, a bill or a compliance record would add to, for one tenant. */
async function footprint(api: Api) {
  const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
  const counts: Record<string, number> = {};
  for (const table of [
    'calls',
    'campaign_contacts',
    'compliance_records',
    'wallet_transactions',
    'messages',
    'dial_counts',
    'webhook_events',
  ]) {
    const { rows } = await t.runtime.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`, [tenantId]);
    counts[table] = rows[0]!.n;
  }
  return counts;
}

async function made(response: { statusCode: number; body: string; json(): unknown }) {
  expect([response.statusCode, response.body]).toEqual([201, expect.anything()]);
  return response.json() as { id: string };
}

async function listOf(api: Api, contacts: Record<string, unknown>[]) {
  const list = (await api('POST', '/contact-lists', { name: `List ${uniqueNumber()}` })).json();
  expect((await api('POST', `/contact-lists/${list.id}/contacts/bulk`, { contacts })).json().imported).toBe(contacts.length);
  return list.id as string;
}

const rehearsed = (api: Api, campaignId: string, id: string) =>
  until(
    `rehearsal ${id} to finish`,
    async () => {
      const got = (await api('GET', `/campaigns/${campaignId}/rehearsals/${id}`)).json();
      return ['DONE', 'FAILED'].includes(got.status) && got;
    },
    60_000,
  );

async function rehearse(api: Api, campaignId: string, body: Record<string, unknown>) {
  const posted = await api('POST', `/campaigns/${campaignId}/rehearsals`, body);
  expect([posted.statusCode, posted.body]).toEqual([202, expect.anything()]);
  expect(posted.json()).toMatchObject({ status: 'QUEUED', contacts: [] });
  return rehearsed(api, campaignId, posted.json().id);
}

const PLAIN = '+12125550101';
const LISTED = '+12125550102';
const UNCONSENTED = '+12125550103';
const IN_TOKYO = '+12125550104';
const CALLED_TODAY = '+12125550105';

describe('a campaign rehearsal on the retrieval agent', () => {
  it("gives each contact the dialer's own verdict, converses with the scripted contact, forecasts the cost, and writes nothing else", async () => {
    const { api, key } = await newTenant(t.app);
    expect((await api('PUT', '/compliance/settings', { maxCallsPerDay: 1 })).statusCode).toBe(200);
    const agent = await made(
      await api('POST', '/agents', { name: 'Desk', firstMessage: 'Hello {{name|there}}, this is the clinic calling about your visit.' }),
    );
    const number = (await api('POST', '/voice-numbers', { phoneNumber: uniqueNumber(), provider: 'SIMULATOR' })).json();
    for (const phoneNumber of [PLAIN, IN_TOKYO, CALLED_TODAY])
      expect((await api('POST', '/consents', { phoneNumber, channel: 'voice', source: 'web-form' })).statusCode).toBe(201);
    expect((await api('POST', '/dnc', { phoneNumber: LISTED, reason: 'Asked by e-mail' })).statusCode).toBe(201);
    const common = { agentId: agent.id, voiceNumberId: number.id, callingRules: false, timezone: 'America/New_York' };

    // A call to CALLED_TODAY placed and ended by the dialer, today: the tenant's one call a day.
    const earlier = await made(
      await api('POST', '/campaigns', {
        ...common,
        name: 'Earlier',
        contactListId: await listOf(api, [{ phoneNumber: CALLED_TODAY }, { phoneNumber: '+12125550106' }]),
        maxAttempts: 1,
      }),
    );
    const started = await api('POST', `/campaigns/${earlier.id}/start`, {});
    expect([started.statusCode, started.body]).toEqual([202, '']);
    await until('the earlier call to end', async () => {
      await dialerTick(t.runtime);
      clock.advance(1_000);
      return (await api('GET', `/campaigns/${earlier.id}`)).json().status === 'COMPLETED';
    });
    const from = '2026-11-23T16:00:00.000Z'; // 11:00 in New York, 01:00 in Tokyo

    const contactListId = await listOf(api, [
      { phoneNumber: PLAIN, name: 'Ana', metadata: { simulate: { say: ['Hello?', 'visit => Yes, I am coming on Friday.', 'Goodbye.'] } } },
      { phoneNumber: LISTED, name: 'Ben' },
      { phoneNumber: UNCONSENTED, name: 'Cy' },
      { phoneNumber: IN_TOKYO, name: 'Dee', timezone: 'Asia/Tokyo' },
      { phoneNumber: CALLED_TODAY, name: 'Eve' },
    ]);
    const campaign = await made(
      await api('POST', '/campaigns', {
        ...common,
        name: 'Rehearsed',
        contactListId,
        callWindowStart: '09:00',
        callWindowEnd: '17:00',
        callDays: [1, 2, 3, 4, 5],
        windowTimeZone: 'CONTACT',
        requireConsent: true,
        simulatorScript: ['Hi, who is this?', 'OK, thanks.'],
      }),
    );
    const before = await footprint(api);

    const report = await rehearse(api, campaign.id, { sample: 5, from });
    expect(report.status).toBe('DONE');
    expect(report.brain).toBe('retrieval-agent');
    const byNumber = new Map<string, Contact>(report.contacts.map((c: Contact) => [c.phoneNumber, c]));
    expect(report.contacts.map((c: Record<string, unknown>) => [c.phoneNumber, c.verdict, c.reason, c.wouldBeCalled])).toEqual([
      [PLAIN, 'dial', null, true],
      [LISTED, 'skip', 'dnc', false],
      [UNCONSENTED, 'skip', 'no_consent', false],
      [IN_TOKYO, 'wait', 'outside_window', true],
      [CALLED_TODAY, 'wait', 'frequency_cap', true],
    ]);
    expect(report.summary).toEqual({
      contacts: 5,
      wouldBeCalled: 3,
      byVerdict: { dial: 1, skip: 2, wait: 2 },
      byReason: { dnc: 1, no_consent: 1, outside_window: 1, frequency_cap: 1 },
    });
    expect(byNumber.get(LISTED)!.why).toBe('Never dialled: the number is on the do-not-call list.');
    expect(byNumber.get(PLAIN)!.firstCallAt).toEqual({
      utc: from,
      local: [{ timeZone: 'America/New_York', time: '2026-11-23T11:00:00-05:00' }],
    });
    // Tokyo's 09:00 on Monday the 23rd has passed (it is 01:00 on Tuesday there): 09:00 Tuesday.
    expect(byNumber.get(IN_TOKYO)!.firstCallAt).toEqual({
      utc: '2026-11-24T00:00:00.000Z',
      local: [{ timeZone: 'Asia/Tokyo', time: '2026-11-24T09:00:00+09:00' }],
    });
    // Called at 15:00 today, under the tenant's one call a day: free again at 15:00 tomorrow.
    expect(byNumber.get(CALLED_TODAY)!.firstCallAt!.utc).toBe('2026-11-24T15:00:00.000Z');

    // The conversations: the contact's own script (a reaction to the agent's words), else the campaign's.
    const ana = byNumber.get(PLAIN)!;
    expect(ana.conversation!.persona).toEqual(['Hello?', 'visit => Yes, I am coming on Friday.', 'Goodbye.']);
    const said = ana.conversation!.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text]);
    expect(said[0]).toEqual(['agent', 'Hello Ana, this is the clinic calling about your visit.']);
    expect(said.filter(([role]: string[]) => role === 'contact').map(([, text]: string[]) => text)).toEqual([
      'Yes, I am coming on Friday.',
      'Hello?',
      'Goodbye.',
    ]);
    expect(byNumber.get(CALLED_TODAY)!.conversation!.persona).toEqual(['Hi, who is this?', 'OK, thanks.']);
    for (const skipped of [LISTED, UNCONSENTED])
      expect(byNumber.get(skipped)).toMatchObject({ conversation: null, followUp: null, cost: null });
    expect(ana.followUp!.answered).toEqual({ messages: [], none: 'The agent has no active WhatsApp or SMS campaign.' });

    // The forecast: no model ran (nothing measured to bill); the line and the speech are estimates, priced.
    expect(ana.cost!.basis).toEqual({ telephony: 'estimate', stt: 'estimate', tts: 'estimate', llm: 'measured', platformFee: 'estimate' });
    expect(ana.cost!.usage).toMatchObject({ llmTokens: 0, llmModel: null });
    expect(ana.cost!.talkSeconds).toBeGreaterThan(0);
    expect(ana.cost!.usage.telephonySeconds).toBe(ana.cost!.talkSeconds);
    expect(Number(ana.cost!.cost.total)).toBeGreaterThan(0);
    const sum = report.contacts.reduce((total: number, c: Contact) => total + Number(c.cost?.cost.total ?? 0), 0);
    expect(Number(report.costTotal)).toBeCloseTo(sum, 4);
    expect(report.billed).toBe('0.0000');

    // Nothing was dialled, sent, billed or recorded; the campaign is still a draft.
    expect(await footprint(api)).toEqual(before);
    expect((await api('GET', `/campaigns/${campaign.id}`)).json().status).toBe('DRAFT');

    // The same sample again: the same contacts, in the list's order.
    const three = await rehearse(api, campaign.id, { sample: 3, from });
    const again = await rehearse(api, campaign.id, { sample: 3, from });
    expect(three.contacts.map((c: { contactId: string }) => c.contactId)).toEqual(
      again.contacts.map((c: { contactId: string }) => c.contactId),
    );
    expect(three.contacts).toHaveLength(3);
    const positions = three.contacts.map((c: { position: number }) => c.position);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));

    // The dialer, at the same instant, decides exactly what the rehearsal said.
    clock.set(from);
    expect((await api('POST', `/campaigns/${campaign.id}/start`, {})).statusCode).toBe(202);
    await dialerTick(t.runtime);
    const records = (await api('GET', `/campaigns/${campaign.id}/compliance-records?format=json`)).json() as Record<string, unknown>[];
    const decided = new Map(records.map((record) => [record.phoneNumber, [record.verdict, record.reason]]));
    for (const contact of report.contacts)
      expect([contact.phoneNumber, ...decided.get(contact.phoneNumber)!]).toEqual([contact.phoneNumber, contact.verdict, contact.reason]);
    const contacts = (await api('GET', `/campaigns/${campaign.id}/contacts`)).json().data as Record<string, unknown>[];
    for (const contact of contacts) {
      const rehearsal = byNumber.get(contact.phoneNumber as string)!;
      if (rehearsal.verdict === 'wait')
        expect([contact.waitReason, contact.nextAttemptAt]).toEqual([rehearsal.reason, rehearsal.firstCallAt!.utc]);
      if (rehearsal.verdict === 'skip') expect(contact.skipReason).toBe(rehearsal.reason);
    }
    // A running campaign can be rehearsed too, read-only.
    expect((await rehearse(api, campaign.id, { sample: 1 })).status).toBe('DONE');
    void key;
  });

  it("refuses bad input in the catalogue shape, and hides other tenants' campaigns and rehearsals", async () => {
    const { api } = await newTenant(t.app);
    const other = (await newTenant(t.app)).api;
    const contactListId = await listOf(api, [{ phoneNumber: PLAIN }, { phoneNumber: LISTED }]);
    const campaign = await made(await api('POST', '/campaigns', { name: 'Mine', contactListId, callingRules: false }));
    for (const body of [{ sample: 0 }, { sample: 501 }, { sample: 1.5 }, { from: 'yesterday' }, { extra: true }]) {
      const refused = await api('POST', `/campaigns/${campaign.id}/rehearsals`, body);
      expect([refused.statusCode, refused.json().code]).toEqual([400, 'VALIDATION_FAILED']);
    }
    const noList = await made(await api('POST', '/campaigns', { name: 'No list', callingRules: false }));
    const unready = await api('POST', `/campaigns/${noList.id}/rehearsals`, {});
    expect([unready.statusCode, unready.json().code]).toEqual([409, 'CAMPAIGN_NOT_READY']);

    const done = await rehearse(api, campaign.id, {});
    // No agent: the verdicts without a conversation, and said so.
    expect(done.contacts.map((c: Record<string, unknown>) => [c.phoneNumber, c.verdict, c.conversation])).toEqual([
      [PLAIN, 'dial', null],
      [LISTED, 'dial', null],
    ]);
    expect(done.notes).toContain('The campaign has no agent: no conversation ran.');
    expect((await other('POST', `/campaigns/${campaign.id}/rehearsals`, {})).statusCode).toBe(404);
    expect((await other('GET', `/campaigns/${campaign.id}/rehearsals/${done.id}`)).statusCode).toBe(404);
    expect((await other('GET', `/campaigns/${campaign.id}/rehearsals`)).statusCode).toBe(404);
    // Listed newest first, with the summary and without the contacts.
    const second = await rehearse(api, campaign.id, { sample: 1 });
    const listed = (await api('GET', `/campaigns/${campaign.id}/rehearsals?limit=10`)).json();
    expect(listed.total).toBe(2);
    expect(listed.data.map((r: Record<string, unknown>) => [r.id, r.sample, r.summary, 'contacts' in r])).toEqual([
      [second.id, 1, second.summary, false],
      [done.id, 50, done.summary, false],
    ]);
    const otherCampaign = await made(await other('POST', '/campaigns', { name: 'Theirs', callingRules: false }));
    expect((await other('GET', `/campaigns/${otherCampaign.id}/rehearsals/${done.id}`)).statusCode).toBe(404);
    expect((await other('GET', `/campaigns/${otherCampaign.id}/rehearsals`)).json().total).toBe(0);
  });
});

/** A campaign that may call at any hour of any day, with no calling rules: every contact is called now. */
const ANY_TIME = {
  callingRules: false,
  timezone: 'UTC',
  callWindowStart: '00:00',
  callWindowEnd: '23:59',
  callDays: [1, 2, 3, 4, 5, 6, 7],
};

const walletBalance = async (api: Api) => Number((await api('GET', '/profile')).json().data.wallet.balance);

/** A tenant whose model server is the fake, and its agent on that model. */
async function bankOnTheModel() {
  const { api, owner } = await newTenant(t.app);
  const put = await t.app.inject({
    method: 'PUT',
    url: '/api/v1/integrations/llm',
    headers: { authorization: `Bearer ${owner.token}` },
    payload: { apiUrl: `${chat.url}/v1`, apiKey: 'sk-tenant' },
  });
  expect(put.statusCode).toBe(200);
  const agent = await made(
    await api('POST', '/agents', { name: 'Bank', firstMessage: 'Hello, this is the bank.', llm: { model: 'judge-model' } }),
  );
  return { api, agent };
}

/** A tenant on the model and its campaign over Ana, who asks her balance, and Ben, silent (the agent's first message, no model asked). */
async function balanceCampaign(name: string) {
  const { api, agent } = await bankOnTheModel();
  const tenantId = (await api('GET', '/profile')).json().data.tenant.id as string;
  const contactListId = await listOf(api, [
    { phoneNumber: PLAIN, name: 'Ana', metadata: { simulate: { say: ['What is my balance?'] } } },
    { phoneNumber: LISTED, name: 'Ben', metadata: { simulate: { say: [] } } },
  ]);
  const campaign = await made(await api('POST', '/campaigns', { ...ANY_TIME, name, agentId: agent.id, contactListId }));
  return { api, tenantId, campaign };
}

/** The state of the rehearsal's job on the queue (pg-boss's: retry after a failed attempt, completed once handled). */
async function jobState(rehearsalId: string) {
  const { rows } = await t.runtime.db.query<{ state: string }>(
    `SELECT state FROM pgboss.job WHERE name = $1 AND data->>'rehearsalId' = $2`,
    [REHEARSE_CAMPAIGN, rehearsalId],
  );
  return rows[0]?.state;
}

describe('a campaign rehearsal with a model', () => {
  it("converses on the agent's model, measures its tokens and bills them like a test chat, and dials nothing", async () => {
    const { api, agent } = await bankOnTheModel();
    const contactListId = await listOf(api, [
      { phoneNumber: PLAIN, name: 'Ana', metadata: { simulate: { say: ['What is my balance?'] } } },
      // Silent: hears the opening (the agent's first message, no model) and says nothing.
      { phoneNumber: LISTED, name: 'Ben', metadata: { simulate: { say: [] } } },
    ]);
    const campaign = await made(await api('POST', '/campaigns', { ...ANY_TIME, name: 'Model', agentId: agent.id, contactListId }));
    const before = { ...(await footprint(api)), wallet_transactions: 0 };
    const balance = await walletBalance(api);
    chat.script({ kind: 'stream', text: ['Your balance is ', '42 dollars.'], usage: { prompt_tokens: 300, completion_tokens: 12 } });

    const report = await rehearse(api, campaign.id, {});
    expect(report.brain).toBe('model:judge-model');
    const [ana] = report.contacts;
    expect(ana.conversation!.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text])).toEqual([
      ['agent', 'Hello, this is the bank.'],
      ['contact', 'What is my balance?'],
      ['agent', 'Your balance is 42 dollars.'],
    ]);
    expect(ana.cost!.usage).toMatchObject({ llmInputTokens: 300, llmOutputTokens: 12, llmModel: 'judge-model' });
    // 300 × 1 + 12 × 2 per thousand: 0.324, billed once, like a test chat's tokens.
    expect(ana.cost!.cost.llm).toBe('0.3240');
    expect(report.billed).toBe('0.3240');
    expect(report.notes.join(' ')).toContain('billed like a test chat');
    expect(await walletBalance(api)).toBeCloseTo(balance - 0.324, 4);
    const after = await footprint(api);
    expect({ ...after, wallet_transactions: 0 }).toEqual(before);

    // A report stored before a conversation could fail has no failure field: read, each of its conversations was rehearsed.
    await t.runtime.db.query(
      `UPDATE campaign_rehearsals
       SET report = jsonb_set(report, '{contacts}', (SELECT jsonb_agg(jsonb_set(c, '{conversation}', (c->'conversation') - 'failure'))
                                                     FROM jsonb_array_elements(report->'contacts') AS c))
       WHERE id = $1`,
      [report.id],
    );
    const stored = await api('GET', `/campaigns/${campaign.id}/rehearsals/${report.id}`);
    expect([stored.statusCode, stored.json().contacts.map((c: Contact) => c.conversation!.failure)]).toEqual([200, [null, null]]);
  });

  it("has the model play a contact without a script of its own, as the list describes them, and bills the persona's tokens too", async () => {
    const { api, agent } = await bankOnTheModel();
    const contactListId = await listOf(api, [
      { phoneNumber: PLAIN, name: 'Cleo', metadata: { plan: 'gold', owes: 120 } },
      // A script of its own, silent: hears the opening and says nothing (no model asked).
      { phoneNumber: LISTED, name: 'Ben', metadata: { simulate: { say: [] } } },
    ]);
    const campaign = await made(
      await api('POST', '/campaigns', {
        name: 'Persona',
        agentId: agent.id,
        contactListId,
        // A script for contacts who have none: the model plays them instead.
        simulatorScript: ['Hello?'],
        ...ANY_TIME,
      }),
    );
    const asked = chat.received.length;
    chat.script(
      { kind: 'stream', text: ['Hi, this is Cleo. ', 'What do I owe?'], usage: { prompt_tokens: 100, completion_tokens: 8 } },
      { kind: 'stream', text: ['You owe 120 dollars.'], usage: { prompt_tokens: 300, completion_tokens: 6 } },
      { kind: 'stream', text: ['[END]'], usage: { prompt_tokens: 120, completion_tokens: 1 } },
    );

    const report = await rehearse(api, campaign.id, {});
    const [cleo, ben] = report.contacts;
    expect(ben.conversation).toMatchObject({ persona: [], personaByModel: null, transcript: [expect.objectContaining({ role: 'agent' })] });
    expect(cleo.conversation).toMatchObject({
      persona: [],
      personaByModel: `Cleo at ${PLAIN}, who was not expecting this call. What the calling company's list says about you: {"owes":120,"plan":"gold"}.`,
    });
    expect(cleo.conversation.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text])).toEqual([
      ['agent', 'Hello, this is the bank.'],
      ['contact', 'Hi, this is Cleo. What do I owe?'],
      ['agent', 'You owe 120 dollars.'],
    ]);
    // The persona was told who it is, and saw the agent's words as the other side's.
    const personaAsked = chat.received[asked]!.body.messages;
    expect(personaAsked[0]).toMatchObject({ role: 'system', content: expect.stringContaining(cleo.conversation.personaByModel) });
    expect(personaAsked.slice(1)).toEqual([{ role: 'user', content: 'Hello, this is the bank.' }]);
    // The agent's tokens and the persona's, all on the agent's model: 520 × 1 + 15 × 2 per thousand.
    expect(cleo.cost.usage).toMatchObject({ llmInputTokens: 520, llmOutputTokens: 15, llmModel: 'judge-model' });
    expect(report.billed).toBe('0.5500');
  });

  it('rehearses the other contacts when the model playing one contact fails: that conversation says why, and is neither forecast nor billed', async () => {
    const { api, agent } = await bankOnTheModel();
    const contactListId = await listOf(api, [
      { phoneNumber: PLAIN, name: 'Cleo' },
      { phoneNumber: LISTED, name: 'Dan' },
    ]);
    const campaign = await made(await api('POST', '/campaigns', { ...ANY_TIME, name: 'One fails', agentId: agent.id, contactListId }));
    const balance = await walletBalance(api);
    // Cleo's conversation takes the scripted replies in order; whatever mentions Dan is answered by what it asks
    // (the two contacts converse side by side): his first line, the agent's answer, then his model fails.
    chat.script(
      { kind: 'stream', text: ['Hi, this is Cleo.'], usage: { prompt_tokens: 100, completion_tokens: 8 } },
      { kind: 'stream', text: ['Hello Cleo, how can I help?'], usage: { prompt_tokens: 300, completion_tokens: 6 } },
      { kind: 'stream', text: ['[END]'], usage: { prompt_tokens: 120, completion_tokens: 1 } },
    );
    const danAsked: string[] = [];
    chat.answerBy(({ messages }) => {
      const [system, ...said] = messages as { role: string; content: string | null }[];
      if (!JSON.stringify(messages).includes('Dan')) return undefined;
      const playingDan = system!.content!.includes(`Dan at ${LISTED}`);
      danAsked.push(playingDan ? 'persona' : 'agent');
      if (!playingDan) return { kind: 'stream', text: ['You have 5 dollars.'], usage: { prompt_tokens: 200, completion_tokens: 5 } };
      if (!said.some((message) => message.role === 'assistant'))
        return { kind: 'stream', text: ['Hi, Dan here. What is my balance?'], usage: { prompt_tokens: 90, completion_tokens: 9 } };
      return {
        kind: 'error',
        status: 500,
        message: 'The server had an error while processing your request.',
        type: 'server_error',
        code: null,
      };
    });

    const report = await rehearse(api, campaign.id, {});
    expect(report.status).toBe('DONE');
    const [cleo, dan] = report.contacts;
    expect(danAsked).toEqual(['persona', 'agent', 'persona']);
    expect(cleo.conversation).toMatchObject({ failure: null, endReason: null });
    expect(cleo.cost.usage).toMatchObject({ llmInputTokens: 520, llmOutputTokens: 15 });
    // Dan's conversation as far as it went, and why it stopped there, in words a person can act on.
    expect(dan.conversation).toMatchObject({
      personaByModel: `Dan at ${LISTED}, who was not expecting this call.`,
      failure:
        "The agent's model failed while playing the contact, so this conversation was not rehearsed (LLM: The server had an error while processing your request.); rehearse again once the model answers.",
    });
    expect(dan.conversation.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text])).toEqual([
      ['agent', 'Hello, this is the bank.'],
      ['contact', 'Hi, Dan here. What is my balance?'],
      ['agent', 'You have 5 dollars.'],
    ]);
    // Dan is still who the dialer would call, with the follow-ups that would go; but no forecast and no bill from half a call.
    expect(dan).toMatchObject({ verdict: 'dial', wouldBeCalled: true, cost: null, followUp: { answered: { messages: [] } } });
    expect(report.notes).toContain(
      "1 of the conversations could not be rehearsed: the agent's model failed while playing the contact (each one's failure says why); they are neither in the forecast nor billed.",
    );
    // Only Cleo's tokens: 520 × 1 + 15 × 2 per thousand; Dan's 299 tokens before the failure are not billed.
    expect([report.costTotal, report.billed]).toEqual([cleo.cost.cost.total, '0.5500']);
    expect(await walletBalance(api)).toBeCloseTo(balance - 0.55, 4);
  });

  it('bills once, for the conversation its report holds, however often its job is handled: twice at once, and again once stored', async () => {
    const { api, tenantId, campaign } = await balanceCampaign('Handled twice');
    const balance = await walletBalance(api);
    const asked = chat.received.length;
    // An answer for each attempt that may converse (the two below and the queue's worker), each with tokens of its own.
    chat.script(
      ...[100, 200, 300].map((promptTokens) => ({
        kind: 'stream' as const,
        text: ['Your balance is 42 dollars.'],
        usage: { prompt_tokens: promptTokens, completion_tokens: 10 },
      })),
    );

    const posted = await api('POST', `/campaigns/${campaign.id}/rehearsals`, {});
    expect(posted.statusCode).toBe(202);
    const job = { tenantId, rehearsalId: posted.json().id as string };
    // The job handled twice at once, as when its lease lapsed while a stalled worker still ran it, beside the queue's own worker.
    await Promise.all([rehearseCampaign(t.runtime, job, { retryCount: 0 }), rehearseCampaign(t.runtime, job, { retryCount: 0 })]);
    await until('the queue to be done with the rehearsal', async () => (await jobState(job.rehearsalId)) === 'completed');
    // Each attempt conversed: the provider was asked at least twice, and its tokens were spent each time.
    const conversed = chat.received.length - asked;
    expect(conversed).toBeGreaterThanOrEqual(2);

    const report = await rehearsed(api, campaign.id, job.rehearsalId);
    const [ana] = report.contacts;
    expect(ana.conversation.transcript.at(-1)).toMatchObject({ role: 'agent', text: 'Your balance is 42 dollars.' });
    // What is billed is the conversation the report holds: one attempt's tokens, not every attempt's.
    const { llmInputTokens, llmOutputTokens } = ana.cost.usage;
    expect([100, 200, 300]).toContain(llmInputTokens);
    const price = (llmInputTokens * 1 + llmOutputTokens * 2) / 1000;
    expect(report.billed).toBe(price.toFixed(4));

    // Handled again once stored (a worker that died before the queue heard it was done): nothing asked, nothing billed.
    await rehearseCampaign(t.runtime, job, { retryCount: 0 });
    expect(chat.received.length - asked).toBe(conversed);
    const { rows: debits } = await t.runtime.db.query<{ amount: string }>(
      'SELECT amount::text FROM wallet_transactions WHERE tenant_id = $1 AND reference = $2',
      [tenantId, job.rehearsalId],
    );
    expect(debits.map((debit) => Number(debit.amount).toFixed(4))).toEqual([report.billed]);
    expect(await walletBalance(api)).toBeCloseTo(balance - price, 4);
  });

  it('fails on its last attempt when its job throws every time: FAILED with the error and what to do, and nothing billed', async () => {
    const { api, tenantId, campaign } = await balanceCampaign('Always throws');
    const balance = await walletBalance(api);
    const asked = chat.received.length;
    chat.answerBy(() => ({ kind: 'stream', text: ['Your balance is 42 dollars.'], usage: { prompt_tokens: 300, completion_tokens: 12 } }));
    // The database refuses this tenant's finished reports: the conversation runs, its tokens are spent, and storing the
    // report throws on every attempt, an error the rehearsal does not expect. Its failure (FAILED) is still stored.
    const refusal = 'the test refuses this report';
    const allowReports = await refusedWrites(
      t.runtime.db,
      'campaign_rehearsals',
      'UPDATE',
      `NEW.status = 'DONE' AND NEW.tenant_id = '${tenantId}'`,
      refusal,
    );
    try {
      const posted = await api('POST', `/campaigns/${campaign.id}/rehearsals`, {});
      expect(posted.statusCode).toBe(202);
      const job = { tenantId, rehearsalId: posted.json().id as string };
      const stored = async () => (await api('GET', `/campaigns/${campaign.id}/rehearsals/${job.rehearsalId}`)).json();
      // The queue's first attempt threw, to be retried: the rehearsal is still RUNNING.
      await until("the queue's first attempt to fail", async () => (await jobState(job.rehearsalId)) === 'retry');
      expect(await stored()).toMatchObject({ status: 'RUNNING', failure: null });
      const { retryLimit } = rehearseCampaignJob(t.runtime);
      await expect(rehearseCampaign(t.runtime, job, { retryCount: retryLimit! - 1 })).rejects.toThrow(refusal);
      expect(await stored()).toMatchObject({ status: 'RUNNING', failure: null });

      // The last attempt records the failure rather than throw it: the rehearsal is finished, and the dashboard stops polling it.
      await rehearseCampaign(t.runtime, job, { retryCount: retryLimit! });
      const failed = await stored();
      expect(failed).toMatchObject({ status: 'FAILED', contacts: [], billed: null, finishedAt: expect.any(String) });
      expect(failed.failure).toBe(
        `Rehearsing failed 3 times (${refusal}); nothing was billed for it, and you may ask for another rehearsal.`,
      );
      const { rows: debits } = await t.runtime.db.query('SELECT 1 FROM wallet_transactions WHERE tenant_id = $1 AND reference = $2', [
        tenantId,
        job.rehearsalId,
      ]);
      // The model was asked on every attempt, and none of its tokens was billed.
      expect(chat.received.length - asked).toBeGreaterThanOrEqual(3);
      expect(debits).toEqual([]);
      expect(await walletBalance(api)).toBe(balance);
    } finally {
      await allowReports();
    }
  });
});
