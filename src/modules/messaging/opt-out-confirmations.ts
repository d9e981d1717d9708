import { tenantCtx, withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import type { JobDefinition } from '../../platform/jobs.ts';
import { normalizePhoneNumber } from '../../platform/phone-numbers.ts';
import { ProviderError } from '../../providers/errors.ts';
import { smsProvider } from '../../providers/registry.ts';
import * as compliance from '../compliance/service.ts';
import { NotConnectedError, smsConnectionOf, whatsappNotConnected, whatsappOf } from './channels.ts';
import * as repo from './repo.ts';

/**
 * A person who opts out by a reply gets one message saying so, on the channel they used, and never
 * another: the confirmation is recorded with its send job in the transaction that lists the number,
 * once per number (a second STOP finds the number listed and records nothing), and a send whose
 * worker died midway is not tried again. It skips the do-not-call check every other message gets:
 * the person is on the list by then, and this message is the one the rules ask for.
 */
export const DEFAULT_OPT_OUT_CONFIRMATION = 'You will not be contacted again. This is the last message you will receive from us.';

export const CONFIRM_OPT_OUT = 'opt-out.confirm';
interface ConfirmOptOutJob {
  tenantId: string;
  phoneNumber: string;
}

const RETRY_LIMIT = 8;
const RETRY_DELAY_SECONDS = 5;

export interface OptOutReply {
  source: 'sms' | 'whatsapp';
  from: string;
  text: string;
  messageId: string;
  at: Date;
  reason: string;
  /** The provider it came through and the tenant's number it was sent to (SMS), which answers it. */
  provider: string;
  to: string | null;
}

/** compliance.optOutByReply, with the confirmation recorded in the same transaction when the reply listed the number. */
export async function optOutByReply(deps: Pick<Deps, 'db' | 'clock' | 'jobs'>, tenantId: string, reply: OptOutReply): Promise<boolean> {
  return withTransaction({ db: deps.db, clock: deps.clock, tenantId }, async (txCtx) => {
    const added = await compliance.optOutByReply(txCtx, reply);
    if (!added) return false;
    const settings = await repo.optOutConfirmationSettings(txCtx.db, tenantId);
    const confirmsItself = reply.source === 'sms' && smsProvider(reply.provider).sms.callbacks?.incoming?.confirmsOptOuts === true;
    if (!settings.enabled || confirmsItself) return true;
    const phoneNumber = normalizePhoneNumber(reply.from)!;
    const recorded = await repo.insertOptOutConfirmation(txCtx.db, tenantId, {
      phone_number: phoneNumber,
      channel: reply.source === 'sms' ? 'SMS' : 'WHATSAPP',
      provider: reply.provider,
      sender: reply.source === 'sms' ? reply.to : null,
      body: settings.text ?? DEFAULT_OPT_OUT_CONFIRMATION,
      dlt_sender_id: settings.dltSenderId,
      dlt_template_id: settings.dltTemplateId,
    });
    if (recorded) await deps.jobs.send<ConfirmOptOutJob>(CONFIRM_OPT_OUT, { tenantId, phoneNumber }, { tx: txCtx.db });
    return true;
  });
}

/** Sends a number's confirmation once; a retryable provider error is retried by the queue, anything else ends it FAILED. */
export async function confirmOptOut(deps: Deps, job: ConfirmOptOutJob, meta: { retryCount: number }): Promise<void> {
  const ctx = tenantCtx(deps, job.tenantId);
  const confirmation = await repo.claimOptOutConfirmation(ctx.db, ctx.tenantId, job.phoneNumber);
  if (!confirmation) {
    const current = await repo.findOptOutConfirmation(ctx.db, ctx.tenantId, job.phoneNumber);
    // Left SENDING by a worker that died while the provider was asked: never a second one.
    if (current?.status === 'SENDING')
      await repo.settleOptOutConfirmation(ctx.db, ctx.tenantId, job.phoneNumber, {
        status: 'FAILED',
        failureReason: 'Unconfirmed: the worker stopped while the provider was being asked; not sent again.',
      });
    return;
  }
  try {
    const providerMessageId = await deliver(ctx, confirmation);
    await repo.settleOptOutConfirmation(ctx.db, ctx.tenantId, job.phoneNumber, { status: 'SENT', providerMessageId });
  } catch (error) {
    const failureReason = error instanceof Error ? error.message : String(error);
    if (error instanceof ProviderError && error.retryable && meta.retryCount < RETRY_LIMIT) {
      await repo.settleOptOutConfirmation(ctx.db, ctx.tenantId, job.phoneNumber, { status: 'QUEUED', failureReason });
      throw error;
    }
    await repo.settleOptOutConfirmation(ctx.db, ctx.tenantId, job.phoneNumber, { status: 'FAILED', failureReason });
    if (!(error instanceof ProviderError) && !(error instanceof NotConnectedError)) throw error;
  }
}

async function deliver(ctx: TenantCtx, confirmation: repo.OptOutConfirmationRow): Promise<string> {
  if (confirmation.channel === 'WHATSAPP') {
    const whatsapp = await whatsappOf(ctx);
    if (!whatsapp) throw whatsappNotConnected();
    // Free text: the person wrote a moment ago, inside WhatsApp's 24-hour window.
    const sent = await whatsapp.client.sendText({
      phoneNumberId: whatsapp.defaultPhoneNumberId,
      to: confirmation.phone_number,
      body: confirmation.body,
      callbackData: `opt-out:${confirmation.phone_number}`,
    });
    return sent.providerMessageId;
  }
  const sent = await (
    await smsConnectionOf(ctx, confirmation.provider)
  ).send({
    from: confirmation.sender ?? '',
    to: confirmation.phone_number,
    body: confirmation.body,
    dltSenderId: confirmation.dlt_sender_id,
    dltTemplateId: confirmation.dlt_template_id,
  });
  return sent.providerMessageId;
}

export const confirmOptOutJob = (deps: Deps): JobDefinition<ConfirmOptOutJob> => ({
  name: CONFIRM_OPT_OUT,
  retryLimit: RETRY_LIMIT,
  retryDelaySeconds: RETRY_DELAY_SECONDS,
  concurrency: 2,
  batchSize: 1,
  handle: (data, meta) => confirmOptOut(deps, data, meta),
});
