import { tenantCtx, withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import * as agents from '../agents/service.ts';
import * as calls from '../calls/service.ts';
import * as compliance from '../compliance/service.ts';
import { isInsideCallWindow, windowOf } from './call-window.ts';
import { claimFacts } from './claim-facts.ts';
import { decide as decideVerdicts } from './dial-verdicts.ts';
import { assignCallerIds } from './caller-ids.ts';
import { askPreDial } from './pre-dial.ts';
import * as repo from './repo.ts';
import { announceStatus, beginDialling, changeStatus, startProblem } from './service.ts';

const SCHEDULED_BATCH = 20;
const CALL_BATCH = 200;

/**
 * One pass of the dialer (worker role): start SCHEDULED campaigns that are due, move live calls
 * on, dial the due contacts of every RUNNING campaign inside its call window, and complete the
 * campaigns with nothing left to dial. Every step locks with SKIP LOCKED, so any number of worker
 * processes can run it at once. Returns how much work it did (0: idle).
 */
export async function dialerTick(deps: Deps): Promise<number> {
  const now = deps.clock.now();
  let work = await startDueScheduled(deps, now);
  for (;;) {
    const moved = await calls.advanceDueCalls(deps, now, CALL_BATCH);
    work += moved;
    if (moved < CALL_BATCH) break;
  }
  for (const campaign of await repo.runningCampaigns(deps.db)) {
    if (campaign.asks_pre_dial) work += await askPreDial(deps, campaign.tenant_id, campaign.id, now);
    work += await dialCampaign(deps, campaign.tenant_id, campaign.id, now);
  }
  work += await completeFinished(deps, now);
  return work;
}

async function completeFinished(deps: Deps, now: Date): Promise<number> {
  return withTransaction(deps, async (txDeps) => {
    const completed = await repo.completeFinishedCampaigns(txDeps.db, now);
    for (const row of completed) await announceStatus(tenantCtx(txDeps, row.tenant_id), row);
    return completed.length;
  });
}

async function startDueScheduled(deps: Deps, now: Date): Promise<number> {
  return withTransaction(deps, async (txDeps) => {
    const due = await repo.lockDueScheduled(txDeps.db, now, SCHEDULED_BATCH);
    for (const campaign of due) {
      const ctx = tenantCtx(txDeps, campaign.tenant_id);
      const problem = await startProblem(ctx, campaign);
      // A campaign that cannot start stays SCHEDULED and says why; it starts once fixed.
      if (problem) await repo.setStatusReason(txDeps.db, campaign.tenant_id, campaign.id, `Not started: ${problem.message}`);
      else await beginDialling(ctx, campaign);
    }
    return due.length;
  });
}

/** Claims and dials the campaign's due contacts, within its concurrency and its number's pace. */
async function dialCampaign(deps: Deps, tenantId: string, campaignId: string, now: Date): Promise<number> {
  const claimed = await withTransaction(
    tenantCtx(deps, tenantId),
    async (ctx): Promise<{ count: number; toPlace: calls.AttemptToPlace[] }> => {
      const tx = ctx.db;
      const campaign = await repo.lockRunningCampaign(tx, tenantId, campaignId);
      // Read in the campaign's zone, the window is closed for everyone at once; read in each contact's, contact by contact.
      if (!campaign || (campaign.window_time_zone === 'CAMPAIGN' && !isInsideCallWindow(now, windowOf(campaign))))
        return { count: 0, toPlace: [] };
      const number = campaign.voice_number_id ? await agents.findVoiceNumber(ctx, campaign.voice_number_id) : undefined;
      if (!number || !campaign.agent_id) {
        await changeStatus(
          ctx,
          campaignId,
          ['RUNNING'],
          'PAUSED',
          'Paused: the campaign lost its agent or voice number and cannot dial; cancel it and create a new one.',
        );
        return { count: 1, toPlace: [] };
      }
      const providerProblem = await calls.providerProblem(ctx, number.provider);
      if (providerProblem) {
        await changeStatus(ctx, campaignId, ['RUNNING'], 'PAUSED', `Paused: ${providerProblem}`);
        return { count: 1, toPlace: [] };
      }
      const slots = campaign.max_concurrent_calls - (await repo.liveContactCount(tx, tenantId, campaignId));
      if (slots <= 0) return { count: 0, toPlace: [] };
      const due = await repo.dueContacts(tx, tenantId, campaignId, now, slots, campaign.pre_dial_webhook !== null);
      if (due.length === 0) return { count: 0, toPlace: [] };
      const { skipped, dialable, decide } = await judgeClaim(ctx, campaign, due, now);
      // The pool's numbers, each within its pace and daily cap (a campaign of one number: that number at its pace).
      const assigned = await assignCallerIds(ctx, campaign, number, dialable, now, deps.config.dialer.callsPerSecond);
      const claimed = assigned.map(({ contact }) => contact);
      await decide(claimed.map((contact) => contact.contact_id));
      if (claimed.length === 0) return { count: skipped, toPlace: [] };
      const started = await calls.startAttempts(
        ctx,
        assigned.map(({ contact, voiceNumber }) => ({
          agentId: campaign.agent_id!,
          agentVersion: contact.agent_version,
          campaignId,
          contact: { id: contact.contact_id, phoneNumber: contact.phone_number, name: contact.name, metadata: contact.metadata },
          attempt: contact.attempts + 1,
          voiceNumber,
          dialTimeout: campaign.dial_timeout,
          detectAnsweringMachine: campaign.answering_machine?.detect === true,
        })),
      );
      await repo.markDialling(tx, tenantId, campaignId, started.calls, campaign.max_attempts);
      return { count: skipped + claimed.length, toPlace: started.toPlace };
    },
  );
  // Provider calls are placed after the attempt is committed, never inside the transaction.
  await calls.placeAttempts(tenantCtx(deps, tenantId), claimed.toPlace);
  return claimed.count;
}

/**
 * The verdict on each claimed contact, from facts read once for the whole claim (the do-not-call
 * list as it is now, consents, the calls placed to each number, the tenant's settings): skips
 * and waits are written at once; `decide` records every decision once the dialled contacts are
 * known (those the pace let through), and a waiting contact's record only when its reason changes.
 */
async function judgeClaim(ctx: TenantCtx, campaign: repo.CampaignRow, due: repo.DueContact[], now: Date) {
  const numbers = [...new Set(due.map((contact) => contact.phone_number))];
  // Another campaign's claim may be dialling the same people: its calls count once it commits.
  await calls.lockCalledNumbers(ctx, numbers);
  const verdicts = decideVerdicts(due, await claimFacts(ctx, campaign, numbers, now));
  const judged = due.map((contact, index) => ({ contact, verdict: verdicts[index]! }));
  const skips = judged.filter(({ verdict }) => verdict.verdict === 'skip');
  for (const reason of new Set(skips.map(({ verdict }) => verdict.reason!)))
    await repo.skipContacts(
      ctx.db,
      ctx.tenantId,
      campaign.id,
      skips.filter(({ verdict }) => verdict.reason === reason).map(({ contact }) => contact.contact_id),
      reason,
    );
  const waits = judged.flatMap(({ contact, verdict }) =>
    verdict.verdict === 'wait' ? [{ contactId: contact.contact_id, until: verdict.until, reason: verdict.reason }] : [],
  );
  await repo.postponeContacts(ctx.db, ctx.tenantId, campaign.id, waits);
  return {
    skipped: skips.length + waits.length,
    dialable: judged.filter(({ verdict }) => verdict.verdict === 'dial').map(({ contact }) => contact),
    async decide(dialledIds: string[]) {
      const dialled = new Set(dialledIds);
      const recorded = judged.filter(({ contact, verdict }) =>
        verdict.verdict === 'dial' ? dialled.has(contact.contact_id) : verdict.verdict === 'skip' || verdict.reason !== contact.wait_reason,
      );
      await compliance.recordDecisions(
        ctx,
        recorded.map(({ contact, verdict }) => ({
          campaignId: campaign.id,
          contactId: contact.contact_id,
          phoneNumber: contact.phone_number,
          verdict: verdict.verdict,
          reason: verdict.reason,
          facts: verdict.facts,
        })),
      );
    },
  };
}

/** The dialer loop of a worker process: at once again while there is work, else every tick. */
export function startDialer(deps: Deps): { stop(): Promise<void> } {
  let stopped = false;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    while (!stopped) {
      let work = 0;
      try {
        work = await dialerTick(deps);
      } catch (error) {
        deps.log.error({ err: error }, 'dialer tick failed');
      }
      if (work === 0 && !stopped) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, deps.config.dialer.tickMs).unref();
        });
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake?.();
      await loop;
    },
  };
}
