/**
 * What the dialer would decide for a sample of a campaign's list, without claiming, writing or
 * dialling anything: the same facts (claim-facts.ts) and the same verdicts (dial-verdicts.ts) the
 * dialer's claim uses, over the contacts a deterministic sample picks.
 */
import { createHash } from 'node:crypto';
import type { TenantCtx } from '../../platform/context.ts';
import * as contacts from '../contacts/service.ts';
import { claimFacts } from './claim-facts.ts';
import { decide, type Verdict } from './dial-verdicts.ts';
import { armOf } from './experiment.ts';
import type { CampaignRow, DueContact, SnapshotContact } from './repo.ts';

/** A contact of the sample as the campaign would copy it at start, with the dialer's verdict. */
export interface RehearsedContact extends SnapshotContact {
  verdict: Verdict;
}

/** The sentence each verdict's reason code stands for. */
export const VERDICT_SENTENCES: Record<string, string> = {
  dial: 'Would be dialled at once: every check allows a call now.',
  dnc: 'Never dialled: the number is on the do-not-call list.',
  no_consent: 'Never dialled: the campaign or a calling rule requires consent to voice calls, and the number has none.',
  unknown_timezone: 'Never dialled: a local time is needed and neither the contact nor its number gives a time zone.',
  outside_window: "Outside the call window (the campaign's, or a calling rule's, in the contact's zone): dialled when it opens.",
  outside_window_never: "Never dialled: the campaign's window and the calling rules never allow a common minute within two weeks.",
  frequency_cap: 'Capped: the number was called as often as a frequency cap allows; dialled when the cap frees up.',
  in_call: "Waits: the number is on another call of the tenant's (or dialled earlier in the same claim); looked at again shortly.",
};

/** A contact's place in the seeded order: the same campaign samples the same contacts, whoever asks and when. */
const sampleKey = (campaignId: string, contactId: string) => createHash('sha256').update(`${campaignId}:${contactId}`).digest('hex');

/**
 * `sample` contacts of the campaign's list (all when fewer), picked by a hash of the campaign and
 * each contact so that every rehearsal of the campaign picks the same ones, in the list's order,
 * each with the dialer's verdict at `at`. Reads only.
 */
export async function rehearseDialling(ctx: TenantCtx, campaign: CampaignRow, sample: number, at: Date): Promise<RehearsedContact[]> {
  let kept: (contacts.ListedContact & { position: number; key: string })[] = [];
  let position = 0;
  for await (const batch of contacts.contactsOfList(ctx, campaign.contact_list_id!)) {
    for (const contact of batch) kept.push({ ...contact, position: ++position, key: sampleKey(campaign.id, contact.id) });
    kept = kept.sort((a, b) => (a.key < b.key ? -1 : 1)).slice(0, sample);
  }
  kept.sort((a, b) => a.position - b.position);
  const due: DueContact[] = kept.map((contact) => ({
    contact_id: contact.id,
    phone_number: contact.phoneNumber,
    name: contact.name,
    metadata: contact.metadata,
    attempts: 0,
    timezone: contact.timezone,
    wait_reason: null,
    agent_version: campaign.experiment ? armOf(campaign.experiment, campaign.id, contact.id) : campaign.agent_version,
  }));
  const numbers = [...new Set(due.map((contact) => contact.phone_number))];
  const verdicts = decide(due, await claimFacts(ctx, campaign, numbers, at));
  return kept.map((contact, index) => ({
    contactId: contact.id,
    position: contact.position,
    phoneNumber: contact.phoneNumber,
    name: contact.name,
    email: contact.email,
    metadata: contact.metadata,
    timezone: contact.timezone,
    agentVersion: due[index]!.agent_version,
    verdict: verdicts[index]!,
  }));
}
