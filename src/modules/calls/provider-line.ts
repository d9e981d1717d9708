/**
 * A call's line to its telephony provider: where the provider posts and streams (and the token a
 * stream presents), what a dial asks of it, the tenant's connection to it, and the check that a
 * provider's request about a call is signed with that call's tenant's credentials.
 */
import { createHmac } from 'node:crypto';
import type { TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import type { ServerKeys } from '../../platform/secrets.ts';
import { telephonyProvider, type ProviderWith } from '../../providers/registry.ts';
import type { ConversationRelaySpeech, DialRequest, ProviderWebhook, TelephonyConnection } from '../../providers/types.ts';
import * as agents from '../agents/service.ts';
import type { Agent } from '../agents/schemas.ts';
import * as integrations from '../integrations/service.ts';
import * as repo from './repo.ts';

/**
 * The token a call's media stream must present (in its custom parameters): our signature over the
 * tenant and the call, so a stream can bind only to the call it was placed for.
 */
export const mediaStreamToken = (keys: Pick<ServerKeys, 'mediaStreamKey'>, tenantId: string, callId: string): string =>
  createHmac('sha256', keys.mediaStreamKey).update(`${tenantId}.${callId}`).digest('base64url');

type RelaySpeech = Omit<ConversationRelaySpeech, 'url'>;

/** How the provider's conversation relay voices the agent's calls, where it has one; null when they stream to us. */
export const relaySpeechOn = (provider: ProviderWith<'telephony'>, agent: Agent | undefined): RelaySpeech | null =>
  provider.telephony.conversationRelay && agent ? agents.relaySpeechOf(agent) : null;

export function dialRequestOf(
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

/** The tenant's line to a telephony provider; throws when the provider is not connected. */
export async function connect(ctx: TenantCtx, providerName: string): Promise<TelephonyConnection> {
  const provider = telephonyProvider(providerName);
  const connection = await integrations.connectionTo(ctx, provider);
  if (!connection) throw new Error(`${provider.name} is not connected for this tenant; connect it under /api/v1/integrations.`);
  return provider.telephony.connect(connection);
}

/**
 * The call a provider's request is about (locked for an update when asked), once the provider's
 * signature checked out with that tenant's credentials. One answer for an unknown call and a bad
 * signature: a caller learns nothing about our calls.
 */
export async function verifiedProviderCall(
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
export const lockVerifiedCall = (txCtx: Omit<TenantCtx, 'tenantId'>, provider: ProviderWith<'telephony'>, webhook: ProviderWebhook) =>
  verifiedProviderCall(txCtx, provider, webhook, provider.telephony.callbacks!.callIdOf(webhook), { lock: true });

/** Where a provider posts a call's status changes. */
export const statusCallbackUrl = (ctx: Pick<TenantCtx, 'config'>, providerName: string) =>
  `${ctx.config.publicUrl}/api/v1/telephony/${providerName.toLowerCase()}/status`;

/** Where a provider streams a call's audio (`wss://`), as we tell it and as it signs the stream's upgrade. */
export const mediaStreamUrl = (ctx: Pick<TenantCtx, 'config'>, providerName: string) =>
  `${ctx.config.publicUrl.replace(/^http/, 'ws')}/api/v1/telephony/${providerName.toLowerCase()}/media`;

/** Where a provider's conversation relay sends a call's text (`wss://`), as we tell it and as it signs the relay's upgrade. */
export const conversationRelayUrl = (ctx: Pick<TenantCtx, 'config'>, providerName: string) =>
  `${ctx.config.publicUrl.replace(/^http/, 'ws')}/api/v1/telephony/${providerName.toLowerCase()}/relay`;
