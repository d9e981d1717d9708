/**
 * The calls module owns a call's life: the attempt is recorded, placed through its provider, moved
 * by the provider's events (ringing, answered, ended) and ended once with its usage, cost, wallet
 * debit and `call.ended`. Who is called and when is the dialer's business (campaigns); what follows
 * a call is for the modules that consume `call.ended` or listen to its end (onCallEnded).
 */
import { createHmac } from 'node:crypto';
import type { Decimal } from 'decimal.js';
import { oncePer, perTurn } from '../../platform/batches.ts';
import { addSeconds, isoOrNull } from '../../platform/clock.ts';
import { withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { Page } from '../../platform/pagination.ts';
import { dayEnd, dayStart } from '../../platform/schemas.ts';
import type { ServerKeys } from '../../platform/secrets.ts';
import { ProviderError } from '../../providers/errors.ts';
import { telephonyProvider, type ProviderWith } from '../../providers/registry.ts';
import type {
  AnsweredBy,
  CallInstructions,
  CallOutcome,
  CallUpdate,
  ConversationRelaySpeech,
  Connection,
  DialRequest,
  IncomingCallRequest,
  ProviderWebhook,
  RingingCall,
  TelephonyConnection,
} from '../../providers/types.ts';
import * as agents from '../agents/service.ts';
import * as compliance from '../compliance/service.ts';
import type { Agent, VoiceNumber } from '../agents/schemas.ts';
import * as contacts from '../contacts/service.ts';
import { normalizePhoneNumber } from '../../platform/phone-numbers.ts';
import * as events from '../events/service.ts';
import * as identity from '../identity/service.ts';
import * as integrations from '../integrations/service.ts';
import { costOf, NO_USAGE, rateCardOf, type CallUsage } from './rate-card.ts';
import * as repo from './repo.ts';
import type { Call, CallOutcomeRecord, CallQuery, EndReason, TranscriptTurn } from './schemas.ts';

export type { CallUsage, TranscriptTurn, EndReason, CallOutcomeRecord };
/** The call's schemas other modules' records reuse (a test chat's transcript and usage). */
export {
  CallCost as CallCostSchema,
  CallUsage as CallUsageSchema,
  END_REASONS,
  TranscriptTurn as TranscriptTurnSchema,
} from './schemas.ts';

/** Call recordings: written by the media pipeline in chunks, served as WAV, deleted after their retention. */
export { appendRecording, recordingWav, type RecordingChunk } from './recordings.ts';

/** What usage costs on the service's rate card, per component (a test chat is priced as a call is). */
export const priceUsage = (ctx: Pick<TenantCtx, 'config'>, usage: CallUsage) => costOf(usage, rateCardOf(ctx.config.rates));
export { NO_USAGE };

export const CALL_ENDED = 'call.ended';
export interface CallEndedJob {
  tenantId: string;
  callId: string;
  /** How the call ended, for the operator's log line (absent from a job sent without it). */
  summary?: { outcome: string | null; durationSec: number | null; endReason: string | null; cost: string };
}

/** One readable line of the log for a call that ended: "Call … ended ANSWERED after 42 s (contact_hung_up), cost 0.0014". */
export function endedCallLine(job: CallEndedJob): string {
  const { callId, summary } = job;
  if (!summary) return `Call ${callId} ended`;
  const after = summary.outcome === 'ANSWERED' ? ` after ${summary.durationSec} s` : '';
  const why = summary.endReason ? ` (${summary.endReason})` : '';
  return `Call ${callId} ended ${summary.outcome ?? 'without an outcome'}${after}${why}, cost ${summary.cost}`;
}

/**
 * Sent in the transaction that answers a call its provider drives itself (the simulator) and that
 * has an agent: the conversation module converses on it.
 */
export const CALL_ANSWERED = 'call.answered';
export interface CallAnsweredJob {
  tenantId: string;
  callId: string;
}

export type CallRow = repo.CallRow;

export const toCall = (row: repo.CallRow): Call => ({
  id: row.id,
  agentId: row.agent_id,
  campaignId: row.campaign_id,
  contactId: row.contact_id,
  voiceNumberId: row.voice_number_id,
  direction: row.direction,
  fromNumber: row.from_number,
  toNumber: row.to_number,
  attempt: row.attempt,
  status: row.status,
  outcome: row.outcome as Call['outcome'],
  failureReason: row.failure_reason,
  startedAt: row.started_at.toISOString(),
  answeredAt: isoOrNull(row.answered_at),
  endedAt: isoOrNull(row.ended_at),
  durationSec: row.duration_sec,
  endReason: row.end_reason as EndReason | null,
  answeredBy: row.answered_by as AnsweredBy | null,
  transcript: row.transcript as Call['transcript'],
  outcomes: row.outcomes as Call['outcomes'],
  recordingUrl: row.recording_url,
  // Calls ended before tokens were counted by direction have the older, shorter usage.
  usage: row.usage && ({ ...NO_USAGE, ...row.usage } as Call['usage']),
  cost: row.cost as Call['cost'],
  createdAt: row.created_at.toISOString(),
});

// ---------------------------------------------------------------------------------------------
// Ending a call, and who hears of it

export interface CallResult {
  outcome: CallOutcome;
  endedAt: Date;
  answeredAt?: Date | null;
  durationSec?: number;
  failureReason?: string | null;
  permanent?: boolean;
  endReason?: EndReason | null;
  usage?: CallUsage;
}

/** What a module listening to call ends is told, inside the transaction that ends the calls. */
export interface EndedCall {
  call: repo.CallRow;
  /** The wallet's balance after this call's debit when it left nothing to spend; otherwise null. */
  walletEmptied: Decimal | null;
}

/**
 * A listener hears of a tenant's calls ended by one statement all at once, so that its own writes
 * can be one statement too. `cache` is shared by the calls ended in one transaction, so a listener
 * reads what they have in common (a campaign's settings) once, not once per call.
 */
export type CallEndedListener = (ctx: TenantCtx, ended: EndedCall[], cache: Map<string, unknown>) => Promise<void>;

const callEndedListeners = new Set<CallEndedListener>();

/**
 * Another module acts inside the transaction that ends each call (the campaigns module records the
 * attempt's result there). Registered once by the composition root (src/runtime.ts); a listener
 * registered twice runs once.
 */
export function onCallEnded(listener: CallEndedListener): void {
  callEndedListeners.add(listener);
}

/**
 * What the calls moved on in one transaction share (advanceDueCalls): what listeners and events
 * read once for all of them (a campaign's settings, a tenant's webhook subscribers), and the jobs
 * they enqueue, sent in one statement before the transaction commits (sendBatchJobs).
 */
interface CallBatch {
  cache: Map<string, unknown>;
  jobs: { name: string; data: object }[];
}

const newCallBatch = (): CallBatch => ({ cache: new Map(), jobs: [] });
const sendBatchJobs = (txCtx: Pick<TenantCtx, 'db' | 'jobs'>, batch: CallBatch) => txCtx.jobs.sendMany(batch.jobs, { tx: txCtx.db });

interface Finish {
  tenantId: string;
  callId: string;
  result: CallResult;
}

/**
 * Ends calls in the caller's transaction, any tenant's, in one statement: outcome, usage and cost,
 * each call's wallet debit, the listeners (once per tenant) and `call.ended` (sent with the batch's
 * jobs), all or nothing. A second end of the same call (a repeated provider callback, a retried
 * job) changes nothing.
 */
async function finishCalls(ctx: Omit<TenantCtx, 'tenantId'>, finishes: Finish[], batch: CallBatch): Promise<void> {
  const priced = new Map(
    finishes.map(({ callId, result }) => {
      const usage = result.usage ?? NO_USAGE;
      return [callId, { usage, ...priceUsage(ctx, usage) }];
    }),
  );
  const endedRows = await repo.endCalls(
    ctx.db,
    finishes.map(({ tenantId, callId, result }) => {
      const { usage, cost } = priced.get(callId)!;
      return {
        tenantId,
        id: callId,
        outcome: result.outcome,
        failureReason: result.failureReason ?? null,
        permanent: result.permanent ?? false,
        endedAt: result.endedAt,
        answeredAt: result.answeredAt ?? null,
        durationSec: result.durationSec ?? 0,
        endReason: result.endReason ?? null,
        usage: { ...usage },
        cost: { ...cost },
        costTotal: cost.total,
      };
    }),
  );
  const tenants = new Map<string, repo.CallRow[]>();
  for (const row of endedRows) {
    const rows = tenants.get(row.tenant_id);
    if (rows) rows.push(row);
    else tenants.set(row.tenant_id, [row]);
  }
  for (const [tenantId, rows] of tenants) {
    const callCtx: TenantCtx = { ...ctx, tenantId };
    const ended: EndedCall[] = [];
    for (const call of rows) {
      const { total } = priced.get(call.id)!;
      let walletEmptied: Decimal | null = null;
      if (total.greaterThan(0)) {
        const balance = await identity.debitWallet(ctx.db, tenantId, total, `Call ${call.id}`, call.id);
        const low = await identity.crossedIntoLowBalance(ctx.db, tenantId);
        if (low) {
          await events.emitEvent(
            callCtx,
            'wallet.low_balance',
            { balance: low.balance, threshold: low.threshold, currency: low.currency },
            null,
          );
        }
        if (!balance.greaterThan(0)) walletEmptied = balance;
      }
      ended.push({ call, walletEmptied });
    }
    for (const listener of callEndedListeners) await listener(callCtx, ended, batch.cache);
    for (const { call } of ended) {
      const summary = {
        outcome: call.outcome,
        durationSec: call.duration_sec,
        endReason: call.end_reason,
        cost: priced.get(call.id)!.total.toFixed(4),
      };
      batch.jobs.push({ name: CALL_ENDED, data: { tenantId, callId: call.id, summary } satisfies CallEndedJob });
      await events.emitEvent(callCtx, 'call.completed', toCall(call), call.agent_id, batch.cache);
    }
  }
}

/** Ends one call in the caller's transaction (finishCalls); with a batch, its jobs go when the batch's do. */
async function finishCall(ctx: TenantCtx, callId: string, result: CallResult, batch?: CallBatch): Promise<void> {
  const own = batch ?? newCallBatch();
  await finishCalls(ctx, [{ tenantId: ctx.tenantId, callId, result }], own);
  if (!batch) await sendBatchJobs(ctx, own);
}

/**
 * What an answered call used: what its conversation recorded as it ran (tokens, characters, seconds
 * of speech) and the line's seconds; nothing is estimated from the call's length.
 */
const usageOf = (call: repo.CallRow, telephonySeconds: number): CallUsage => ({
  ...NO_USAGE,
  ...call.usage,
  telephonySeconds,
  telephonyProvider: telephonySeconds > 0 ? call.provider : null,
});

/** An answered call that ends now, talked from its answer until `endedAt`. */
function answeredUntil(call: repo.CallRow, endedAt: Date, extra: Partial<CallResult> = {}): CallResult {
  const answeredAt = call.answered_at ?? endedAt;
  const seconds = Math.max(0, Math.round((endedAt.getTime() - answeredAt.getTime()) / 1000));
  return { outcome: 'ANSWERED', endedAt, answeredAt, durationSec: seconds, usage: usageOf(call, seconds), ...extra };
}

// ---------------------------------------------------------------------------------------------
// Starting and placing attempts

/** One call the dialer decided to make. */
export interface NewAttempt {
  agentId: string;
  campaignId: string;
  contact: { id: string; phoneNumber: string; name: string | null; metadata: Record<string, unknown> | null };
  attempt: number;
  voiceNumber: { id: string; phoneNumber: string; provider: string };
  dialTimeout: number;
  /** The campaign asks who answers (answering-machine detection), on providers that can say. */
  detectAnsweringMachine?: boolean;
}

/** An attempt recorded and waiting to be placed once its transaction committed. */
export interface AttemptToPlace {
  callId: string;
  provider: string;
  request: DialRequest;
}

/** Why calls on numbers of `provider` cannot be placed for this tenant now, or null. */
export async function providerProblem(ctx: TenantCtx, providerName: string): Promise<string | null> {
  const provider = telephonyProvider(providerName);
  if (await integrations.connectionTo(ctx, provider)) return null;
  return `${provider.title} is not connected; connect it with PUT /api/v1/integrations/${provider.integration?.kind}, then resume the campaign.`;
}

/**
 * The token a call's media stream must present (in its custom parameters): our signature over the
 * tenant and the call, so a stream can bind only to the call it was placed for.
 */
export const mediaStreamToken = (keys: Pick<ServerKeys, 'mediaStreamKey'>, tenantId: string, callId: string): string =>
  createHmac('sha256', keys.mediaStreamKey).update(`${tenantId}.${callId}`).digest('base64url');

type RelaySpeech = Omit<ConversationRelaySpeech, 'url'>;

/** How the provider's conversation relay voices the agent's calls, where it has one; null when they stream to us. */
const relaySpeechOn = (provider: ProviderWith<'telephony'>, agent: Agent | undefined): RelaySpeech | null =>
  provider.telephony.conversationRelay && agent ? agents.relaySpeechOf(agent) : null;

function dialRequestOf(
  ctx: Pick<TenantCtx, 'config' | 'serverKeys' | 'tenantId'>,
  provider: ProviderWith<'telephony'>,
  call: repo.NewCall,
  relay: RelaySpeech | null = null,
): DialRequest {
  const slug = provider.name.toLowerCase();
  return {
    callId: call.id,
    from: call.from_number,
    to: call.to_number,
    dialTimeoutSec: call.dial_timeout,
    statusCallbackUrl: statusCallbackUrl(ctx, provider.name),
    mediaStreamUrl: mediaStreamUrl(ctx, provider.name),
    mediaStreamToken: mediaStreamToken(ctx.serverKeys, ctx.tenantId, call.id),
    ...(relay ? { conversationRelay: { url: conversationRelayUrl(ctx, provider.name), ...relay } } : {}),
    ...(call.machine_detection
      ? { answeringMachineDetection: { callbackUrl: `${ctx.config.publicUrl}/api/v1/telephony/${slug}/answered-by` } }
      : {}),
  };
}

/**
 * Records attempts in the caller's transaction, counted before anything is dialled (a crash can
 * lose an attempt, never repeat one). A provider that places calls without the network places
 * them here; the others are returned, to be placed with `placeAttempts` after the commit.
 */
export async function startAttempts(
  ctx: TenantCtx,
  attempts: NewAttempt[],
): Promise<{ calls: { contact_id: string; call_id: string }[]; toPlace: AttemptToPlace[] }> {
  const now = ctx.clock.now();
  const toPlace: AttemptToPlace[] = [];
  const agentsById = new Map<string, Agent | undefined>();
  for (const agentId of new Set(attempts.map((attempt) => attempt.agentId)))
    agentsById.set(agentId, await agents.requireAgent(ctx, agentId).catch(() => undefined));
  const rows = attempts.map((attempt): repo.NewCall => {
    const provider = telephonyProvider(attempt.voiceNumber.provider);
    const call: repo.NewCall = {
      id: newId(),
      agent_id: attempt.agentId,
      campaign_id: attempt.campaignId,
      contact_id: attempt.contact.id,
      contact_name: attempt.contact.name,
      contact_metadata: attempt.contact.metadata,
      voice_number_id: attempt.voiceNumber.id,
      direction: 'OUTGOING',
      from_number: attempt.voiceNumber.phoneNumber,
      to_number: attempt.contact.phoneNumber,
      attempt: attempt.attempt,
      status: 'QUEUED',
      provider: provider.name,
      provider_call_id: null,
      dial_timeout: attempt.dialTimeout,
      machine_detection: (attempt.detectAnsweringMachine ?? false) && provider.telephony.answeringMachineDetection === true,
      deadline_at: addSeconds(now, ctx.config.dialer.confirmTimeoutSeconds),
      started_at: now,
    };
    const request = dialRequestOf(ctx, provider, call, relaySpeechOn(provider, agentsById.get(attempt.agentId)));
    const placed = provider.telephony.placeAtOnce?.(request, now, ctx.config.providerSettings);
    if (!placed) {
      toPlace.push({ callId: call.id, provider: provider.name, request });
      return call;
    }
    return { ...call, status: placed.status, provider_call_id: placed.providerCallId, deadline_at: placed.deadlineAt };
  });
  await repo.insertCalls(ctx.db, ctx.tenantId, rows);
  return { calls: rows.map((row) => ({ contact_id: row.contact_id!, call_id: row.id })), toPlace };
}

/**
 * Asks each call's provider to dial (after the attempts were committed). The provider's answer
 * moves the call to RINGING with a deadline for its final status; a refusal ends it as FAILED, for
 * good when the provider says the number can never be called.
 */
export async function placeAttempts(ctx: TenantCtx, attempts: AttemptToPlace[]): Promise<void> {
  const lines = new Map<string, Promise<TelephonyConnection>>();
  const lineTo = (name: string) => {
    let line = lines.get(name);
    if (!line) lines.set(name, (line = connect(ctx, name)));
    return line;
  };
  // Asked again just before dialling: a number put on the do-not-call list since the attempt was
  // claimed (an opt-out reply arriving meanwhile) is not dialled, and not retried.
  const barred = await compliance.listedNumbers(
    ctx,
    attempts.map((attempt) => attempt.request.to),
  );
  await Promise.all(
    attempts.map(async ({ callId, provider, request }) => {
      if (barred.has(request.to)) {
        const failureReason = 'Not dialled: the number was put on the do-not-call list as the call was being placed.';
        await withTransaction(ctx, (txCtx) =>
          finishCall(txCtx, callId, { outcome: 'FAILED', endedAt: ctx.clock.now(), permanent: true, failureReason }),
        );
        return;
      }
      try {
        const { providerCallId } = await (await lineTo(provider)).dial(request);
        const deadlineAt = addSeconds(ctx.clock.now(), request.dialTimeoutSec + ctx.config.dialer.maxCallSeconds);
        await repo.updateLiveCall(ctx.db, ctx.tenantId, callId, { status: 'RINGING', providerCallId, deadlineAt });
      } catch (error) {
        const permanent = error instanceof ProviderError && error.permanent;
        await withTransaction(ctx, (txCtx) =>
          finishCall(txCtx, callId, {
            outcome: 'FAILED',
            endedAt: ctx.clock.now(),
            permanent,
            failureReason: (error as Error).message,
          }),
        );
      }
    }),
  );
}

/** The tenant's line to a telephony provider; throws when the provider is not connected. */
async function connect(ctx: TenantCtx, providerName: string): Promise<TelephonyConnection> {
  const provider = telephonyProvider(providerName);
  const connection = await integrations.connectionTo(ctx, provider);
  if (!connection) throw new Error(`${provider.name} is not connected for this tenant; connect it under /api/v1/integrations.`);
  return provider.telephony.connect(connection);
}

// ---------------------------------------------------------------------------------------------
// Moving live calls on

/**
 * Moves on every live call whose deadline passed, in batches, each batch one transaction: a call
 * of a provider that drives its own calls (the simulator) takes its next steps; a call of any other
 * provider that got no final status in time is given up as FAILED. Returns how many calls moved.
 * Rows are locked with SKIP LOCKED, so workers share the work.
 */
export async function advanceDueCalls(ctx: Omit<TenantCtx, 'tenantId'>, now: Date, batchSize = 200): Promise<number> {
  return withTransaction(ctx, async (txCtx) => {
    const due = await repo.lockDueCalls(txCtx.db, now, batchSize);
    const batch = newCallBatch();
    // The calls that end here end together (finishCalls), after the loop.
    const finishes: Finish[] = [];
    for (const call of due) {
      const callCtx: TenantCtx = { ...txCtx, tenantId: call.tenant_id };
      const { telephony } = telephonyProvider(call.provider);
      if (!telephony.advance) {
        const failureReason =
          call.status === 'QUEUED'
            ? 'The provider never confirmed the call; it was given up.'
            : 'The provider sent no final status in time; the call was given up.';
        finishes.push({ tenantId: call.tenant_id, callId: call.id, result: { outcome: 'FAILED', endedAt: now, failureReason } });
        continue;
      }
      const step = telephony.advance(
        {
          status: call.status as 'QUEUED' | 'RINGING' | 'IN_PROGRESS',
          direction: call.direction,
          attempt: call.attempt,
          dialTimeout: call.dial_timeout,
          deadlineAt: call.deadline_at!,
          answeredAt: call.answered_at,
          contactName: call.contact_name,
          contactMetadata: call.contact_metadata,
          detectsAnsweringMachine: call.machine_detection,
        },
        now,
        ctx.config.providerSettings,
      );
      if (step.live) {
        await repo.updateLiveCall(txCtx.db, call.tenant_id, call.id, {
          status: step.status,
          answeredAt: step.answeredAt,
          deadlineAt: step.deadlineAt,
        });
        const answered = { ...call, status: step.status, answered_at: step.answeredAt };
        // The simulator's verdict goes the way a provider's detection callback goes, and is recorded at once.
        const decision = (step.answeredBy && (await decideOnAnswerer(callCtx, answered, step.answeredBy))) || CONVERSE;
        if (decision.act !== 'converse') await recordDecision(callCtx, answered, decision, batch);
        else if (step.status === 'IN_PROGRESS' && call.status !== 'IN_PROGRESS' && call.agent_id)
          batch.jobs.push({ name: CALL_ANSWERED, data: { tenantId: call.tenant_id, callId: call.id } satisfies CallAnsweredJob });
      } else if (step.outcome === 'ANSWERED') {
        // The simulated contact's time on the line is up: they hang up, whatever was being said.
        const answered = { ...call, answered_at: step.answeredAt };
        finishes.push({
          tenantId: call.tenant_id,
          callId: call.id,
          result: answeredUntil(answered, step.endedAt, { endReason: 'contact_hung_up' }),
        });
      } else {
        const { outcome, endedAt, permanent, failureReason } = step;
        finishes.push({ tenantId: call.tenant_id, callId: call.id, result: { outcome, endedAt, permanent, failureReason } });
      }
    }
    await finishCalls(txCtx, finishes, batch);
    await sendBatchJobs(txCtx, batch);
    return due.length;
  });
}

/**
 * A provider's status callback (`POST /telephony/{provider}/status`): finds the call by the
 * provider's call id, checks the provider's signature with that tenant's credentials, and applies
 * the update. Ringing and answering move the call on; a final status ends it with its outcome,
 * duration, usage and cost. Repeated and late callbacks change nothing.
 */
export async function receiveStatusCallback(
  ctx: Omit<TenantCtx, 'tenantId'>,
  providerSlug: string,
  webhook: ProviderWebhook,
): Promise<void> {
  const provider = telephonyProvider(providerSlug.toUpperCase());
  const callbacks = provider.telephony.callbacks!;
  await withTransaction(ctx, async (txCtx) => {
    const { call, callCtx } = await lockVerifiedCall(txCtx, provider, webhook);
    let update: CallUpdate | null;
    try {
      update = callbacks.read(webhook, call.answered_at !== null || call.status === 'IN_PROGRESS');
    } catch (error) {
      throw appError('UNKNOWN_CALL_STATUS', { reason: (error as Error).message });
    }
    if (update) await applyUpdate(callCtx, call, update);
  });
}

/**
 * The call a provider's request is about (locked for an update when asked), once the provider's
 * signature checked out with that tenant's credentials. One answer for an unknown call and a bad
 * signature: a caller learns nothing about our calls.
 */
async function verifiedProviderCall(
  deps: Omit<TenantCtx, 'tenantId'>,
  provider: ProviderWith<'telephony'>,
  webhook: ProviderWebhook,
  providerCallId: string | null | undefined,
  { lock }: { lock: boolean },
): Promise<{ call: repo.CallRow; callCtx: TenantCtx }> {
  const callbacks = provider.telephony.callbacks!;
  const find = lock ? repo.lockCallByProviderId : repo.findCallByProviderId;
  const call = providerCallId ? await find(deps.db, provider.name, providerCallId) : undefined;
  const callCtx = call && { ...deps, tenantId: call.tenant_id };
  const connection = callCtx ? await integrations.connectionTo(callCtx, provider) : undefined;
  if (!call || !callCtx || !connection || !callbacks.verify(webhook, connection.credentials)) {
    throw appError('INVALID_SIGNATURE', { header: callbacks.signatureHeader });
  }
  return { call, callCtx };
}

/** The call a provider's status callback is about, locked for its update. */
const lockVerifiedCall = (txCtx: Omit<TenantCtx, 'tenantId'>, provider: ProviderWith<'telephony'>, webhook: ProviderWebhook) =>
  verifiedProviderCall(txCtx, provider, webhook, provider.telephony.callbacks!.callIdOf(webhook), { lock: true });

async function applyUpdate(ctx: TenantCtx, call: repo.CallRow, update: CallUpdate): Promise<void> {
  if (call.status === 'ENDED') return;
  const now = ctx.clock.now();
  if (update.status !== 'ENDED') {
    if (update.status === 'QUEUED' || (update.status === 'RINGING' && call.status === 'IN_PROGRESS')) return;
    await repo.updateLiveCall(ctx.db, call.tenant_id, call.id, {
      status: update.status,
      answeredAt: update.status === 'IN_PROGRESS' ? now : null,
      deadlineAt: call.deadline_at,
    });
    return;
  }
  if (update.outcome !== 'ANSWERED') {
    await finishCall(ctx, call.id, { outcome: update.outcome, endedAt: now, failureReason: update.failureReason ?? null });
    return;
  }
  // A line a machine answered did not reach the contact (billed for the line all the same).
  const outcome = call.answered_by === 'machine' || call.answered_by === 'fax' ? 'UNANSWERED' : 'ANSWERED';
  // A provider that does not say how long was talked (Telnyx) is timed from the answer we saw.
  if (update.durationSec === null && call.answered_at) {
    await finishCall(ctx, call.id, answeredUntil(call, now, { outcome }));
    return;
  }
  // The provider's duration is the talk time billed; without an answer seen, it dates the answer.
  const seconds = update.durationSec ?? 0;
  const answeredAt = call.answered_at ?? new Date(now.getTime() - seconds * 1000);
  await finishCall(ctx, call.id, {
    outcome,
    endedAt: now,
    answeredAt,
    durationSec: seconds,
    usage: usageOf(call, seconds),
    // A conversation the agent did not end (no reason noted) was ended by the caller hanging up.
    ...(call.conversation_started_at && !call.end_reason ? { endReason: 'contact_hung_up' as const } : {}),
  });
}

// ---------------------------------------------------------------------------------------------
// Who answered: answering-machine detection and the campaign's policy

/** What a campaign does when a machine answers one of its calls, its voicemail filled for the call. */
export type MachinePolicy = { onMachine: 'HANG_UP_AND_RETRY' } | { onMachine: 'LEAVE_VOICEMAIL'; message: string; language: string };
export type MachinePolicyOf = (ctx: TenantCtx, call: repo.CallRow) => Promise<MachinePolicy | null>;

let machinePolicyOf: MachinePolicyOf = () => Promise.resolve(null);

/**
 * Who decides what a machine gets (the campaign's policy, its voicemail rendered for the call's
 * contact and agent): registered once by the composition root, since campaigns and agents' templates
 * sit above this module. Without one, a machine is talked to as a person would be.
 */
export function decideMachinesWith(policyOf: MachinePolicyOf): void {
  machinePolicyOf = policyOf;
}

/** What follows a verdict: the conversation goes on, the call ends (and is hung up), or a voicemail is left. */
type Decision = { act: 'converse' } | { act: 'end'; result: CallResult } | { act: 'voicemail'; turn: TranscriptTurn; language: string };

const CONVERSE: Decision = { act: 'converse' };

/**
 * Stores who answered a live, answered call (once: a repeated verdict decides nothing) and decides
 * what follows: a person, or no clear verdict, is talked to (call-screening assistants answer as
 * people and hear who is calling and why); a fax ends the call for good; a machine gets its
 * campaign's policy, hung up to be tried again later or left a voicemail and done.
 */
async function decideOnAnswerer(ctx: TenantCtx, call: repo.CallRow, answeredBy: AnsweredBy): Promise<Decision | undefined> {
  if (!(await repo.setAnsweredBy(ctx.db, ctx.tenantId, call.id, answeredBy))) return undefined;
  const now = ctx.clock.now();
  const endedByMachine = (extra: Partial<CallResult>): Decision => ({
    act: 'end',
    result: answeredUntil(call, now, { endReason: 'answering_machine', ...extra }),
  });
  if (answeredBy === 'fax') {
    return endedByMachine({ outcome: 'FAILED', permanent: true, failureReason: 'A fax machine answered; the number is not called again.' });
  }
  if (answeredBy !== 'machine') return CONVERSE;
  const policy = await machinePolicyOf(ctx, call);
  if (!policy) return CONVERSE;
  if (policy.onMachine === 'HANG_UP_AND_RETRY') {
    return endedByMachine({ outcome: 'UNANSWERED', failureReason: 'An answering machine answered; hung up, to call again later.' });
  }
  return {
    act: 'voicemail',
    turn: { role: 'agent', text: policy.message, at: now.toISOString(), by: 'voicemail' },
    language: policy.language,
  };
}

/**
 * Records a decision on the call: an end ends it; a voicemail adds its turn, and ends a call its
 * provider drives itself at once (there is no line to speak on), not reached but done.
 */
async function recordDecision(ctx: TenantCtx, call: repo.CallRow, decision: Decision, batch?: CallBatch): Promise<void> {
  if (decision.act === 'end') return finishCall(ctx, call.id, decision.result, batch);
  if (decision.act !== 'voicemail') return;
  await repo.addVoicemailTurn(ctx.db, ctx.tenantId, call.id, decision.turn);
  if (telephonyProvider(call.provider).telephony.advance) {
    await finishCall(ctx, call.id, answeredUntil(call, ctx.clock.now(), { outcome: 'UNANSWERED', endReason: 'voicemail_left' }), batch);
  }
}

/**
 * A provider's answering-machine detection callback (`POST /telephony/{provider}/answered-by`),
 * verified as status callbacks are. The verdict is stored once; a call not yet seen answered is
 * answered when detection started. An end (a machine hung up on, a fax) is recorded, then the call
 * hung up at the provider; a voicemail is spoken at the provider, then recorded, so a voicemail
 * the provider refused is never shown as left (the call's final status then ends it not reached).
 */
export async function receiveAnsweredByCallback(
  deps: Omit<TenantCtx, 'tenantId'> & Pick<Deps, 'log'>,
  providerSlug: string,
  webhook: ProviderWebhook,
): Promise<void> {
  const provider = telephonyProvider(providerSlug.toUpperCase());
  const readAnsweredBy = provider.telephony.callbacks!.readAnsweredBy!;
  const decided = await withTransaction(deps, async (txCtx) => {
    const { call, callCtx } = await lockVerifiedCall(txCtx, provider, webhook);
    let verdict: ReturnType<typeof readAnsweredBy>;
    try {
      verdict = readAnsweredBy(webhook);
    } catch (error) {
      throw appError('UNKNOWN_CALL_STATUS', { reason: (error as Error).message });
    }
    if (call.status === 'ENDED' || call.answered_by !== null) return undefined;
    const answered = await answeredForDetection(callCtx, call, verdict.detectionMs);
    const decision = await decideOnAnswerer(callCtx, answered, verdict.answeredBy);
    if (decision?.act === 'end') await recordDecision(callCtx, answered, decision);
    return decision && decision.act !== 'converse' ? { call: answered, decision } : undefined;
  });
  if (!decided) return;
  const { call, decision } = decided;
  const ctx: TenantCtx = { ...deps, tenantId: call.tenant_id };
  try {
    const line = await connect(ctx, call.provider);
    if (decision.act === 'end') await line.hangup(call.provider_call_id!);
    else await line.speakAndHangUp!(call.provider_call_id!, { text: decision.turn.text, language: decision.language });
  } catch (error) {
    // The verdict stands; the call's final status still ends it (not reached) whatever happened here.
    deps.log.error({ err: error, callId: call.id }, 'answering machine: the provider refused the follow-up');
    return;
  }
  if (decision.act === 'voicemail') await withTransaction(ctx, (txCtx) => recordDecision(txCtx, call, decision));
}

/** The call as answered: detection reports only on answered calls, so one not yet seen answered was answered when detection began. */
async function answeredForDetection(ctx: TenantCtx, call: repo.CallRow, detectionMs: number | null): Promise<repo.CallRow> {
  if (call.status === 'IN_PROGRESS' && call.answered_at) return call;
  const now = ctx.clock.now();
  const answeredAt = call.answered_at ?? new Date(now.getTime() - (detectionMs ?? 0));
  await repo.updateLiveCall(ctx.db, call.tenant_id, call.id, { status: 'IN_PROGRESS', answeredAt, deadlineAt: call.deadline_at });
  return { ...call, status: 'IN_PROGRESS', answered_at: answeredAt };
}

// ---------------------------------------------------------------------------------------------
// Reading, hanging up, simulated inbound calls

export async function listCalls(ctx: TenantCtx, query: CallQuery, page: Page) {
  const from = query.from ? dayStart(query.from) : undefined;
  const to = query.to ? dayEnd(query.to) : undefined;
  if (from && to && from > to) throw appError('VALIDATION_FAILED.fromAfterTo', {}, [{ path: '/from', message: 'after to' }]);
  const { rows, total } = await repo.listCalls(ctx.db, ctx.tenantId, { ...query, from, to }, page);
  return { data: rows.map(toCall), total };
}

/** The stored call, for modules that act after it (messaging, analytics). */
export const findCallRow = (ctx: Pick<TenantCtx, 'db' | 'tenantId'>, id: string) => repo.findCall(ctx.db, ctx.tenantId, id);
/**
 * An ended call's row for the modules that follow it up (messaging, analytics): one statement for
 * every call asked in the same turn, by whichever of them asks (a batch of call.ended jobs runs
 * both at once).
 */
export const endedCallRow = oncePer((deps: Deps) => perTurn((tenantId, ids: string[]) => repo.findCalls(deps.db, tenantId, ids)));

/** How often a live view looks for new turns: a conversation's pace, at one light query per viewer. */
const LIVE_POLL_MS = 400;

export type LiveEvent =
  { type: 'turn'; turn: TranscriptTurn } | { type: 'status'; status: string; endReason: EndReason | null } | { type: 'ended'; call: Call };

/**
 * A call as it happens: every turn already said, then each new one, the status as it changes, and
 * the whole call once it has ended. Ends when the call does or `signal` aborts (the viewer left).
 * Works from any API process: it reads the call, whichever worker converses on it.
 */
export async function* followCall(ctx: TenantCtx, id: string, signal: AbortSignal): AsyncGenerator<LiveEvent> {
  let seen = 0;
  let status: string | undefined;
  while (!signal.aborted) {
    const state = await repo.liveState(ctx.db, ctx.tenantId, id, seen);
    if (!state) throw appError('NOT_FOUND', { what: 'Call' });
    for (const turn of state.new_turns) yield { type: 'turn', turn: turn as TranscriptTurn };
    seen = state.turns;
    if (state.status !== status) {
      status = state.status;
      yield { type: 'status', status, endReason: state.end_reason as EndReason | null };
    }
    if (status === 'ENDED') {
      yield { type: 'ended', call: await getCall(ctx, id) };
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, LIVE_POLL_MS);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  }
}

export async function getCall(ctx: TenantCtx, id: string): Promise<Call> {
  const row = await repo.findCall(ctx.db, ctx.tenantId, id);
  if (!row) throw appError('NOT_FOUND', { what: 'Call' });
  return toCall(row);
}

/**
 * Hangs up one live call (calls are hung up one by one). A call its provider drives itself, or one
 * its provider never confirmed, ends here; a provider's call is hung up at the provider, whose
 * final status callback then ends it.
 */
export async function hangupCall(ctx: TenantCtx, id: string): Promise<void> {
  const atProvider = await withTransaction(ctx, async (txCtx) => {
    const call = await repo.lockCall(txCtx.db, ctx.tenantId, id);
    if (!call) throw appError('NOT_FOUND', { what: 'Call' });
    if (call.status === 'ENDED') throw appError('CALL_NOT_LIVE');
    if (!telephonyProvider(call.provider).telephony.advance && call.provider_call_id) return call;
    const now = ctx.clock.now();
    if (call.status === 'IN_PROGRESS') {
      await finishCall(txCtx, id, answeredUntil(call, now, { failureReason: 'Hung up by the user.', endReason: 'hung_up_by_user' }));
    } else {
      await finishCall(txCtx, id, { outcome: 'UNANSWERED', endedAt: now, failureReason: 'Hung up by the user before it was answered.' });
    }
    return undefined;
  });
  if (!atProvider) return;
  try {
    await (await connect(ctx, atProvider.provider)).hangup(atProvider.provider_call_id!);
  } catch (error) {
    throw appError('PROVIDER_ERROR', { provider: atProvider.provider, reason: (error as Error).message });
  }
}

/** A simulated incoming call to one of the tenant's numbers whose provider drives its own calls (the simulator). */
export async function simulateInboundCall(ctx: TenantCtx, input: { voiceNumberId: string; fromNumber: string }): Promise<Call> {
  const number = await agents.requireVoiceNumber(ctx, input.voiceNumberId);
  const provider = telephonyProvider(number.provider);
  const { telephony } = provider;
  if (!telephony.placeAtOnce || !telephony.advance) {
    throw appError('NOT_A_SIMULATOR_NUMBER', { phoneNumber: number.phoneNumber, provider: number.provider });
  }
  // With no agent nobody would answer: a silent call would still be billed and reported as completed.
  if (!number.inboundAgentId) throw appError('NO_INBOUND_AGENT', { phoneNumber: number.phoneNumber, id: number.id });
  const fromNumber = normalizePhoneNumber(input.fromNumber);
  if (!fromNumber) throw appError('VALIDATION_FAILED.fromNumber', {}, [{ path: '/fromNumber', message: 'Invalid phone number' }]);
  const now = ctx.clock.now();
  const call = incomingCall(number, fromNumber, await contacts.findContactByPhone(ctx, fromNumber), now, {
    status: 'QUEUED',
    provider: provider.name,
    provider_call_id: null,
    dial_timeout: 30,
    deadline_at: now,
  });
  const placed = telephony.placeAtOnce(dialRequestOf(ctx, provider, call), now, ctx.config.providerSettings);
  await repo.insertCalls(ctx.db, ctx.tenantId, [
    { ...call, status: placed.status, provider_call_id: placed.providerCallId, deadline_at: placed.deadlineAt },
  ]);
  return getCall(ctx, call.id);
}

/**
 * A call coming in to `number` from `fromNumber`, simulated or on a provider's line, answered by
 * the number's inbound agent and linked to the caller's contact, whose name and metadata fill the
 * call's follow-up messages.
 */
function incomingCall(
  number: VoiceNumber,
  fromNumber: string,
  contact: contacts.ListedContact | undefined,
  now: Date,
  line: Pick<repo.NewCall, 'status' | 'provider' | 'provider_call_id' | 'dial_timeout' | 'deadline_at'>,
): repo.NewCall {
  return {
    id: newId(),
    agent_id: number.inboundAgentId,
    campaign_id: null,
    contact_id: contact?.id ?? null,
    contact_name: contact?.name ?? null,
    contact_metadata: contact?.metadata ?? null,
    voice_number_id: number.id,
    direction: 'INCOMING',
    from_number: fromNumber,
    to_number: number.phoneNumber,
    attempt: 1,
    machine_detection: false,
    started_at: now,
    ...line,
  };
}

// ---------------------------------------------------------------------------------------------
// Incoming calls on a provider's line

/** What a caller hears when no agent can take the call. */
const NO_ONE_TO_ANSWER = 'Sorry, no one can take your call right now. Please try again later. Goodbye.';

/**
 * A provider's incoming-call webhook (`POST /telephony/{provider}/incoming`). The dialled number
 * says which tenant answers; the webhook must be signed with that tenant's credentials and come
 * from its account (an unknown number and a bad signature get the same 403). The call is recorded
 * once per provider call id, so a retried webhook gets the same answer and no second call. When the
 * number's agent can take it, the call is answered and its audio streamed to the media path (which
 * ends it when the stream ends); otherwise it is ended at once, not answered, saying why, and the
 * caller is told so.
 */
export async function answerIncomingCall(
  deps: Omit<TenantCtx, 'tenantId'>,
  providerSlug: string,
  webhook: ProviderWebhook,
): Promise<CallInstructions> {
  const provider = telephonyProvider(providerSlug.toUpperCase());
  const incoming = provider.telephony.callbacks!.incoming!;
  if (incoming.isStatusEvent?.(webhook)) {
    await receiveStatusCallback(deps, providerSlug, webhook);
    return { contentType: 'text/plain; charset=utf-8', body: '' };
  }
  const request = incoming.read(webhook);
  const { ctx, number, connection } = await verifiedIncomingCall(deps, provider, webhook, request);
  const fromNumber = request.from && normalizePhoneNumber(request.from);
  if (!request.providerCallId || !fromNumber) {
    throw appError('VALIDATION_FAILED.incomingCall', {
      reason: !request.providerCallId ? 'The call has no call id.' : 'The caller has no phone number.',
    });
  }
  const providerCallId = request.providerCallId;
  const answer = async (call: repo.CallRow) => {
    const ringing: RingingCall = { providerCallId, callId: call.id, connection, statusCallbackUrl: statusCallbackUrl(ctx, provider.name) };
    const agent = call.agent_id ? await agents.requireAgent(ctx, call.agent_id).catch(() => undefined) : undefined;
    if (call.status !== 'ENDED') {
      const token = mediaStreamToken(ctx.serverKeys, ctx.tenantId, call.id);
      const relay = relaySpeechOn(provider, agent);
      const answer =
        relay && incoming.conversationRelay
          ? incoming.conversationRelay({ url: conversationRelayUrl(ctx, provider.name), ...relay }, call.id, token)
          : incoming.stream(mediaStreamUrl(ctx, provider.name), call.id, token, ringing);
      return answered(ctx, provider.name, call.id, answer);
    }
    return answered(ctx, provider.name, call.id, incoming.turnAway(NO_ONE_TO_ANSWER, agent?.language ?? 'en-US', ringing));
  };
  const recorded = await repo.findCallByProviderId(ctx.db, provider.name, providerCallId);
  if (recorded) return answer(await sameTenant(ctx, recorded, provider));

  const now = ctx.clock.now();
  const [refusal, contact] = await Promise.all([
    refusalOf(ctx, provider, number.inboundAgentId),
    contacts.findContactByPhone(ctx, fromNumber),
  ]);
  const call = incomingCall(number, fromNumber, contact, now, {
    status: 'IN_PROGRESS',
    provider: provider.name,
    provider_call_id: providerCallId,
    dial_timeout: 0,
    // Given up (as calls whose provider falls silent are) only if neither its stream nor its provider ever ends it.
    deadline_at: addSeconds(now, ctx.config.dialer.maxCallSeconds + ctx.config.dialer.confirmTimeoutSeconds),
  });
  await withTransaction(ctx, async (txCtx) => {
    const [inserted] = await repo.insertCalls(txCtx.db, ctx.tenantId, [call], { skipRecorded: true });
    if (!inserted) return;
    // Refused: ended at once, no one answered it (what the provider charges for the sentence is not known here).
    if (refusal) await finishCall(txCtx, call.id, { outcome: 'UNANSWERED', endedAt: now, failureReason: refusal });
    // Answered now: the provider picks up as it runs the answer.
    else
      await repo.updateLiveCall(txCtx.db, ctx.tenantId, call.id, { status: 'IN_PROGRESS', answeredAt: now, deadlineAt: call.deadline_at });
  });
  // The call recorded by this request, or by a retry of it that got there first.
  return answer(await sameTenant(ctx, (await repo.findCallByProviderId(ctx.db, provider.name, providerCallId))!, provider));
}

/**
 * The provider's answer to a ringing call. One it refused (a provider that answers by request, as
 * Telnyx does) fails the call, so it is not left live; the provider's retry of the webhook then
 * turns the caller away.
 */
async function answered(
  ctx: TenantCtx,
  providerName: string,
  callId: string,
  answer: CallInstructions | Promise<CallInstructions>,
): Promise<CallInstructions> {
  try {
    return await answer;
  } catch (error) {
    const reason = (error as Error).message;
    await withTransaction(ctx, (txCtx) =>
      finishCall(txCtx, callId, { outcome: 'FAILED', endedAt: ctx.clock.now(), failureReason: reason }),
    );
    throw appError('PROVIDER_ERROR.answerCall', { provider: providerName, reason });
  }
}

/**
 * The tenant whose number was dialled, once the webhook is signed with its credentials and names
 * its provider account; one 403 for every failure, so a stranger learns nothing about our numbers.
 */
async function verifiedIncomingCall(
  deps: Omit<TenantCtx, 'tenantId'>,
  provider: ProviderWith<'telephony'>,
  webhook: ProviderWebhook,
  request: IncomingCallRequest,
): Promise<{ ctx: TenantCtx; number: VoiceNumber; connection: Connection }> {
  const callbacks = provider.telephony.callbacks!;
  const refused = () => appError('INVALID_SIGNATURE', { header: callbacks.signatureHeader });
  const number = request.to ? await agents.findVoiceNumberByPhone(deps.db, request.to) : undefined;
  if (!number || number.provider !== provider.name) throw refused();
  const ctx: TenantCtx = { ...deps, tenantId: number.tenantId };
  const connection = await integrations.connectionTo(ctx, provider);
  if (!connection || !callbacks.verify(webhook, connection.credentials)) throw refused();
  if (request.accountId !== callbacks.incoming!.accountIdOf(connection.credentials)) throw refused();
  return { ctx, number, connection };
}

/** A provider call id is one call: a recorded call of another tenant cannot be this tenant's. */
async function sameTenant(ctx: TenantCtx, call: repo.CallRow, provider: ProviderWith<'telephony'>): Promise<repo.CallRow> {
  if (call.tenant_id !== ctx.tenantId) throw appError('INVALID_SIGNATURE', { header: provider.telephony.callbacks!.signatureHeader });
  return call;
}

/**
 * Why the number's agent cannot take a call now, or null when it can: it exists, can listen and
 * speak (or the provider's conversation relay does both for it), and the wallet has credit.
 */
async function refusalOf(ctx: TenantCtx, provider: ProviderWith<'telephony'>, agentId: string | null): Promise<string | null> {
  const agent = agentId ? await agents.requireAgent(ctx, agentId).catch(() => undefined) : undefined;
  if (!agent) return 'The number has no inbound agent to answer it.';
  const balance = await identity.walletBalance(ctx);
  if (!balance.amount.greaterThan(0))
    return `The wallet is empty (${balance.amount.toFixed(4)} ${balance.currency}); credit it to answer calls.`;
  if (relaySpeechOn(provider, agent)) return null;
  try {
    const speech = await agents.speechOf(ctx, ctx, agent);
    if (!speech.stt) return 'The agent has no speech-to-text to listen with.';
  } catch (error) {
    return `The agent cannot speak: ${(error as Error).message}`;
  }
  return null;
}

/**
 * A call's media stream ended (the caller or the agent hung up). An incoming call ends now, talked
 * from its answer until now: its provider reports its end only when the number was set up to (a
 * number's status callback is optional), and that report, when it comes, finds it ended. An
 * outgoing call waits for the status callback it was placed with, which bills the talk time.
 */
export async function streamEnded(ctx: TenantCtx, callId: string): Promise<void> {
  await withTransaction(ctx, async (txCtx) => {
    const call = await repo.lockCall(txCtx.db, ctx.tenantId, callId);
    if (call?.direction !== 'INCOMING' || call.status !== 'IN_PROGRESS') return;
    // No reason noted: the agent did not end it, so the caller hung up.
    await finishCall(txCtx, callId, answeredUntil(call, ctx.clock.now(), call.end_reason ? {} : { endReason: 'contact_hung_up' }));
  });
}

// ---------------------------------------------------------------------------------------------
// What a conversation does with its call

/** The conversation takes an answered call, once; undefined when the call is not live or is taken. */
export const claimConversation = (ctx: TenantCtx, callId: string) => repo.claimConversation(ctx.db, ctx.tenantId, callId, ctx.clock.now());

/** The turns as they happen, with the conversation's usage so far; false once the call has ended (stop talking). */
export const appendTurns = (ctx: TenantCtx, callId: string, turns: TranscriptTurn[], usage: CallUsage): Promise<boolean> =>
  repo.appendTurns(ctx.db, ctx.tenantId, callId, turns, usage);

/**
 * The conversation is over (the agent ended it, transferred the caller, or the model failed): a call
 * its provider drives itself ends now, billed for what ran; a provider's call is hung up (or, for a
 * transfer, bridged to `transferTo`) at the provider, whose final status ends it. A call already
 * over is left alone.
 */
export async function endConversation(ctx: TenantCtx, callId: string, endReason: EndReason, transferTo?: string): Promise<void> {
  const atProvider = await withTransaction(ctx, async (txCtx) => {
    const call = await repo.lockCall(txCtx.db, ctx.tenantId, callId);
    if (call?.status !== 'IN_PROGRESS') return undefined;
    if (telephonyProvider(call.provider).telephony.advance || !call.provider_call_id) {
      await finishCall(txCtx, callId, answeredUntil(call, ctx.clock.now(), { endReason }));
      return undefined;
    }
    // The provider's final status callback ends the call, billed for its talk time; the reason stays.
    await repo.noteEndReason(txCtx.db, ctx.tenantId, callId, endReason);
    return call;
  });
  if (!atProvider) return;
  const line = await connect(ctx, atProvider.provider);
  // A transfer bridges the caller to the target where the provider can; elsewhere the call ends.
  if (transferTo && line.transfer) await line.transfer(atProvider.provider_call_id!, transferTo, transferWhisperUrl(ctx, atProvider));
  else await line.hangup(atProvider.provider_call_id!);
}

/** The summary the agent gave for the person it transfers the call to, if it gave one. */
function transferSummaryOf(call: Pick<repo.CallRow, 'outcomes'>): string | undefined {
  const transfer = (call.outcomes as CallOutcomeRecord[]).filter((outcome) => outcome.type === 'transfer').at(-1);
  const summary = transfer?.data.summary;
  return typeof summary === 'string' && summary.trim() !== '' ? summary : undefined;
}

/**
 * Where the provider fetches what the person taking a transferred call hears first (a warm
 * transfer): only when the agent gave a summary and the provider can say it; else the transfer is cold.
 */
function transferWhisperUrl(ctx: Pick<TenantCtx, 'config'>, call: repo.CallRow): string | undefined {
  if (!telephonyProvider(call.provider).telephony.callbacks?.whisper || !transferSummaryOf(call)) return undefined;
  const query = new URLSearchParams({ call: call.provider_call_id! });
  return `${ctx.config.publicUrl}/api/v1/telephony/${call.provider.toLowerCase()}/transfer-whisper?${query}`;
}

/**
 * The provider fetches a warm transfer's whisper (`POST /telephony/{provider}/transfer-whisper?call=`,
 * naming the transferred call by its own id), verified as its callbacks are: the agent's summary,
 * said in the agent's language to the person about to take the call. A call with no summary gets
 * nothing to say, and the two are connected at once.
 */
export async function transferWhisper(
  deps: Omit<TenantCtx, 'tenantId'>,
  providerSlug: string,
  webhook: ProviderWebhook,
  providerCallId: string,
): Promise<CallInstructions> {
  const provider = telephonyProvider(providerSlug.toUpperCase());
  const { call, callCtx } = await verifiedProviderCall(deps, provider, webhook, providerCallId, { lock: false });
  const agent = call.agent_id ? await agents.requireAgent(callCtx, call.agent_id).catch(() => undefined) : undefined;
  return provider.telephony.callbacks!.whisper!(transferSummaryOf(call) ?? '', agent?.language ?? 'en-US');
}

export const claimStreamedConversation = (ctx: TenantCtx, callId: string) =>
  repo.claimStreamedConversation(ctx.db, ctx.tenantId, callId, ctx.clock.now());

/** Where a provider posts a call's status changes. */
const statusCallbackUrl = (ctx: Pick<TenantCtx, 'config'>, providerName: string) =>
  `${ctx.config.publicUrl}/api/v1/telephony/${providerName.toLowerCase()}/status`;

/** Where a provider streams a call's audio (`wss://`), as we tell it and as it signs the stream's upgrade. */
export const mediaStreamUrl = (ctx: Pick<TenantCtx, 'config'>, providerName: string) =>
  `${ctx.config.publicUrl.replace(/^http/, 'ws')}/api/v1/telephony/${providerName.toLowerCase()}/media`;

/** Where a provider's conversation relay sends a call's text (`wss://`), as we tell it and as it signs the relay's upgrade. */
export const conversationRelayUrl = (ctx: Pick<TenantCtx, 'config'>, providerName: string) =>
  `${ctx.config.publicUrl.replace(/^http/, 'ws')}/api/v1/telephony/${providerName.toLowerCase()}/relay`;

/** A live call of any tenant by its provider's id: the media stream names only that, before it is verified. */
export const findCallByProviderId = (ctx: Omit<TenantCtx, 'tenantId'>, providerName: string, providerCallId: string) =>
  repo.findCallByProviderId(ctx.db, providerName, providerCallId);

/**
 * A structured outcome a tool produced (an appointment, a payment promise), stored on the call once
 * per tool call and announced by webhook in the same transaction. False when it was already stored.
 */
export async function recordOutcome(
  ctx: TenantCtx,
  call: Pick<repo.CallRow, 'id' | 'agent_id' | 'campaign_id' | 'contact_id'>,
  record: CallOutcomeRecord,
  event?: events.EventType,
): Promise<boolean> {
  return withTransaction(ctx, async (txCtx) => {
    if (!(await repo.addOutcome(txCtx.db, ctx.tenantId, call.id, record))) return false;
    if (event) {
      const data = { callId: call.id, agentId: call.agent_id, campaignId: call.campaign_id, contactId: call.contact_id, ...record.data };
      await events.emitEvent(txCtx, event, data, call.agent_id);
    }
    return true;
  });
}

/** Onboarding's "has tested a call", as an SQL condition on the tenant `$1`. */
export const hasFinishedCallCondition = repo.tenantHasEndedCall;

// Analytics reads call usage here: the calls table is this module's alone.
export type { CallTrendRow, CallUsageRow } from './repo.ts';
export const usageByAgent = (ctx: Pick<TenantCtx, 'db' | 'tenantId'>, range: { from: Date; to: Date; agentId?: string }) =>
  repo.usageByAgent(ctx.db, ctx.tenantId, range);
export const callTrend = (
  ctx: Pick<TenantCtx, 'db' | 'tenantId'>,
  range: { from: Date; to: Date; agentId?: string },
  interval: 'day' | 'hour',
  timezone: string,
) => repo.callTrend(ctx.db, ctx.tenantId, range, interval, timezone);

/**
 * Holds `phoneNumbers` for this transaction's claim: call before reading `placedCalls`, so two
 * campaigns dialling the same person at once count each other's calls (its caps, one call at a time).
 */
export const lockCalledNumbers = (ctx: Pick<TenantCtx, 'db' | 'tenantId'>, phoneNumbers: string[]) =>
  repo.lockCalledNumbers(ctx.db, ctx.tenantId, phoneNumbers);

/**
 * The calls placed (or being placed) to these numbers since `since`, across the tenant's campaigns:
 * when each started (the frequency caps count these), and the numbers with a call not yet ended.
 */
export async function placedCalls(
  ctx: Pick<TenantCtx, 'db' | 'tenantId'>,
  phoneNumbers: string[],
  since: Date,
): Promise<{ times: Map<string, Date[]>; onCall: Set<string> }> {
  const times = new Map<string, Date[]>();
  const onCall = new Set<string>();
  for (const row of await repo.placedCallsSince(ctx.db, ctx.tenantId, phoneNumbers, since)) {
    const list = times.get(row.to_number) ?? [];
    list.push(row.started_at);
    times.set(row.to_number, list);
    if (row.live) onCall.add(row.to_number);
  }
  return { times, onCall };
}

/** A campaign's calls per caller ID (placed, answered), for its pool's answer rates. */
export const callsPerNumber = (ctx: Pick<TenantCtx, 'db' | 'tenantId'>, campaignId: string) =>
  repo.callsPerNumber(ctx.db, ctx.tenantId, campaignId);
