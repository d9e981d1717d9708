import type { RateLimitOptions } from '@fastify/rate-limit';
import { appError } from './errors.ts';

/**
 * The rate limit of a provider's webhook route (call status, incoming calls, message status,
 * WhatsApp, media streams): no credentials to count by, so per client address, per route and per
 * API process, generous (WEBHOOK_RATE_LIMIT_PER_SECOND, 500 by default): a provider's own traffic
 * stays far below it, a flood of forged requests does not. Signatures are checked after it, so a
 * flood is refused before any signature work.
 */
export const providerWebhookLimit = (config: { webhookRateLimitPerSecond: number }): RateLimitOptions => ({
  max: config.webhookRateLimitPerSecond,
  timeWindow: 1000,
  keyGenerator: (request) => `webhook:${request.ip}`,
  errorResponseBuilder: (_request, context) => appError('RATE_LIMITED.webhook', { max: context.max, after: context.after }),
});
