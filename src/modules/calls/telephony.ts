import type { TenantCtx } from '../../platform/context.ts';
import { PermanentDialError, type TelephonyProvider } from '../../providers/telephony/types.ts';

/** The telephony provider that places a tenant's calls on numbers of `provider`. */
export async function telephonyFor(_ctx: TenantCtx, provider: string): Promise<TelephonyProvider> {
  throw new PermanentDialError(`${provider} is not connected for this tenant; connect it under /integrations, or use a SIMULATOR number.`);
}

export function statusCallbackUrl(ctx: TenantCtx, provider: string): string {
  return `${ctx.config.publicUrl}/api/v1/telephony/${provider.toLowerCase()}/status`;
}
