/**
 * Starting and placing attempts: the dialer's calls are recorded in its transaction, then dialled
 * at their providers once it committed.
 */
import { addSeconds } from '../../platform/clock.ts';
import { withTransaction, type TenantCtx } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { ProviderError } from '../../providers/errors.ts';
import { telephonyProvider } from '../../providers/registry.ts';
import type { DialRequest, TelephonyConnection } from '../../providers/types.ts';
import * as agents from '../agents/service.ts';
import * as compliance from '../compliance/service.ts';
import type { Agent } from '../agents/schemas.ts';
import * as integrations from '../integrations/service.ts';
import * as repo from './repo.ts';
import { connect, dialRequestOf, relaySpeechOn } from './provider-line.ts';
import { finishCall } from './ending.ts';

/** One call the dialer decided to make. */
export interface NewAttempt {
  agentId: string;
  /** The agent's version the contact is called with; null: the agent as it is. */
  agentVersion: number | null;
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
  // The agent as each call runs it (a version's config, or the agent's own), read once per version.
  const agentKey = (attempt: NewAttempt) => `${attempt.agentId}:${attempt.agentVersion}`;
  const agentsByKey = new Map<string, Agent | undefined>();
  for (const attempt of attempts)
    if (!agentsByKey.has(agentKey(attempt)))
      agentsByKey.set(agentKey(attempt), await agents.agentOfCall(ctx, { agent_id: attempt.agentId, agent_version: attempt.agentVersion }));
  const rows = attempts.map((attempt): repo.NewCall => {
    const provider = telephonyProvider(attempt.voiceNumber.provider);
    const call: repo.NewCall = {
      id: newId(),
      agent_id: attempt.agentId,
      agent_version: attempt.agentVersion,
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
    const request = dialRequestOf(ctx, provider, call, relaySpeechOn(provider, agentsByKey.get(agentKey(attempt))));
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
