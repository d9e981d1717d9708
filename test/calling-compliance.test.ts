import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockCalledNumbers } from '../src/modules/calls/repo.ts';
import { dialerTick } from '../src/modules/campaigns/dialer.ts';
import { manualClock } from '../src/platform/clock.ts';
import { multipart, bearer, startTestApp, twoTenantKeys, untilWaitingForLock, type TestApp } from './harness.ts';
import { apiAs, createCampaign, voiceSetup } from './voice-fixtures.ts';

// Who may be called and when, over HTTP on a real database: the tenant's compliance settings,
// contacts' own zones, consents, and the dialer's hash-chained record of every decision.
// 2026-11-23 is a Monday; at 12:00Z it is 07:00 in New York and 21:00 in Tokyo.
const clock = manualClock('2026-11-23T12:00:00.000Z');
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { SIMULATOR_RING_SECONDS: '2', SIMULATOR_TALK_SECONDS: '5', DIALER_CALLS_PER_SECOND: '1000' } });
});
afterAll(async () => {
  await t.close();
});

type Api = ReturnType<typeof apiAs>;
async function tenants() {
  const { key, otherKey } = await twoTenantKeys(t.app);
  return { key, api: apiAs(t.app, key), other: apiAs(t.app, otherKey) };
}

const MIAMI = '+13055550100'; // Florida, America/New_York
const IDAHO = '+12085550100'; // America/Boise and America/Los_Angeles
const NO_ZONE = '+80012345678';
const TOKYO = '+12125551000'; // a New York number whose contact lives in Tokyo

async function listOf(api: Api, contacts: Record<string, unknown>[]) {
  const list = (await api('POST', '/contact-lists', { name: `List ${Math.random()}` })).json();
  expect((await api('POST', `/contact-lists/${list.id}/contacts/bulk`, { contacts })).json().imported).toBe(contacts.length);
  return list.id as string;
}
const contactsOf = async (api: Api, id: string) => (await api('GET', `/campaigns/${id}/contacts`)).json().data as Record<string, unknown>[];
const recordsOf = async (api: Api, id: string) =>
  (await api('GET', `/campaigns/${id}/compliance-records?format=json`)).json() as {
    sequence: number;
    phoneNumber: string;
    verdict: string;
    reason: string | null;
    facts: Record<string, unknown>;
  }[];

describe('compliance settings', () => {
  it('are the defaults of new campaigns, shown by GET but not by the update response, per tenant', async () => {
    const { api, other } = await tenants();
    expect((await api('GET', '/compliance/settings')).json()).toMatchObject({
      windowTimeZone: 'CAMPAIGN',
      callingRules: true,
      requireConsent: false,
      maxCallsPerDay: null,
      customRules: [],
      updatedAt: null,
    });
    // Made with no compliance choice: the settings' defaults.
    const made = await api('POST', '/campaigns', { name: 'Before the settings' });
    expect(made.statusCode).toBe(201);
    const before = made.json() as { id: string };
    // Relaxing the statutory rules is the tenant's explicit choice (its calls are no solicitations).
    const put = await api('PUT', '/compliance/settings', { windowTimeZone: 'CONTACT', callingRules: false, maxCallsPerDay: 3 });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toMatchObject({ windowTimeZone: 'CONTACT', callingRules: false, requireConsent: false, maxCallsPerDay: 3 });
    expect(put.json().statutoryRules.map((rule: { id: string }) => rule.id)).toContain('us-fl-telephone-solicitation');
    const after = (await api('POST', '/campaigns', { name: 'After the settings' })).json() as { id: string };
    expect(after).not.toHaveProperty('windowTimeZone');
    expect((await api('GET', `/campaigns/${after.id}`)).json()).toMatchObject({ windowTimeZone: 'CONTACT', callingRules: false });
    // Campaigns made before keep theirs; a campaign may choose otherwise; the update answers with the seed's fields only.
    expect((await api('GET', `/campaigns/${before.id}`)).json()).toMatchObject({ windowTimeZone: 'CAMPAIGN', callingRules: true });
    const patched = await api('PATCH', `/campaigns/${after.id}`, { windowTimeZone: 'CAMPAIGN', requireConsent: true });
    expect(patched.statusCode).toBe(200);
    for (const field of ['windowTimeZone', 'callingRules', 'requireConsent', 'waiting']) expect(patched.json()).not.toHaveProperty(field);
    expect((await api('GET', `/campaigns/${after.id}`)).json()).toMatchObject({ windowTimeZone: 'CAMPAIGN', requireConsent: true });
    expect((await other('GET', '/compliance/settings')).json()).toMatchObject({ windowTimeZone: 'CAMPAIGN', callingRules: true });

    const badRule = { id: 'us-tcpa-hours', region: 'US', name: 'x', source: 'y', windows: [{ days: [1], start: '10:00', end: '09:00' }] };
    const refused = await api('PUT', '/compliance/settings', { customRules: [badRule] });
    expect([refused.statusCode, refused.json().code]).toEqual([400, 'VALIDATION_FAILED']);
    expect(refused.json().message).toBe('customRules[0].id "us-tcpa-hours" is taken: give each rule its own id.');
    const backwards = await api('PUT', '/compliance/settings', { customRules: [{ ...badRule, id: 'mine' }] });
    expect(backwards.json().message).toBe('customRules[0].windows[0]: start (10:00) must be before end (09:00).');
    expect((await api('PUT', '/compliance/settings', { maxCallsPerDay: 0 })).statusCode).toBe(400);

    // Holidays: a known calendar and windows to bar days of; kept as given.
    const holidayRule = {
      id: 'mine',
      region: 'US',
      name: 'x',
      source: 'y',
      windows: [{ days: [1, 2, 3, 4, 5], start: '09:00', end: '17:00' }],
    };
    const noCalendar = await api('PUT', '/compliance/settings', { customRules: [{ ...holidayRule, holidays: { calendar: 'XX' } }] });
    expect([noCalendar.statusCode, noCalendar.json().message]).toEqual([
      400,
      'customRules[0].holidays: "XX" is not a country with a holiday calendar.',
    ]);
    const noState = await api('PUT', '/compliance/settings', { customRules: [{ ...holidayRule, holidays: { calendar: 'US-ZZ' } }] });
    expect(noState.json().message).toBe('customRules[0].holidays: "US-ZZ": US has no state or region ZZ.');
    const { windows: _, ...noWindows } = holidayRule;
    const withoutWindows = await api('PUT', '/compliance/settings', { customRules: [{ ...noWindows, holidays: { calendar: 'US' } }] });
    expect(withoutWindows.json().message).toBe("customRules[0]: holidays bar days of the rule's windows; give it windows too.");
    expect(
      (await api('PUT', '/compliance/settings', { customRules: [{ ...holidayRule, holidays: { calendar: 'US', extraDays: ['13-01'] } }] }))
        .statusCode,
    ).toBe(400);
    const kept = await api('PUT', '/compliance/settings', {
      customRules: [{ ...holidayRule, holidays: { calendar: 'US-CA', extraDays: ['12-24'], weekendObserved: true } }],
    });
    expect([kept.statusCode, kept.json().customRules[0].holidays]).toEqual([
      200,
      { calendar: 'US-CA', extraDays: ['12-24'], weekendObserved: true },
    ]);
  });
});

describe('the statutory rules by default', () => {
  it('hold for a campaign made with no compliance choice: no German call without consent, no French call on a Saturday night', async () => {
    // Saturday 2026-11-28, 23:04 in Berlin and Paris.
    clock.set('2026-11-28T22:04:00.000Z');
    const { key, api } = await tenants();
    const setup = await voiceSetup(t.app, key, [{}, {}]);
    const contactListId = await listOf(api, [{ phoneNumber: '+4915123456789' }, { phoneNumber: '+33612345678' }]);
    const campaign = (
      await api('POST', '/campaigns', {
        ...setup,
        name: 'Saturday night',
        contactListId,
        timezone: 'Europe/Berlin',
        callWindowStart: '00:00',
        callWindowEnd: '23:59',
        callDays: [1, 2, 3, 4, 5, 6, 7],
      })
    ).json() as { id: string };
    expect((await api('GET', `/campaigns/${campaign.id}`)).json()).toMatchObject({ callingRules: true, postCallMessages: 'FINAL_OUTCOME' });
    expect((await api('POST', `/campaigns/${campaign.id}/start`, {})).statusCode).toBe(202);
    await dialerTick(t.runtime);
    expect(
      (await contactsOf(api, campaign.id)).map((c) => [c.phoneNumber, c.status, c.skipReason ?? c.waitReason ?? null, c.nextAttemptAt]),
    ).toEqual([
      ['+4915123456789', 'SKIPPED', 'no_consent', null],
      // France: weekdays from 10:00, Paris time.
      ['+33612345678', 'PENDING', 'outside_window', '2026-11-30T09:00:00.000Z'],
    ]);
    expect((await api('GET', `/call-logs?campaignId=${campaign.id}`)).json().total).toBe(0);
  });
});

describe("a contact's time zone", () => {
  it('is taken on add, update and CSV upload when it is an IANA name or a city naming one zone, and shown only when set', async () => {
    const { key, api } = await tenants();
    const list = (await api('POST', '/contact-lists', { name: 'Zones' })).json();
    const added = await api('POST', `/contact-lists/${list.id}/contacts`, { phoneNumber: MIAMI, timezone: 'America/Chicago' });
    expect([added.statusCode, added.json().timezone]).toEqual([201, 'America/Chicago']);
    // An unknown zone is a validation failure (contract §1), on add as on update.
    const unknownZone = (zone: string) => ({
      statusCode: 400,
      code: 'VALIDATION_FAILED',
      message: `Unknown time zone "${zone}"; use an IANA name such as America/New_York, or a city that names one zone, such as Berlin.`,
      details: [
        {
          path: '/timezone',
          message: `Unknown time zone "${zone}"; use an IANA name such as America/New_York, or a city that names one zone, such as Berlin`,
        },
      ],
    });
    const refused = await api('POST', `/contact-lists/${list.id}/contacts`, { phoneNumber: IDAHO, timezone: 'Mars/Base' });
    expect(refused.json()).toMatchObject(unknownZone('Mars/Base'));
    const cleared = await api('PATCH', `/contact-lists/${list.id}/contacts/${added.json().id}`, { timezone: null });
    expect(cleared.json()).not.toHaveProperty('timezone');
    expect((await api('PATCH', `/contact-lists/${list.id}/contacts/${added.json().id}`, { timezone: 'Nowhere' })).json()).toMatchObject(
      unknownZone('Nowhere'),
    );
    // A city that names one zone is taken as that zone, as the dashboard's hint says ("e.g. Berlin").
    const berlin = await api('PATCH', `/contact-lists/${list.id}/contacts/${added.json().id}`, { timezone: 'Berlin' });
    expect([berlin.statusCode, berlin.json().timezone]).toEqual([200, 'Europe/Berlin']);
    const newYork = await api('POST', `/contact-lists/${list.id}/contacts`, { phoneNumber: '+12125550188', timezone: 'new york' });
    expect([newYork.statusCode, newYork.json().timezone]).toEqual([201, 'America/New_York']);

    const { body, contentType } = multipart(`phone,Time Zone\n${IDAHO},America/Boise\n${TOKYO},Not/AZone\n+13055550177,Berlin\n`);
    const upload = await t.app.inject({
      method: 'POST',
      url: `/api/v1/contact-lists/${list.id}/upload`,
      headers: { ...bearer(key), 'content-type': contentType },
      payload: body,
    });
    expect(upload.json()).toMatchObject({
      imported: 2,
      invalidRows: [{ row: 3, phone: TOKYO, reason: expect.stringContaining('Unknown time zone') }],
    });
    const listed = (await api('GET', `/contact-lists/${list.id}/contacts`)).json().data as { phoneNumber: string; timezone?: string }[];
    expect(listed.find((contact) => contact.phoneNumber === IDAHO)?.timezone).toBe('America/Boise');
    expect(listed.find((contact) => contact.phoneNumber === '+13055550177')?.timezone).toBe('Europe/Berlin');
  });
});

describe('consents', () => {
  it('are added, listed, revoked (kept, no longer valid), and each tenant’s own', async () => {
    const { api, other } = await tenants();
    const added = await api('POST', '/consents', { phoneNumber: MIAMI, channel: 'voice', source: 'web-form', evidence: { formId: 'F-1' } });
    expect(added.statusCode).toBe(201);
    expect(added.json()).toMatchObject({
      phoneNumber: MIAMI,
      channel: 'voice',
      valid: true,
      revokedAt: null,
      grantedAt: clock.now().toISOString(),
    });
    const expired = await api('POST', '/consents', {
      phoneNumber: MIAMI,
      channel: 'sms',
      source: 'call',
      grantedAt: '2026-01-01T00:00:00.000Z',
      expiresAt: '2026-06-01T00:00:00.000Z',
    });
    expect(expired.json().valid).toBe(false);
    const backwards = await api('POST', '/consents', {
      phoneNumber: MIAMI,
      channel: 'sms',
      source: 'x',
      grantedAt: '2026-06-01T00:00:00.000Z',
      expiresAt: '2026-01-01T00:00:00.000Z',
    });
    expect(backwards.statusCode).toBe(400);
    expect((await api('GET', `/consents?phoneNumber=${encodeURIComponent(MIAMI)}`)).json().total).toBe(2);
    const id = added.json().id;
    expect((await other('GET', `/consents/${id}`)).statusCode).toBe(404);
    expect((await other('POST', `/consents/${id}/revoke`)).statusCode).toBe(404);
    expect((await other('GET', '/consents')).json().total).toBe(0);
    const revoked = await api('POST', `/consents/${id}/revoke`);
    expect(revoked.json()).toMatchObject({ valid: false, revokedAt: clock.now().toISOString() });
    expect((await api('GET', `/consents/${id}`)).json().valid).toBe(false);
  });
});

describe('the dialer in contact-local time, and its records', () => {
  it('dials each contact in its own window, says why it waits, records every decision once, and shows tampering', async () => {
    clock.set('2026-11-23T12:00:00.000Z');
    const { key, api, other } = await tenants();
    const setup = await voiceSetup(t.app, key, [{}, {}]);
    await api('PUT', '/compliance/settings', { maxCallsPerDay: 1 });
    const contactListId = await listOf(api, [
      { phoneNumber: MIAMI, metadata: { simulate: 'UNANSWERED,ANSWERED' } },
      { phoneNumber: IDAHO },
      { phoneNumber: NO_ZONE },
      { phoneNumber: TOKYO, timezone: 'Asia/Tokyo' },
    ]);
    const campaign = await createCampaign(t.app, key, {
      ...setup,
      contactListId,
      timezone: 'UTC',
      callDays: [1, 2, 3, 4, 5, 6, 7],
      windowTimeZone: 'CONTACT',
      redialDelayMin: 1,
    });
    expect((await api('POST', `/campaigns/${campaign.id}/start`, {})).statusCode).toBe(202);
    await dialerTick(t.runtime);

    const states = async () =>
      (await contactsOf(api, campaign.id)).map((c) => [c.phoneNumber, c.status, c.skipReason ?? c.waitReason ?? null, c.nextAttemptAt]);
    expect(await states()).toEqual([
      [MIAMI, 'PENDING', 'outside_window', '2026-11-23T14:00:00.000Z'],
      [IDAHO, 'PENDING', 'outside_window', '2026-11-23T17:00:00.000Z'],
      [NO_ZONE, 'SKIPPED', 'unknown_timezone', null],
      [TOKYO, 'PENDING', 'outside_window', '2026-11-24T00:00:00.000Z'],
    ]);
    expect((await api('GET', `/campaigns/${campaign.id}`)).json().waiting).toEqual({
      reason: 'outside_window',
      message: "waiting for the contacts' call windows: the next opens 14:00 UTC for 3 contacts",
      resumesAt: '2026-11-23T14:00:00.000Z',
      contacts: 3,
    });

    // Due again while still outside its window: put off again, with no second record for the same state.
    await t.runtime.db.query('UPDATE campaign_contacts SET next_attempt_at = $1 WHERE phone_number = $2', [clock.now(), MIAMI]);
    await dialerTick(t.runtime);
    expect((await recordsOf(api, campaign.id)).map((r) => [r.phoneNumber, r.verdict, r.reason])).toEqual([
      [MIAMI, 'wait', 'outside_window'],
      [IDAHO, 'wait', 'outside_window'],
      [NO_ZONE, 'skip', 'unknown_timezone'],
      [TOKYO, 'wait', 'outside_window'],
    ]);

    // 09:00 in Miami: dialled. Its unanswered call is the one call of the day the tenant allows: the retry waits a day.
    clock.set('2026-11-23T14:00:00.000Z');
    await dialerTick(t.runtime);
    expect((await api('GET', `/campaigns/${campaign.id}`)).json().waiting).toBeNull();
    for (let tick = 0; tick < 40 && (await states())[0]![2] !== 'frequency_cap'; tick++) {
      clock.advance(5_000);
      await dialerTick(t.runtime);
    }
    expect((await states())[0]).toEqual([MIAMI, 'PENDING', 'frequency_cap', '2026-11-24T14:00:00.000Z']);

    const records = await recordsOf(api, campaign.id);
    expect(records.slice(4).map((r) => [r.phoneNumber, r.verdict, r.reason])).toEqual([
      [MIAMI, 'dial', null],
      [MIAMI, 'wait', 'frequency_cap'],
    ]);
    expect(records[4]!.facts).toMatchObject({
      timeZones: ['America/New_York'],
      timeZoneSource: 'number',
      localTimes: ['2026-11-23T09:00:00-05:00'],
      doNotCall: false,
      consent: 'not_required',
      callCounts: { '24': 0, '168': 0 },
    });
    expect(records[5]!.facts).toMatchObject({ callCounts: { '24': 1 }, resumesAt: '2026-11-24T14:00:00.000Z' });
    expect(records[3]!.facts).toMatchObject({ timeZones: ['Asia/Tokyo'], timeZoneSource: 'contact' });

    const csv = await api('GET', `/campaigns/${campaign.id}/compliance-records?format=csv`);
    expect(csv.headers['content-type']).toContain('text/csv');
    const lines = csv.body.trim().split('\n');
    expect(lines[0]).toBe(
      'sequence,id,decided_at,campaign_id,contact_id,phone_number,verdict,reason,time_zones,local_times,rules,do_not_call,consent,call_counts,resumes_at,previous_hash,hash,call_id',
    );
    expect(lines).toHaveLength(7);
    expect(lines[3]).toContain(`,${NO_ZONE},skip,unknown_timezone,`);

    // Another tenant sees neither the campaign's records nor anything of the chain.
    expect((await other('GET', `/campaigns/${campaign.id}/compliance-records`)).statusCode).toBe(404);
    expect((await other('GET', '/compliance/records/verify')).json()).toEqual({ valid: true, records: 0, firstBroken: null });

    expect((await api('GET', '/compliance/records/verify')).json()).toEqual({ valid: true, records: 6, firstBroken: null });
    // Append-only: the database refuses a change or a removal.
    await expect(t.runtime.db.query("UPDATE compliance_records SET reason = 'dnc' WHERE sequence = 2")).rejects.toThrow(/append-only/);
    await expect(t.runtime.db.query('DELETE FROM compliance_records WHERE sequence = 2')).rejects.toThrow(/append-only/);
    // Someone who can switch the guard off and edits a record is caught, at that record.
    const second = records[1]!;
    await t.runtime.db.query('ALTER TABLE compliance_records DISABLE TRIGGER compliance_records_append_only');
    await t.runtime.db.query(`UPDATE compliance_records SET verdict = 'dial', reason = NULL WHERE id = $1`, [
      (second as unknown as { id: string }).id,
    ]);
    await t.runtime.db.query('ALTER TABLE compliance_records ENABLE TRIGGER compliance_records_append_only');
    expect((await api('GET', '/compliance/records/verify')).json()).toEqual({
      valid: false,
      records: 2,
      firstBroken: {
        sequence: second.sequence,
        id: (second as unknown as { id: string }).id,
        campaignId: campaign.id,
        problem: 'its content does not match its hash: it was changed',
      },
    });
  });
});

describe('one call at a time to a person', () => {
  it("puts off a person on another campaign's call, dials the campaign's others, and dials the person once that call ended", async () => {
    clock.set('2026-11-23T15:00:00.000Z');
    const { key, api } = await tenants();
    const setup = await voiceSetup(t.app, key, [{}, {}]);
    const person = '+12125558001';
    const campaignOn = async (other: string) => {
      const campaign = await createCampaign(t.app, key, {
        ...setup,
        contactListId: await listOf(api, [{ phoneNumber: person }, { phoneNumber: other }]),
        timezone: 'UTC',
        callDays: [1, 2, 3, 4, 5, 6, 7],
      });
      expect((await api('POST', `/campaigns/${campaign.id}/start`, {})).statusCode).toBe(202);
      return campaign.id;
    };
    const first = await campaignOn('+12125558002');
    await dialerTick(t.runtime);
    const states = async (id: string) =>
      (await contactsOf(api, id)).map((c) => [c.phoneNumber, c.status, c.waitReason ?? null, c.nextAttemptAt]);
    expect((await states(first)).map(([, status]) => status)).toEqual(['IN_PROGRESS', 'IN_PROGRESS']);

    const second = await campaignOn('+12125558003');
    await dialerTick(t.runtime);
    expect(await states(second)).toEqual([
      [person, 'PENDING', 'in_call', '2026-11-23T15:00:10.000Z'],
      ['+12125558003', 'IN_PROGRESS', null, null],
    ]);
    expect((await recordsOf(api, second)).map((r) => [r.phoneNumber, r.verdict, r.reason])).toEqual([
      [person, 'wait', 'in_call'],
      ['+12125558003', 'dial', null],
    ]);

    // The first campaign's call is still on (2 s ringing, 5 s talking); it ends by the second look,
    // ten seconds on, and the person is dialled then.
    clock.advance(5_000);
    await dialerTick(t.runtime);
    expect((await states(first))[0]![1]).toBe('IN_PROGRESS');
    expect((await states(second))[0]).toEqual([person, 'PENDING', 'in_call', '2026-11-23T15:00:10.000Z']);
    clock.set('2026-11-23T15:00:10.000Z');
    await dialerTick(t.runtime);
    expect((await states(first))[0]![1]).not.toBe('IN_PROGRESS');
    expect((await states(second))[0]!.slice(0, 2)).toEqual([person, 'IN_PROGRESS']);
  });
});

// Another campaign's claim (another worker) is dialling the same person: it holds the number and
// has placed the call, not yet committed. This claim waits for the number, then counts that call.
describe.skipIf(!process.env.DATABASE_URL)('two campaigns dialling the same person at once', () => {
  it("counts the other claim's call, committed while this claim waited for the number, against the person's daily cap", async () => {
    clock.set('2026-11-23T15:00:00.000Z');
    const { key, api } = await tenants();
    const setup = await voiceSetup(t.app, key, [{}, {}]);
    await api('PUT', '/compliance/settings', { maxCallsPerDay: 1 });
    const person = '+12125557001';
    const campaign = await createCampaign(t.app, key, {
      ...setup,
      contactListId: await listOf(api, [{ phoneNumber: person }, { phoneNumber: '+12125557002' }]),
      timezone: 'UTC',
      callDays: [1, 2, 3, 4, 5, 6, 7],
    });
    expect((await api('POST', `/campaigns/${campaign.id}/start`, {})).statusCode).toBe(202);
    const { rows } = await t.runtime.db.query<{ tenant_id: string }>('SELECT tenant_id FROM campaigns WHERE id = $1', [campaign.id]);
    const tenantId = rows[0]!.tenant_id;

    let tick: Promise<number> | undefined;
    await t.runtime.db.transaction(async (other) => {
      await lockCalledNumbers(other, tenantId, [person]);
      await other.query(
        `INSERT INTO calls (tenant_id, id, direction, from_number, to_number, status, provider, started_at)
         VALUES ($1, gen_random_uuid(), 'OUTGOING', '+14155550000', $2, 'QUEUED', 'SIMULATOR', $3)`,
        [tenantId, person, clock.now()],
      );
      tick = dialerTick(t.runtime);
      await untilWaitingForLock(t.runtime.db, 'the claim to wait for the number', 'advisory');
    });
    await tick;
    const states = (await contactsOf(api, campaign.id)).map((c) => [c.phoneNumber, c.status, c.waitReason ?? null]);
    expect(states).toEqual([
      [person, 'PENDING', 'frequency_cap'],
      ['+12125557002', 'IN_PROGRESS', null],
    ]);
  });
});
