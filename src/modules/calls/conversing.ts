/**
 * What a conversation does with its call: takes it, records its turns and the outcomes its tools
 * produce, and ends it (hung up, or transferred with a whisper for the person taking it).
 */
import { withTransaction, type TenantCtx } from '../../platform/context.ts';
import { telephonyProvider } from '../../providers/registry.ts';
import type { CallInstructions, ProviderWebhook } from '../../providers/types.ts';
import * as agents from '../agents/service.ts';
import * as events from '../events/service.ts';
import type { CallUsage } from './rate-card.ts';
import * as repo from './repo.ts';
import type { CallOutcomeRecord, EndReason, TranscriptTurn } from './schemas.ts';
import { connect, verifiedProviderCall } from './provider-line.ts';
import { answeredUntil, finishCall } from './ending.ts';

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

/** Lines of this process that press keys as tones in their own audio, by call id (media/ registers them). */
const tonePressers = new Map<string, (digits: string) => void>();

/**
 * Lets a live call's line press keys as tones in its audio, for a provider that cannot press them
 * while the call's media stream runs (Twilio); returns how to take it back when the line closes.
 */
export function pressKeysWith(callId: string, press: (digits: string) => void): () => void {
  tonePressers.set(callId, press);
  return () => {
    if (tonePressers.get(callId) === press) tonePressers.delete(callId);
  };
}

/**
 * Presses keys on a live call (a phone menu the agent navigates): through its provider where it
 * can (Telnyx), else as tones on the call's line in this process (Twilio's media stream); false
 * when neither can (a simulated call, another process's line) or the call is over.
 */
export async function pressKeys(ctx: TenantCtx, callId: string, digits: string): Promise<boolean> {
  const call = await repo.findCall(ctx.db, ctx.tenantId, callId);
  if (call?.status !== 'IN_PROGRESS' || !call.provider_call_id) return false;
  const line = await connect(ctx, call.provider);
  if (line.sendDigits) {
    await line.sendDigits(call.provider_call_id, digits);
    return true;
  }
  const press = tonePressers.get(callId);
  press?.(digits);
  return press !== undefined;
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
  const agent = await agents.agentOfCall(callCtx, call);
  return provider.telephony.callbacks!.whisper!(transferSummaryOf(call) ?? '', agent?.language ?? 'en-US');
}

export const claimStreamedConversation = (ctx: TenantCtx, callId: string) =>
  repo.claimStreamedConversation(ctx.db, ctx.tenantId, callId, ctx.clock.now());

/**
 * A structured outcome a tool produced (an appointment, a payment promise), stored on the call once
 * per tool call and announced by webhook in the same transaction. False when it was already stored.
 */
export async function recordOutcome(
  ctx: TenantCtx,
  call: Pick<repo.CallRow, 'id' | 'agent_id' | 'agent_version' | 'campaign_id' | 'contact_id'>,
  record: CallOutcomeRecord,
  event?: events.EventType,
): Promise<boolean> {
  return withTransaction(ctx, async (txCtx) => {
    if (!(await repo.addOutcome(txCtx.db, ctx.tenantId, call.id, record))) return false;
    if (event) {
      const data = {
        callId: call.id,
        agentId: call.agent_id,
        agentVersion: call.agent_version ?? null,
        campaignId: call.campaign_id,
        contactId: call.contact_id,
        ...record.data,
      };
      await events.emitEvent(txCtx, event, data, call.agent_id);
    }
    return true;
  });
}
