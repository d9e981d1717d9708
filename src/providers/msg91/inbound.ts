/**
 * SMS people send to the tenant's MSG91 numbers. MSG91 forwards an inbound message (a long code or
 * virtual number with inbound forwarding) to a URL of the account holder's choice, form-encoded or
 * JSON, with the sender's number (`number`, digits with the country code), the number it was sent
 * to (`inboundNumber`), the text (`message`) and MSG91's id for it (`requestId`). MSG91 signs none
 * of its callbacks, so the URL carries a token only the account holder can make: the hex
 * HMAC-SHA256 of the tenant id keyed with the account's auth key (`?tenant=<id>&token=<hmac>`).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { parseForm } from '../../platform/form.ts';
import { asRecord } from '../errors.ts';
import type { ProviderWebhook, SmsChannel, SmsIncomingMessage } from '../types.ts';

/** The token an inbound URL of this tenant carries. */
export const msg91InboundToken = (authKey: string, tenantId: string): string =>
  createHmac('sha256', authKey).update(tenantId).digest('hex');

function verifyInboundToken(webhook: ProviderWebhook, credentials: Record<string, string>): boolean {
  const query = new URL(webhook.url).searchParams;
  const given = Buffer.from(query.get('token') ?? '', 'utf8');
  const expected = Buffer.from(msg91InboundToken(credentials.authKey ?? '', query.get('tenant') ?? ''), 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function fieldsOf(rawBody: string): Record<string, unknown> {
  const trimmed = rawBody.trim();
  if (!trimmed.startsWith('{')) return parseForm(rawBody);
  try {
    return asRecord(JSON.parse(trimmed)) ?? {};
  } catch {
    return {};
  }
}

const asE164 = (digits: string) => (digits.startsWith('+') ? digits : `+${digits}`);

function readInbound(webhook: ProviderWebhook): SmsIncomingMessage | null {
  const fields = fieldsOf(webhook.rawBody);
  const field = (name: string) => (typeof fields[name] === 'string' || typeof fields[name] === 'number' ? String(fields[name]) : '');
  if (!field('number')) return null;
  return {
    providerMessageId: field('requestId'),
    accountId: '',
    from: asE164(field('number')),
    to: field('inboundNumber') ? asE164(field('inboundNumber')) : '',
    text: field('message'),
  };
}

export const msg91Callbacks: NonNullable<SmsChannel['callbacks']> = {
  signatureHeader: 'token',
  signedWith: 'auth key',
  verify: verifyInboundToken,
  incoming: { read: readInbound, noReply: { contentType: 'text/plain', body: '' } },
};
