import { randomBytes, randomUUID } from 'node:crypto';
import { withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import { onUniqueViolation } from '../../platform/db.ts';
import { appError, type AppError } from '../../platform/errors.ts';
import { isUuid, newId } from '../../platform/ids.ts';
import { storableValue } from '../../platform/input.ts';
import type { Page } from '../../platform/pagination.ts';
import { isoOrNull } from '../../platform/clock.ts';
import { ProviderError } from '../../providers/errors.ts';
import { smsProvider, whatsappProvider } from '../../providers/registry.ts';
import type { ProviderWebhook, WhatsAppIncomingMessage } from '../../providers/types.ts';
import * as agents from '../agents/service.ts';
import * as integrations from '../integrations/service.ts';
import { whatsappOf } from './channels.ts';
import { optOutByReply } from './opt-out-confirmations.ts';
import * as repo from './repo.ts';
import {
  DEFAULT_LANGUAGE_CODE,
  SMS_PROVIDERS,
  type Channel,
  type CreateSmsCampaignBody,
  type CreateWhatsAppCampaignBody,
  type Message,
  type MessageStatus,
  type MessageQuery,
  type MessagingSettings,
  type SmsCampaign,
  type SmsProviderName,
  type SmsTemplate,
  type SmsTemplateInput,
  type TemplateMapping,
  type TemplateMappingInput,
  type UpdateSmsCampaignBody,
  type UpdateWhatsAppCampaignBody,
  type WhatsAppCampaign,
} from './schemas.ts';
import { canonicalLanguageCode, duplicateMappings, duplicateSmsTemplates, placeholdersWithoutFallback } from './templates.ts';

/** What an agent sends during a call (its send_sms and send_whatsapp tools), once per tool call. */
export { sendDuringCall } from './dispatch.ts';
/** What would follow up a call, rendered and never sent (a campaign rehearsal). */
export { followUpsWouldSend } from './dispatch.ts';

// ---------------------------------------------------------------------------------------------
// WhatsApp campaigns (seed §4.1, contract §6).

const whatsappCampaignNotFound = () => appError('NOT_FOUND', { what: 'WhatsApp campaign' });

const toWhatsAppCampaign = (row: repo.WhatsAppCampaignRow): WhatsAppCampaign => ({
  id: row.id,
  tenantId: row.tenant_id,
  agentId: row.agent_id,
  name: row.name,
  phoneNumberId: row.phone_number_id,
  isActive: row.is_active,
  templates: row.templates,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

/** Service ids, `languageCode` defaulting to en_US (on create as on update), one mapping per key. */
function whatsappTemplates(input: TemplateMappingInput[]): TemplateMapping[] {
  const templates = input.map((template) => ({
    id: randomUUID(),
    templateName: template.templateName,
    languageCode: canonicalLanguageCode(template.languageCode ?? DEFAULT_LANGUAGE_CODE),
    process: template.process,
    callStatus: template.callStatus,
    bodyParameters: template.bodyParameters ?? [],
  }));
  const duplicates = duplicateMappings(templates);
  if (duplicates.length > 0) throw appError('VALIDATION_FAILED.duplicateMappings', {}, duplicates);
  refuseEmptyPlaceholders(
    templates.flatMap((template, index) =>
      template.bodyParameters.map((text, p) => ({ text, path: `/templates/${index}/bodyParameters/${p}` })),
    ),
  );
  return templates;
}

/** A text sent to a contact never says "Hi ,": a placeholder that may be empty needs its fallback. */
function refuseEmptyPlaceholders(texts: { text: string; path: string }[]) {
  const missing = placeholdersWithoutFallback(texts);
  if (missing.length === 0) return;
  const { path, variable } = missing[0]!;
  throw appError(
    'TEMPLATE_NEEDS_FALLBACK',
    { field: path.slice(1), variable, fallback: `{{${variable}|there}}` },
    missing.map((each) => ({ path: each.path, message: `{{${each.variable}}} may be empty: give it a fallback` })),
  );
}

async function agentAlreadyHas(ctx: TenantCtx, channel: 'WhatsApp' | 'SMS', agentId: string): Promise<AppError> {
  const table = channel === 'WhatsApp' ? 'whatsapp_campaigns' : 'sms_campaigns';
  const existing = await repo.campaignOfAgent(ctx.db, table, ctx.tenantId, agentId);
  const params = { agentId, existing: existing ? ` (${existing.id})` : '', campaignId: existing?.id ?? '{id}' };
  return appError(channel === 'WhatsApp' ? 'WHATSAPP_CAMPAIGN_EXISTS' : 'SMS_CAMPAIGN_EXISTS', params);
}

export async function createWhatsAppCampaign(ctx: TenantCtx, input: CreateWhatsAppCampaignBody): Promise<WhatsAppCampaign> {
  const agent = await agents.requireAgent(ctx, input.agentId);
  const templates = whatsappTemplates(input.templates);
  const row = await onUniqueViolation(
    repo.insertCampaign(ctx.db, 'whatsapp_campaigns', {
      tenant_id: ctx.tenantId,
      id: newId(),
      agent_id: agent.id,
      name: input.name ?? `${agent.name} WhatsApp follow-up`,
      phone_number_id: input.phoneNumberId ?? null,
      is_active: input.isActive ?? true,
      templates,
    }),
    () => agentAlreadyHas(ctx, 'WhatsApp', agent.id),
  );
  return toWhatsAppCampaign(row);
}

export async function updateWhatsAppCampaign(ctx: TenantCtx, id: string, input: UpdateWhatsAppCampaignBody): Promise<WhatsAppCampaign> {
  const row = await repo.updateCampaign(ctx.db, 'whatsapp_campaigns', ctx.tenantId, id, {
    name: input.name,
    phone_number_id: input.phoneNumberId,
    is_active: input.isActive,
    // Seed §4.1: present templates replace the whole set.
    templates: input.templates && whatsappTemplates(input.templates),
  });
  if (!row) throw whatsappCampaignNotFound();
  return toWhatsAppCampaign(row);
}

export async function getWhatsAppCampaign(ctx: TenantCtx, id: string): Promise<WhatsAppCampaign> {
  const row = await repo.findCampaign(ctx.db, 'whatsapp_campaigns', ctx.tenantId, id);
  if (!row) throw whatsappCampaignNotFound();
  return toWhatsAppCampaign(row);
}

export async function listWhatsAppCampaigns(ctx: TenantCtx, agentId: string | undefined, page: Page) {
  const { rows, total } = await repo.listCampaigns(ctx.db, 'whatsapp_campaigns', ctx.tenantId, agentId, page);
  return { data: rows.map(toWhatsAppCampaign), total };
}

export async function deleteWhatsAppCampaign(ctx: TenantCtx, id: string): Promise<void> {
  if (!(await repo.deleteCampaign(ctx.db, 'whatsapp_campaigns', ctx.tenantId, id))) throw whatsappCampaignNotFound();
}

// ---------------------------------------------------------------------------------------------
// SMS campaigns (seed §4.2, contract §6).

const smsCampaignNotFound = () => appError('NOT_FOUND', { what: 'SMS campaign' });

const toSmsCampaign = (row: repo.SmsCampaignRow): SmsCampaign => ({
  id: row.id,
  tenantId: row.tenant_id,
  agentId: row.agent_id,
  name: row.name,
  senderNumber: row.sender_number,
  senderProvider: row.sender_provider,
  isActive: row.is_active,
  templates: row.templates,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

function smsProviderName(value: string): SmsProviderName {
  const name = value.trim().toUpperCase();
  if (!(SMS_PROVIDERS as readonly string[]).includes(name)) {
    throw appError('VALIDATION_FAILED.senderProvider', { allowed: SMS_PROVIDERS.join(', '), given: JSON.stringify(value) }, [
      { path: '/senderProvider', message: `must be one of ${SMS_PROVIDERS.join(', ')}` },
    ]);
  }
  return name as SmsProviderName;
}

function smsTemplates(input: SmsTemplateInput[]): SmsTemplate[] {
  const duplicates = duplicateSmsTemplates(input);
  if (duplicates.length > 0) throw appError('VALIDATION_FAILED.duplicateSmsTemplates', {}, duplicates);
  return input.map((template) => ({
    id: randomUUID(),
    callStatus: template.callStatus,
    messageBody: template.messageBody,
    dltSenderId: template.dltSenderId ?? null,
    dltTemplateId: template.dltTemplateId ?? null,
  }));
}

export async function createSmsCampaign(ctx: TenantCtx, input: CreateSmsCampaignBody): Promise<SmsCampaign> {
  const agent = await agents.requireAgent(ctx, input.agentId);
  const provider = smsProviderName(input.senderProvider);
  const templates = smsTemplates(input.templates ?? []);
  const row = await onUniqueViolation(
    repo.insertCampaign(ctx.db, 'sms_campaigns', {
      tenant_id: ctx.tenantId,
      id: newId(),
      agent_id: agent.id,
      name: input.name ?? `${agent.name} SMS follow-up`,
      sender_number: input.senderNumber,
      sender_provider: provider,
      is_active: input.isActive ?? true,
      templates,
    }),
    () => agentAlreadyHas(ctx, 'SMS', agent.id),
  );
  return toSmsCampaign(row);
}

export async function updateSmsCampaign(ctx: TenantCtx, id: string, input: UpdateSmsCampaignBody): Promise<SmsCampaign> {
  const provider = input.senderProvider === undefined ? undefined : smsProviderName(input.senderProvider);
  const row = await repo.updateCampaign(ctx.db, 'sms_campaigns', ctx.tenantId, id, {
    name: input.name,
    sender_number: input.senderNumber,
    sender_provider: provider,
    is_active: input.isActive,
    // Seed §4.2: present templates replace the existing ones wholesale.
    templates: input.templates && smsTemplates(input.templates),
  });
  if (!row) throw smsCampaignNotFound();
  return toSmsCampaign(row);
}

export async function getSmsCampaign(ctx: TenantCtx, id: string): Promise<SmsCampaign> {
  const row = await repo.findCampaign(ctx.db, 'sms_campaigns', ctx.tenantId, id);
  if (!row) throw smsCampaignNotFound();
  return toSmsCampaign(row);
}

export async function listSmsCampaigns(ctx: TenantCtx, agentId: string | undefined, page: Page) {
  const { rows, total } = await repo.listCampaigns(ctx.db, 'sms_campaigns', ctx.tenantId, agentId, page);
  return { data: rows.map(toSmsCampaign), total };
}

export async function deleteSmsCampaign(ctx: TenantCtx, id: string): Promise<void> {
  if (!(await repo.deleteCampaign(ctx.db, 'sms_campaigns', ctx.tenantId, id))) throw smsCampaignNotFound();
}

// ---------------------------------------------------------------------------------------------
// The WhatsApp account: webhook token, sender numbers, webhook deliveries.

/** Seed §4.1: the tenant's verification token, created on the first call and the same ever after. */
export async function webhookToken(ctx: TenantCtx): Promise<{ token: string; created: boolean }> {
  return repo.webhookToken(ctx.db, ctx.tenantId, randomBytes(24).toString('base64url'));
}

/** Seed §4.1, §2.9: the connected account's sender numbers, live from the Graph API. */
export async function fetchNumbers(ctx: TenantCtx) {
  const whatsapp = await whatsappOf(ctx);
  if (!whatsapp) throw appError('WHATSAPP_NOT_CONNECTED');
  try {
    return await whatsapp.client.listPhoneNumbers(whatsapp.businessAccountId);
  } catch (error) {
    if (error instanceof ProviderError) throw appError('PROVIDER_ERROR.whatsappNumbers', { reason: error.message });
    throw error;
  }
}

/** The provider's subscription handshake: the challenge back when the token is a tenant's. */
export async function verifyWebhookSubscription(
  deps: Pick<Deps, 'db'>,
  query: { 'hub.mode'?: string; 'hub.verify_token'?: string; 'hub.challenge'?: string },
): Promise<string> {
  const { 'hub.mode': mode, 'hub.verify_token': token, 'hub.challenge': challenge } = query;
  const problem =
    mode !== 'subscribe'
      ? mode === undefined
        ? 'has no hub.mode'
        : `has hub.mode=${mode}`
      : !token
        ? 'has no hub.verify_token'
        : challenge === undefined
          ? 'has no hub.challenge'
          : undefined;
  if (problem) throw appError('WEBHOOK_VERIFICATION_FAILED.request', { problem });
  if (!(await repo.tokenExists(deps.db, token!))) throw appError('WEBHOOK_VERIFICATION_FAILED');
  return challenge!;
}

const badSignature = () => appError('INVALID_SIGNATURE.whatsapp');

/**
 * A webhook delivery from Meta: verified with the app secret of the tenant that connected the
 * business account it names, then each message status is recorded and each opt-out reply lists its
 * sender. Returns how many messages changed and people opted out.
 */
export async function receiveWhatsAppWebhook(
  deps: Pick<Deps, 'db' | 'serverKeys' | 'clock' | 'jobs'>,
  rawBody: Buffer,
  signature: string | undefined,
): Promise<number> {
  // What a person wrote cannot be refused: the few characters no column can store are replaced.
  const webhook = storableValue(whatsappProvider.whatsapp.read(rawBody, deps.clock.now()));
  if (webhook.kind === 'not-json') throw appError('INVALID_JSON.webhook');
  if (webhook.kind === 'not-a-notification') throw appError('INVALID_WEBHOOK');
  if (webhook.accountIds.length !== 1) throw badSignature();
  const tenants = await integrations.whatsappTenantsOfAccount(deps, webhook.accountIds[0]!);
  // Normally one tenant connected the account; should several have, each verified one records its own messages.
  const verified = tenants.filter(({ credentials }) => whatsappProvider.whatsapp.verify(rawBody, signature, credentials));
  if (verified.length === 0) throw badSignature();

  let changed = 0;
  for (const update of webhook.statuses) {
    const ourId = update.callbackData !== null && isUuid(update.callbackData) ? update.callbackData : null;
    for (const { tenantId } of verified) {
      const recorded = await repo.recordDeliveryStatus(
        deps.db,
        tenantId,
        whatsappProvider.name,
        { providerMessageId: update.providerMessageId, ourId },
        update.status,
        update.at,
        update.failureReason,
      );
      if (recorded) changed++;
    }
  }
  for (const message of webhook.messages) if (await optedOutBy(deps, message, verified)) changed++;
  return changed;
}

/**
 * A "STOP"-style reply on WhatsApp puts its sender on the do-not-call list of each tenant the
 * delivery verified for, with the message as evidence. Whether it added them anywhere.
 */
async function optedOutBy(
  deps: Pick<Deps, 'db' | 'clock' | 'jobs'>,
  message: WhatsAppIncomingMessage,
  tenants: { tenantId: string }[],
): Promise<boolean> {
  let added = false;
  for (const { tenantId } of tenants) {
    const reply = { from: message.from, text: message.text, messageId: message.providerMessageId, at: message.at };
    const reason = `Replied "${message.text.trim().slice(0, 40)}" on WhatsApp.`;
    const optOut = { ...reply, source: 'whatsapp' as const, reason, provider: whatsappProvider.name, to: null };
    if (await optOutByReply(deps, tenantId, optOut)) added = true;
  }
  return added;
}

/**
 * The tenant an SMS provider's callback names (`?tenant=`), once the provider's signature checked
 * out with that tenant's credentials over the exact URL; one refusal for every failure.
 */
async function verifiedSmsCallback(
  deps: Pick<Deps, 'db' | 'serverKeys' | 'config' | 'clock'>,
  provider: ReturnType<typeof smsProvider>,
  webhook: ProviderWebhook,
  query: URLSearchParams,
) {
  const callbacks = provider.sms.callbacks!;
  const refused = () => appError('INVALID_SIGNATURE.smsStatus', { header: callbacks.signatureHeader, signedWith: callbacks.signedWith });
  const tenantId = query.get('tenant') ?? '';
  if (!isUuid(tenantId)) throw refused();
  const connection = await integrations.connectionTo({ ...deps, tenantId }, provider);
  if (!connection || !callbacks.verify(webhook, connection.credentials)) throw refused();
  return { tenantId, credentials: connection.credentials, refused };
}

/**
 * An SMS provider's delivery status callback (`POST /messages/{provider}-status`), verified with the
 * tenant's credentials over the exact URL it requested, which names the tenant and our message;
 * sent, delivered, read and failed are recorded (statuses only move forward). A callback that does
 * not verify is refused like one for an unknown message.
 */
export async function receiveSmsStatus(
  deps: Pick<Deps, 'db' | 'serverKeys' | 'config' | 'clock'>,
  providerName: string,
  webhook: ProviderWebhook,
): Promise<void> {
  const provider = smsProvider(providerName);
  const query = new URL(webhook.url).searchParams;
  const { tenantId, refused } = await verifiedSmsCallback(deps, provider, webhook, query);
  const messageId = query.get('message') ?? '';
  if (!isUuid(messageId)) throw refused();
  const update = storableValue(provider.sms.callbacks!.read!(webhook));
  if (!update) return;
  await repo.recordDeliveryStatus(
    deps.db,
    tenantId,
    provider.name,
    { providerMessageId: update.providerMessageId, ourId: messageId },
    update.status,
    deps.clock.now(),
    update.failureReason,
  );
}

/**
 * An SMS a person sent to one of the tenant's numbers (`POST /messages/{provider}-incoming?tenant=`),
 * verified with the tenant's credentials over the exact URL and bound to its provider account. An
 * opt-out reply puts the sender on the tenant's do-not-call list with the message as evidence.
 * Returns what the provider expects back.
 */
export async function receiveIncomingSms(
  deps: Pick<Deps, 'db' | 'serverKeys' | 'config' | 'clock' | 'jobs'>,
  providerName: string,
  webhook: ProviderWebhook,
): Promise<{ contentType: string; body: string }> {
  const provider = smsProvider(providerName);
  const incoming = provider.sms.callbacks!.incoming!;
  const { tenantId, credentials, refused } = await verifiedSmsCallback(deps, provider, webhook, new URL(webhook.url).searchParams);
  // What a person wrote cannot be refused: the few characters no column can store are replaced.
  const message = storableValue(incoming.read(webhook));
  if (!message || (incoming.accountIdOf && message.accountId !== incoming.accountIdOf(credentials))) throw refused();
  const reply = { from: message.from, text: message.text, messageId: message.providerMessageId, at: deps.clock.now() };
  const reason = `Replied "${message.text.trim().slice(0, 40)}" by SMS to ${message.to}.`;
  await optOutByReply(deps, tenantId, { ...reply, source: 'sms', reason, provider: provider.name, to: message.to || null });
  return incoming.noReply;
}

// ---------------------------------------------------------------------------------------------
// The message log.

export const toMessage = (row: repo.MessageRow): Message => ({
  id: row.id,
  channel: row.channel,
  callId: row.call_id,
  agentId: row.agent_id,
  campaignId: row.campaign_id,
  contactId: row.contact_id,
  toNumber: row.to_number,
  sender: row.sender,
  provider: row.provider,
  templateName: row.template_name,
  languageCode: row.language_code,
  body: row.body,
  parameters: row.parameters,
  encoding: row.encoding,
  segments: row.segments,
  status: row.status,
  providerMessageId: row.provider_message_id,
  failureReason: row.failure_reason,
  attempts: row.attempts,
  sentAt: isoOrNull(row.sent_at),
  deliveredAt: isoOrNull(row.delivered_at),
  readAt: isoOrNull(row.read_at),
  failedAt: isoOrNull(row.failed_at),
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

export async function getSettings(ctx: TenantCtx): Promise<MessagingSettings> {
  return {
    unconfirmedMessagePolicy: await repo.unconfirmedPolicy(ctx.db, ctx.tenantId),
    optOutConfirmation: await repo.optOutConfirmationSettings(ctx.db, ctx.tenantId),
  };
}

export async function updateSettings(ctx: TenantCtx, body: MessagingSettings): Promise<MessagingSettings> {
  await withTransaction(ctx, async ({ db }) => {
    await repo.setUnconfirmedPolicy(db, ctx.tenantId, body.unconfirmedMessagePolicy);
    if (body.optOutConfirmation) await repo.setOptOutConfirmationSettings(db, ctx.tenantId, body.optOutConfirmation);
  });
  return getSettings(ctx);
}

export async function listMessages(ctx: TenantCtx, query: MessageQuery, page: Page) {
  const { rows, total } = await repo.listMessages(
    ctx.db,
    ctx.tenantId,
    {
      channel: query.channel?.toUpperCase() as Channel | undefined,
      callId: query.callId,
      status: query.status as MessageStatus | undefined,
    },
    page,
  );
  return { data: rows.map(toMessage), total };
}
