import type { TenantCtx } from '../../platform/context.ts';
import { createTwilioTelephony } from '../../providers/telephony/twilio.ts';
import type { TelephonyProvider } from '../../providers/telephony/types.ts';
import * as integrations from '../integrations/service.ts';

export const TWILIO = 'TWILIO';

/** Why calls on numbers of `provider` cannot be placed for this tenant now, or null. */
export async function providerProblem(ctx: TenantCtx, provider: string): Promise<string | null> {
  if (provider !== TWILIO) return null;
  return (await integrations.credentialsOf(ctx, 'twilio'))
    ? null
    : 'Twilio is not connected; connect it with PUT /api/v1/integrations/twilio, then resume the campaign.';
}

/** The telephony provider that places a tenant's calls on numbers of `provider`. */
export async function telephonyFor(ctx: TenantCtx, provider: string): Promise<TelephonyProvider> {
  const credentials = provider === TWILIO ? await integrations.credentialsOf(ctx, 'twilio') : undefined;
  if (!credentials) throw new Error(`${provider} is not connected for this tenant; connect it under /api/v1/integrations.`);
  return createTwilioTelephony({
    accountSid: credentials.accountSid!,
    authToken: credentials.authToken!,
    baseUrl: ctx.config.twilioApiUrl,
    mediaStreamUrl: `${ctx.config.publicUrl.replace(/^http/, 'ws')}/api/v1/telephony/twilio/media`,
  });
}

export function statusCallbackUrl(ctx: Pick<TenantCtx, 'config'>, provider: string): string {
  return `${ctx.config.publicUrl}/api/v1/telephony/${provider.toLowerCase()}/status`;
}
