import { oncePer, perTurn, perTurnWrite } from '../../platform/batches.ts';
import { tenantCtx, withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import type { JobDefinition } from '../../platform/jobs.ts';
import { ProviderError } from '../../providers/errors.ts';
import type { SmsConnection } from '../../providers/types.ts';
import { smsProvider, whatsappProvider } from '../../providers/registry.ts';
import { smsSegments } from '../../providers/sms-segments.ts';
import * as calls from '../calls/service.ts';
import * as compliance from '../compliance/service.ts';
import * as campaigns from '../campaigns/service.ts';
import * as events from '../events/service.ts';
import { NotConnectedError, smsConnectionOf, smsStatusCallbackUrl, whatsappNotConnected, whatsappOf } from './channels.ts';
import * as repo from './repo.ts';
import { chooseSmsTemplate, chooseWhatsAppMapping, fillContactPlaceholders, type Recipient } from './templates.ts';

export const SEND_MESSAGE = 'message.send';
export interface SendMessageJob {
  tenantId: string;
  messageId: string;
}

/** Provider 5xx and timeouts: retried 8 times, 5 s doubling (about 21 minutes in all). */
const SEND_RETRY_LIMIT = 8;
const SEND_RETRY_DELAY_SECONDS = 5;

const onDoNotCallList = async (ctx: TenantCtx, phoneNumber: string) => (await compliance.listedNumbers(ctx, [phoneNumber])).size > 0;

type CallContact = Awaited<ReturnType<typeof campaigns.contactOfCall>>;

/** Who a call's messages go to: the other end of the line, named as the call's contact. */
function recipientOf(call: calls.CallRow, contact: CallContact): Recipient {
  const phoneNumber = call.direction === 'OUTGOING' ? call.to_number : call.from_number;
  return { phoneNumber, name: contact?.name ?? null, email: contact?.email ?? null, metadata: contact?.metadata ?? {} };
}

/**
 * The statements every follow-up makes, shared by the handlers running at once (a fetched batch
 * of jobs starts together, and providers' answers arrive together): one read of the agents'
 * campaigns and of the do-not-call list (the calls' own read is the calls module's, shared with
 * analytics), one transaction recording the messages with their
 * send jobs, one claim and one "sent" per turn and tenant, instead of one each.
 */
function sharedStatements(deps: Deps) {
  const { db } = deps;
  const campaignsOf = <T extends repo.CampaignTable>(table: T) =>
    perTurn((tenantId, agentIds: string[]) => repo.campaignsOfAgents(db, table, tenantId, agentIds));
  return {
    followUp: perTurn((tenantId, ofCalls: calls.CallRow[]) => campaigns.followUpsOf({ db, tenantId }, ofCalls)),
    whatsappCampaign: campaignsOf('whatsapp_campaigns'),
    smsCampaign: campaignsOf('sms_campaigns'),
    listed: perTurn(async (tenantId, phoneNumbers: string[]) => {
      const listed = await compliance.listedNumbers({ db, tenantId }, phoneNumbers);
      return phoneNumbers.map((phoneNumber) => listed.has(phoneNumber));
    }),
    /** Records each call's messages with their send jobs, all in one transaction; how many each call's were new. */
    record: perTurn(async (tenantId, perCall: repo.NewMessage[][]) => {
      const created = await withTransaction(tenantCtx(deps, tenantId), async (txCtx) => {
        const ids = new Set(await repo.insertMessages(txCtx.db, tenantId, perCall.flat()));
        const jobs = [...ids].map((messageId) => ({ name: SEND_MESSAGE, data: { tenantId, messageId } satisfies SendMessageJob }));
        await txCtx.jobs.sendMany(jobs, { tx: txCtx.db });
        return ids;
      });
      return perCall.map((messages) => messages.filter((message) => created.has(message.id)).length);
    }),
    claim: perTurn((tenantId, ids: string[]) => repo.claimManyForSending(db, tenantId, ids)),
    /** The tenant's WhatsApp connection, read once for the sends of a turn. */
    whatsapp: perTurn(async (tenantId, sends: unknown[]) => {
      const whatsapp = await whatsappOf(tenantCtx(deps, tenantId));
      return sends.map(() => whatsapp);
    }),
    /**
     * The tenant's connection to each SMS provider, read once for the sends of a turn; a provider
     * the tenant has not connected fails its own messages only (an Error answer rejects its sends).
     */
    smsConnection: perTurn(async (tenantId, providerNames: string[]) => {
      const ctx = tenantCtx(deps, tenantId);
      const connections = new Map<string, SmsConnection | Error>();
      for (const name of new Set(providerNames))
        connections.set(
          name,
          await smsConnectionOf(ctx, name).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error)))),
        );
      return providerNames.map((name) => connections.get(name)!);
    }),
    markSent: perTurnWrite((tenantId, sent: repo.Sent[]) => repo.markSent(db, tenantId, sent)),
  };
}
type SharedStatements = ReturnType<typeof sharedStatements>;
const statementsOf = oncePer(sharedStatements);

/**
 * After a call ends (contract §6): the agent's active WhatsApp and SMS campaigns each decide at
 * most one message, recorded with its send job in one transaction. A message already recorded
 * for the call's channel (a retried or repeated `call.ended`) is left alone, so each channel
 * sends at most once per call.
 */
export async function afterCallEnded(deps: Deps, job: { tenantId: string; callId: string }): Promise<number> {
  const ctx = tenantCtx(deps, job.tenantId);
  const statements = statementsOf(deps);
  const call = await calls.endedCallRow(deps)(ctx.tenantId, job.callId);
  if (!call || call.status !== 'ENDED' || !call.outcome || !call.agent_id) return 0;
  const [whatsapp, sms] = await Promise.all([
    statements.whatsappCampaign(ctx.tenantId, call.agent_id),
    statements.smsCampaign(ctx.tenantId, call.agent_id),
  ]);
  if (!whatsapp?.is_active && !sms?.is_active) return 0;
  // A campaign with postCallMessages FINAL_OUTCOME follows up only the call that settled the contact.
  const { sends, contact } = await statements.followUp(ctx.tenantId, call);
  if (!sends) return 0;
  const recipient = recipientOf(call, contact);
  if (await statements.listed(ctx.tenantId, recipient.phoneNumber)) return 0;
  const common = { call_id: call.id, agent_id: call.agent_id, contact_id: call.contact_id, to_number: recipient.phoneNumber };
  const messages = followUpMessages(whatsapp, sms, { direction: call.direction, outcome: call.outcome }, recipient, common);
  return messages.length === 0 ? 0 : statements.record(ctx.tenantId, messages);
}

/**
 * The messages the agent's active WhatsApp and SMS campaigns send after a call with this outcome,
 * each filled for the recipient (at most one per channel); not yet recorded.
 */
function followUpMessages(
  whatsapp: repo.WhatsAppCampaignRow | undefined,
  sms: repo.SmsCampaignRow | undefined,
  call: Pick<calls.CallRow, 'direction'> & { outcome: string },
  recipient: Recipient,
  common: Pick<repo.NewMessage, 'call_id' | 'agent_id' | 'contact_id' | 'to_number'>,
): repo.NewMessage[] {
  const messages: repo.NewMessage[] = [];

  const mapping = whatsapp?.is_active
    ? chooseWhatsAppMapping(whatsapp.templates, call.direction, call.outcome, recipient.metadata.language)
    : undefined;
  if (whatsapp && mapping) {
    messages.push({
      ...common,
      id: newId(),
      channel: 'WHATSAPP',
      campaign_id: whatsapp.id,
      // null: the integration's default sender, resolved when sending.
      sender: whatsapp.phone_number_id,
      provider: whatsappProvider.name,
      template_name: mapping.templateName,
      language_code: mapping.languageCode,
      body: null,
      parameters: mapping.bodyParameters.map((parameter) => fillContactPlaceholders(parameter, recipient)),
      dlt_sender_id: null,
      dlt_template_id: null,
      encoding: null,
      segments: null,
    });
  }
  const template = sms?.is_active ? chooseSmsTemplate(sms.templates, call.outcome) : undefined;
  if (sms && template) {
    const body = fillContactPlaceholders(template.messageBody, recipient);
    const { encoding, segments } = smsSegments(body);
    messages.push({
      ...common,
      id: newId(),
      channel: 'SMS',
      campaign_id: sms.id,
      sender: template.dltSenderId ?? sms.sender_number,
      provider: sms.sender_provider,
      template_name: null,
      language_code: null,
      body,
      parameters: [],
      dlt_sender_id: template.dltSenderId,
      dlt_template_id: template.dltTemplateId,
      encoding,
      segments,
    });
  }
  return messages;
}

/**
 * What would follow up an outgoing call with `outcome` to `recipient` (a campaign rehearsal asks):
 * the messages rendered as they would be recorded, nothing recorded or sent; none for a number on
 * the do-not-call list.
 */
export async function followUpsWouldSend(
  ctx: TenantCtx,
  agentId: string,
  outcome: string,
  recipient: Recipient,
): Promise<{ messages: repo.NewMessage[]; none: string | null }> {
  const [[whatsapp], [sms]] = await Promise.all([
    repo.campaignsOfAgents(ctx.db, 'whatsapp_campaigns', ctx.tenantId, [agentId]),
    repo.campaignsOfAgents(ctx.db, 'sms_campaigns', ctx.tenantId, [agentId]),
  ]);
  if (!whatsapp?.is_active && !sms?.is_active) return { messages: [], none: 'The agent has no active WhatsApp or SMS campaign.' };
  if (await onDoNotCallList(ctx, recipient.phoneNumber)) return { messages: [], none: 'The number is on the do-not-call list.' };
  // No call exists: the messages are never recorded, so they name none.
  const common = { call_id: '', agent_id: agentId, contact_id: null, to_number: recipient.phoneNumber };
  const messages = followUpMessages(whatsapp, sms, { direction: 'OUTGOING', outcome }, recipient, common);
  return { messages, none: messages.length ? null : `No template of the agent's messaging campaigns is for a ${outcome} call.` };
}

/**
 * A message an agent sends during a call (its send_sms or send_whatsapp tool): recorded with its
 * send job in one transaction, once per tool call however often the step is retried. SMS goes
 * from the agent's SMS campaign's sender; WhatsApp from its WhatsApp campaign's number or the
 * integration's default, as free text (WhatsApp delivers it inside the contact's 24-hour window).
 * Throws a sentence the model can act on when the agent has no way to send.
 */
export async function sendDuringCall(
  ctx: TenantCtx,
  input: { call: calls.CallRow; channel: 'SMS' | 'WHATSAPP'; text: string; toolCallId: string },
): Promise<{ to: string; created: boolean }> {
  const { call } = input;
  if (!call.agent_id) throw new Error('The call has no agent to send for.');
  const recipient = recipientOf(call, await campaigns.contactOfCall(ctx, call));
  if (await onDoNotCallList(ctx, recipient.phoneNumber))
    throw new Error('The person is on the do-not-call list; nothing can be sent to them.');
  const common = {
    id: newId(),
    call_id: call.id,
    agent_id: call.agent_id,
    contact_id: call.contact_id,
    to_number: recipient.phoneNumber,
    template_name: null,
    language_code: null,
    body: input.text,
    parameters: [],
    dlt_sender_id: null,
    dlt_template_id: null,
    tool_call_id: input.toolCallId,
  };
  let message: repo.NewMessage & { tool_call_id: string };
  if (input.channel === 'SMS') {
    const campaign = await repo.campaignOfAgent(ctx.db, 'sms_campaigns', ctx.tenantId, call.agent_id);
    if (!campaign) throw new Error('No SMS sender is set up for this agent; give it an SMS campaign (sender number and provider) first.');
    if (smsProvider(campaign.sender_provider).sms.templatesOnly)
      throw new Error(`${campaign.sender_provider} sends only registered templates, so an agent cannot send it free text.`);
    const { encoding, segments } = smsSegments(input.text);
    message = {
      ...common,
      channel: 'SMS',
      campaign_id: campaign.id,
      sender: campaign.sender_number,
      provider: campaign.sender_provider,
      encoding,
      segments,
    };
  } else {
    if (!(await whatsappOf(ctx))) throw whatsappNotConnected();
    const campaign = await repo.campaignOfAgent(ctx.db, 'whatsapp_campaigns', ctx.tenantId, call.agent_id);
    message = {
      ...common,
      channel: 'WHATSAPP',
      campaign_id: campaign?.id ?? null,
      sender: campaign?.phone_number_id ?? null,
      provider: whatsappProvider.name,
      encoding: null,
      segments: null,
    };
  }
  return withTransaction(ctx, async (txCtx) => {
    const { id, created } = await repo.insertToolMessage(txCtx.db, ctx.tenantId, message);
    if (created) await ctx.jobs.send<SendMessageJob>(SEND_MESSAGE, { tenantId: ctx.tenantId, messageId: id }, { tx: txCtx.db });
    return { to: recipient.phoneNumber, created };
  });
}

const UNCONFIRMED =
  'Unconfirmed: the worker stopped while the provider was being asked, so whether it was sent is unknown; it is not sent again to avoid a duplicate.';

/**
 * A message left SENDING by a worker that died while the provider was being asked (its job's
 * lease lapsed and the job came back). Whether the provider took it is unknown, and none of our
 * providers can be asked by our id (docs/operations.md): the tenant's policy decides. FAIL (the
 * default) marks it FAILED: never a second send, and the provider's status callback, which
 * names our id, corrects it if it was sent. RESEND hands it over again, the risk of a duplicate
 * accepted. Either way `message.unconfirmed` announces the outcome, in the same transaction.
 * Returns the message to send again, or undefined.
 */
async function settleUnconfirmed(ctx: TenantCtx, current: repo.MessageRow): Promise<repo.MessageRow | undefined> {
  const policy = await repo.unconfirmedPolicy(ctx.db, ctx.tenantId);
  return withTransaction(ctx, async (txCtx) => {
    // RESEND: SENDING → QUEUED, then claimed again like any retry (one worker wins the claim).
    const outcome =
      policy === 'RESEND' && current.attempts <= SEND_RETRY_LIMIT
        ? (await repo.requeue(txCtx.db, ctx.tenantId, current.id, "Unconfirmed: sent again under the tenant's RESEND policy."), 'RESENT')
        : (await repo.markFailed(txCtx.db, ctx.tenantId, current.id, UNCONFIRMED, ctx.clock.now()), 'FAILED');
    await events.emitEvent(
      txCtx,
      'message.unconfirmed',
      {
        messageId: current.id,
        callId: current.call_id,
        channel: current.channel,
        provider: current.provider,
        toNumber: current.to_number,
        attempts: current.attempts,
        policy,
        outcome,
      },
      current.agent_id,
    );
    return outcome === 'RESENT' ? repo.claimForSending(txCtx.db, ctx.tenantId, current.id) : undefined;
  });
}

/**
 * Hands one message to its provider. The attempt is committed as SENDING before the request,
 * so a worker that dies after the provider accepted the message and before its answer was
 * recorded leaves SENDING behind: the retried job settles it by the tenant's policy
 * (settleUnconfirmed); a later delivery callback that names our id corrects a FAILED one.
 */
export async function sendMessage(deps: Deps, job: SendMessageJob, meta: { retryCount: number }): Promise<void> {
  const ctx = tenantCtx(deps, job.tenantId);
  const now = () => ctx.clock.now();
  const statements = statementsOf(deps);
  let message = await statements.claim(ctx.tenantId, job.messageId);
  if (!message) {
    const current = await repo.findMessage(ctx.db, ctx.tenantId, job.messageId);
    if (current?.status === 'SENDING') message = await settleUnconfirmed(ctx, current);
    if (!message) return;
  }
  // Asked again as it goes out: a number listed since the message was recorded gets nothing.
  // The operator's terminal says what was sent: one line per message, sent or given up.
  const fields = { tenantId: ctx.tenantId, messageId: message.id, callId: message.call_id };
  const what = `${message.channel === 'WHATSAPP' ? 'WhatsApp message' : 'SMS'} ${message.id} (${message.provider})`;
  if (await statements.listed(ctx.tenantId, message.to_number)) {
    deps.log.info(fields, `${what} not sent: the recipient is on the do-not-call list`);
    return repo.markFailed(ctx.db, ctx.tenantId, message.id, 'Not sent: the recipient is on the do-not-call list.', now());
  }
  try {
    const providerMessageId = await deliver(ctx, message, statements);
    await statements.markSent(ctx.tenantId, { id: message.id, providerMessageId, at: now() });
    deps.log.info(fields, `${what} sent for call ${message.call_id}`);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (error instanceof ProviderError && error.retryable && meta.retryCount < SEND_RETRY_LIMIT) {
      await repo.requeue(ctx.db, ctx.tenantId, message.id, reason);
      throw error; // the job queue retries with backoff
    }
    deps.log.info(fields, `${what} not sent: ${reason}`);
    await repo.markFailed(ctx.db, ctx.tenantId, message.id, reason, now());
    if (!(error instanceof ProviderError) && !(error instanceof NotConnectedError)) throw error;
  }
}

/** Sends through the message's provider; returns the provider's message id. */
async function deliver(ctx: TenantCtx, message: repo.MessageRow, statements: SharedStatements): Promise<string> {
  if (message.channel === 'WHATSAPP') {
    const whatsapp = await statements.whatsapp(ctx.tenantId, message.id);
    if (!whatsapp) throw whatsappNotConnected();
    // An agent's message during a call is free text; a follow-up is a template.
    if (message.template_name === null) {
      const sent = await whatsapp.client.sendText({
        phoneNumberId: message.sender ?? whatsapp.defaultPhoneNumberId,
        to: message.to_number,
        body: message.body!,
        callbackData: message.id,
      });
      return sent.providerMessageId;
    }
    const sent = await whatsapp.client.sendTemplate({
      phoneNumberId: message.sender ?? whatsapp.defaultPhoneNumberId,
      to: message.to_number,
      templateName: message.template_name!,
      languageCode: message.language_code!,
      bodyParameters: message.parameters,
      callbackData: message.id,
    });
    return sent.providerMessageId;
  }
  const provider = smsProvider(message.provider);
  const connection = await statements.smsConnection(ctx.tenantId, message.provider);
  if (connection instanceof Error) throw connection; // rejected already; narrows the type
  const sent = await connection.send({
    from: message.sender!,
    to: message.to_number,
    body: message.body!,
    dltSenderId: message.dlt_sender_id,
    dltTemplateId: message.dlt_template_id,
    ...(provider.sms.callbacks?.read ? { statusCallbackUrl: smsStatusCallbackUrl(ctx, provider.name, message.id) } : {}),
  });
  return sent.providerMessageId;
}

export const sendMessageJob = (deps: Deps): JobDefinition<SendMessageJob> => ({
  name: SEND_MESSAGE,
  retryLimit: SEND_RETRY_LIMIT,
  retryDelaySeconds: SEND_RETRY_DELAY_SECONDS,
  // Up to 2 × 100 messages in flight per worker: each fetch, lease and completion serves a batch,
  // and a batch of slow provider calls lasts as long as the slowest, not their sum.
  concurrency: 2,
  batchSize: 100,
  parallel: true,
  handle: (data, meta) => sendMessage(deps, data, meta),
});
