import { Webhook } from 'standardwebhooks';

/**
 * The headers of a JSON request signed the Standard Webhooks way (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`), at `at` (the service's clock): event deliveries, custom tools and the
 * pre-dial webhook all sign this one way.
 */
export function signedWebhookHeaders(secret: string, id: string, at: Date, body: string, userAgent: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': userAgent,
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}
