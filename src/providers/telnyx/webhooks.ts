/**
 * Telnyx webhooks (https://developers.telnyx.com/development/api-fundamentals/webhooks/receiving-webhooks):
 * a JSON body `{data: {event_type, occurred_at, payload}}`, signed with the account's Ed25519 key.
 * `telnyx-signature-ed25519` carries the base64 signature of `${telnyx-timestamp}|${raw body}`,
 * checked with the account's public key (Mission Control → Keys & Credentials → Public Key).
 *
 * The signed timestamp must lie within five minutes of when we received the webhook (the tolerance
 * Telnyx's own libraries use), so a captured delivery cannot be replayed later.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { asRecord, ProviderError } from '../errors.ts';
import type { ProviderWebhook } from '../types.ts';

export const SIGNATURE_HEADER = 'telnyx-signature-ed25519';
export const TIMESTAMP_HEADER = 'telnyx-timestamp';

const ED25519_KEY_BYTES = 32;
const ED25519_SIGNATURE_BYTES = 64;

/** The account's raw 32-byte Ed25519 public key (base64, as Telnyx shows it) as a key object; undefined when it is not one. */
export function telnyxPublicKey(publicKeyBase64: string): KeyObject | undefined {
  const raw = Buffer.from(publicKeyBase64, 'base64');
  if (raw.length !== ED25519_KEY_BYTES) return undefined;
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  } catch {
    return undefined;
  }
}

/** Checks a webhook's Ed25519 signature; a missing header, a malformed signature or key all fail. */
export function verifyTelnyxSignature(
  rawBody: string,
  signatureHeader: string | undefined,
  timestampHeader: string | undefined,
  publicKeyBase64: string,
): boolean {
  if (!signatureHeader || !timestampHeader || !/^\d+$/.test(timestampHeader)) return false;
  const signature = Buffer.from(signatureHeader, 'base64');
  if (signature.length !== ED25519_SIGNATURE_BYTES) return false;
  const key = telnyxPublicKey(publicKeyBase64);
  if (!key) return false;
  return verify(null, Buffer.from(`${timestampHeader}|${rawBody}`, 'utf8'), key, signature);
}

const headerOf = (webhook: ProviderWebhook, name: string) => {
  const value = webhook.headers[name];
  return typeof value === 'string' ? value : undefined;
};

/** How far a webhook's signed timestamp may lie from when it was received. */
export const TIMESTAMP_TOLERANCE_SECONDS = 300;

/** A signed timestamp (seconds) within the tolerance of `receivedAt`. */
export function isFreshTimestamp(timestampHeader: string | undefined, receivedAt: Date): boolean {
  if (!timestampHeader || !/^\d+$/.test(timestampHeader)) return false;
  return Math.abs(receivedAt.getTime() / 1000 - Number(timestampHeader)) <= TIMESTAMP_TOLERANCE_SECONDS;
}

export const verifyTelnyxWebhook = (webhook: ProviderWebhook, credentials: Record<string, string>) =>
  isFreshTimestamp(headerOf(webhook, TIMESTAMP_HEADER), webhook.receivedAt) &&
  verifyTelnyxSignature(
    webhook.rawBody,
    headerOf(webhook, SIGNATURE_HEADER),
    headerOf(webhook, TIMESTAMP_HEADER),
    credentials.publicKey ?? '',
  );

export interface TelnyxEvent {
  eventType: string;
  occurredAt: string | undefined;
  payload: Record<string, unknown>;
}

/** The event a webhook carries, or undefined when the body is not a Telnyx event. */
export function eventOf(webhook: ProviderWebhook): TelnyxEvent | undefined {
  let body: unknown;
  try {
    body = JSON.parse(webhook.rawBody);
  } catch {
    return undefined;
  }
  const data = asRecord(asRecord(body)?.data);
  const payload = asRecord(data?.payload);
  if (typeof data?.event_type !== 'string' || !payload) return undefined;
  return { eventType: data.event_type, occurredAt: typeof data.occurred_at === 'string' ? data.occurred_at : undefined, payload };
}

/** The event, or a ProviderError saying the body is not one. */
export function requireEvent(webhook: ProviderWebhook): TelnyxEvent {
  const event = eventOf(webhook);
  if (!event) throw new ProviderError('The body is not a Telnyx event ({data: {event_type, payload}}).', { retryable: false });
  return event;
}
