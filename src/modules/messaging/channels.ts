import { randomUUID } from 'node:crypto';
import type { TenantCtx } from '../../platform/context.ts';
import { createMsg91Sms } from '../../providers/sms/msg91.ts';
import { createTwilioSms } from '../../providers/sms/twilio.ts';
import type { SmsProvider } from '../../providers/sms/types.ts';
import { createWhatsAppCloud } from '../../providers/whatsapp/cloud-api.ts';
import * as integrations from '../integrations/service.ts';
import type { IntegrationKind } from '../integrations/schemas.ts';
import type { SmsProviderName } from './schemas.ts';

type ProviderCtx = Pick<TenantCtx, 'db' | 'tenantId' | 'serverKeys' | 'config'>;

/** A channel that cannot send for this tenant until something is connected; not worth retrying. */
export class NotConnectedError extends Error {}

export const whatsappNotConnected = () =>
  new NotConnectedError(
    'WhatsApp is not connected; connect it with PUT /api/v1/integrations/whatsapp (businessAccountId, accessToken, appSecret, phoneNumberId) from the dashboard.',
  );

/** The tenant's WhatsApp Cloud API client and account, or undefined when WhatsApp is not connected. */
export async function whatsappOf(ctx: ProviderCtx) {
  const credentials = await integrations.credentialsOf(ctx, 'whatsapp');
  if (!credentials) return undefined;
  const { whatsappApiUrl, whatsappApiVersion, providerTimeoutMs } = ctx.config.messaging;
  return {
    client: createWhatsAppCloud({
      accessToken: credentials.accessToken!,
      baseUrl: whatsappApiUrl,
      apiVersion: whatsappApiVersion,
      timeoutMs: providerTimeoutMs,
    }),
    businessAccountId: credentials.businessAccountId!,
    defaultPhoneNumberId: credentials.phoneNumberId!,
  };
}

/** The integration each SMS provider sends with (the simulator needs none). */
const SMS_INTEGRATION: Record<SmsProviderName, IntegrationKind | undefined> = { TWILIO: 'twilio', MSG91: 'msg91', SIMULATOR: undefined };

/** The simulator accepts every message at once. */
const simulatedSms: SmsProvider = {
  async send() {
    return { providerMessageId: `sim-sms-${randomUUID()}`, status: 'accepted' };
  },
};

export async function smsProviderOf(ctx: ProviderCtx, provider: SmsProviderName): Promise<SmsProvider> {
  const kind = SMS_INTEGRATION[provider];
  if (!kind) return simulatedSms;
  const credentials = await integrations.credentialsOf(ctx, kind);
  if (!credentials)
    throw new NotConnectedError(`${provider} is not connected; connect it with PUT /api/v1/integrations/${kind} from the dashboard.`);
  const timeoutMs = ctx.config.messaging.providerTimeoutMs;
  if (provider === 'TWILIO')
    return createTwilioSms({
      accountSid: credentials.accountSid!,
      authToken: credentials.authToken!,
      baseUrl: ctx.config.twilioApiUrl,
      timeoutMs,
    });
  return createMsg91Sms({ authKey: credentials.authKey!, baseUrl: ctx.config.messaging.msg91ApiUrl, timeoutMs });
}
