import type { TenantCtx } from '../../platform/context.ts';
import { smsProvider, whatsappProvider } from '../../providers/registry.ts';
import type { SmsConnection } from '../../providers/types.ts';
import * as integrations from '../integrations/service.ts';

type ProviderCtx = Pick<TenantCtx, 'db' | 'tenantId' | 'serverKeys' | 'config'>;

/** A channel that cannot send for this tenant until something is connected; not worth retrying. */
export class NotConnectedError extends Error {}

export const whatsappNotConnected = () =>
  new NotConnectedError(
    'WhatsApp is not connected; connect it with PUT /api/v1/integrations/whatsapp (businessAccountId, accessToken, appSecret, phoneNumberId) from the dashboard.',
  );

/** The tenant's WhatsApp connection and account, or undefined when WhatsApp is not connected. */
export async function whatsappOf(ctx: ProviderCtx) {
  const connection = await integrations.connectionTo(ctx, whatsappProvider);
  if (!connection) return undefined;
  return {
    client: whatsappProvider.whatsapp.connect(connection),
    businessAccountId: connection.credentials.businessAccountId!,
    defaultPhoneNumberId: connection.credentials.phoneNumberId!,
  };
}

/** The tenant's connection to the SMS provider named on a campaign or message. */
export async function smsConnectionOf(ctx: ProviderCtx, providerName: string): Promise<SmsConnection> {
  const provider = smsProvider(providerName);
  const connection = await integrations.connectionTo(ctx, provider);
  if (!connection) {
    throw new NotConnectedError(
      `${provider.name} is not connected; connect it with PUT /api/v1/integrations/${provider.integration?.kind} from the dashboard.`,
    );
  }
  return provider.sms.connect(connection);
}

/** Where a provider reports an SMS's delivery: our ids ride in the URL, which the provider's signature covers. */
export const smsStatusCallbackUrl = (ctx: Pick<TenantCtx, 'config' | 'tenantId'>, providerName: string, messageId: string) =>
  `${ctx.config.publicUrl}/api/v1/messages/${providerName.toLowerCase()}-status?tenant=${ctx.tenantId}&message=${messageId}`;
