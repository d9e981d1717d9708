/** One SMS to send. */
export interface SmsSend {
  /** Our sending number (E.164) or alphanumeric sender id. */
  from: string;
  /** E.164 with '+'. */
  to: string;
  body: string;
  /** India DLT header (sender id) registered for this message; providers that do not do DLT ignore it. */
  dltSenderId?: string | null;
  /** India DLT content-template id; providers that do not do DLT ignore it. */
  dltTemplateId?: string | null;
  /** Where the provider should post delivery status changes, for providers that take one per message. */
  statusCallbackUrl?: string;
}

/**
 * What the messaging code needs from an SMS provider. `send` resolves once the provider accepted
 * the message (`status` is the provider's own word for that, e.g. Twilio's `queued`) and throws a
 * `ProviderError` (src/providers/errors.ts) otherwise.
 */
export interface SmsProvider {
  send(message: SmsSend): Promise<{ providerMessageId: string; status: string }>;
}
