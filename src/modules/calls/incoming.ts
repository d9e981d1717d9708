/**
 * Incoming calls: simulated ones on the simulator's numbers, and a provider's incoming-call webhook,
 * answered by the number's inbound agent or turned away; a streamed incoming call ends when its
 * stream does.
 */
import { addSeconds } from '../../platform/clock.ts';
import { withTransaction, type TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { normalizePhoneNumber } from '../../platform/phone-numbers.ts';
import { storableValue } from '../../platform/input.ts';
import { telephonyProvider, type ProviderWith } from '../../providers/registry.ts';
import type { CallInstructions, Connection, IncomingCallRequest, ProviderWebhook, RingingCall } from '../../providers/types.ts';
import * as agents from '../agents/service.ts';
import type { VoiceNumber } from '../agents/schemas.ts';
import * as contacts from '../contacts/service.ts';
import * as identity from '../identity/service.ts';
import * as integrations from '../integrations/service.ts';
import * as repo from './repo.ts';
import type { Call } from './schemas.ts';
import {
  conversationRelayUrl,
  dialRequestOf,
  mediaStreamToken,
  mediaStreamUrl,
  relaySpeechOn,
  statusCallbackUrl,
} from './provider-line.ts';
import { getCall } from './queries.ts';
import { answeredUntil, finishCall } from './ending.ts';
import { receiveStatusCallback } from './status.ts';

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
    agent_version: null,
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
  const request = storableValue(incoming.read(webhook));
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
    const agent = await agents.agentOfCall(ctx, call);
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
