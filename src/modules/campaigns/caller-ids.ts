import { DateTime } from 'luxon';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { TenantCtx } from '../../platform/context.ts';
import * as agents from '../agents/service.ts';
import type { VoiceNumber } from '../agents/schemas.ts';
import * as repo from './repo.ts';

/**
 * The caller IDs of a campaign's pool: which number dials which contact. A contact gets a number
 * of its area code when the pool has one, else of its country, else any (local presence); among
 * equals the one with the fewest dials today goes first, so the pool rotates. Each number keeps
 * its own pace (calls per second) and, when the campaign sets one, its daily cap (the campaign's
 * local day). A campaign of one number dials exactly as before: from it, at its pace.
 */
interface Locality {
  country: string;
  area: string;
}

/** The numbers a campaign dials from: its voiceNumberId first, then the rest of its pool. */
export const callerIdPool = (row: Pick<repo.CampaignRow, 'voice_number_id' | 'voice_number_ids'>): string[] => [
  ...new Set([...(row.voice_number_id ? [row.voice_number_id] : []), ...(row.voice_number_ids ?? [])]),
];

/** The country calling code and the area (the first three national digits: a NANP area code, a trunk region elsewhere). */
function localityOf(phoneNumber: string): Locality | undefined {
  const parsed = parsePhoneNumberFromString(phoneNumber);
  if (!parsed) return undefined;
  return { country: parsed.countryCallingCode, area: `${parsed.countryCallingCode}:${parsed.nationalNumber.slice(0, 3)}` };
}

const closeness = (number: Locality | undefined, contact: Locality | undefined) =>
  !number || !contact ? 0 : number.area === contact.area ? 2 : number.country === contact.country ? 1 : 0;

/** The campaign's local date, the day a daily cap counts. */
export const localDay = (now: Date, timezone: string) => DateTime.fromJSDate(now, { zone: timezone }).toISODate()!;

/**
 * Gives each of `contacts` (in claim order) a number of the pool, within every number's pace and
 * daily cap; the contacts left without one wait for a later tick. Call inside the claim's transaction.
 */
export async function assignCallerIds<C extends { phone_number: string }>(
  ctx: TenantCtx,
  campaign: repo.CampaignRow,
  primary: VoiceNumber,
  contacts: C[],
  now: Date,
  callsPerSecond: number,
): Promise<{ contact: C; voiceNumber: VoiceNumber }[]> {
  if (contacts.length === 0) return [];
  const others = callerIdPool(campaign).filter((id) => id !== primary.id);
  const pool = [primary, ...(await Promise.all(others.map((id) => agents.findVoiceNumber(ctx, id)))).filter((n) => n !== undefined)];
  const day = localDay(now, campaign.timezone);
  const cap = campaign.caller_id_daily_cap ?? Number.POSITIVE_INFINITY;
  // One number without a cap has nothing to choose or refuse: its dials are counted, not read.
  const dialledToday =
    pool.length === 1 && cap === Number.POSITIVE_INFINITY
      ? new Map<string, number>()
      : await repo.dialsOnDay(
          ctx.db,
          ctx.tenantId,
          pool.map((number) => number.id),
          day,
        );
  const used = new Map(pool.map((number) => [number.id, dialledToday.get(number.id) ?? 0]));
  const localities = new Map(pool.map((number) => [number.id, localityOf(number.phoneNumber)]));
  const planned = new Map<string, C[]>();
  for (const contact of contacts) {
    // With one number there is nothing to choose: a contact's locality (a parse of its number) is not needed.
    const contactLocality = pool.length > 1 ? localityOf(contact.phone_number) : undefined;
    const open = pool.filter((number) => used.get(number.id)! < cap);
    if (open.length === 0) break;
    const best = open.reduce((chosen, number) => {
      const score = closeness(localities.get(number.id), contactLocality) - closeness(localities.get(chosen.id), contactLocality);
      return score > 0 || (score === 0 && used.get(number.id)! < used.get(chosen.id)!) ? number : chosen;
    });
    used.set(best.id, used.get(best.id)! + 1);
    planned.set(best.id, [...(planned.get(best.id) ?? []), contact]);
  }
  const assigned: { contact: C; voiceNumber: VoiceNumber }[] = [];
  // Numbers are locked in one order (their ids) by every claim: two campaigns sharing numbers never deadlock.
  for (const number of [...pool].sort((a, b) => a.id.localeCompare(b.id))) {
    const wanted = planned.get(number.id) ?? [];
    if (wanted.length === 0) continue;
    // The count read above chose the numbers; the cap itself is held under the number's lock.
    const granted = await repo.takeDials(ctx.db, ctx.tenantId, number.id, wanted.length, {
      now,
      perSecond: callsPerSecond,
      day,
      dailyCap: cap,
    });
    for (const contact of wanted.slice(0, granted)) assigned.push({ contact, voiceNumber: number });
  }
  // In claim order, as the dialer marks them.
  const order = new Map(contacts.map((contact, index) => [contact, index]));
  return assigned.sort((a, b) => order.get(a.contact)! - order.get(b.contact)!);
}
