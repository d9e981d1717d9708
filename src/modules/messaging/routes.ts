// Seed §2.5, §2.6, §2.9, §4.1, §4.2, §8; contract §6: post-call WhatsApp and SMS messaging.
import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { keepRawBodies } from '../../platform/form.ts';
import { tenantCtx } from '../../platform/context.ts';
import { PageOf, pageOf, toPage } from '../../platform/pagination.ts';
import { EmptyBody, errorResponses, IdParams } from '../../platform/schemas.ts';
import { providerWebhookLimit } from '../../platform/webhook-limit.ts';
import { smsProvider, SMS_PROVIDER_NAMES } from '../../providers/registry.ts';
import * as messaging from './service.ts';
import {
  CampaignQuery,
  CreateSmsCampaignBody,
  CreateWhatsAppCampaignBody,
  Message,
  MessageQuery,
  MessagingSettings,
  SmsCampaign,
  UpdateSmsCampaignBody,
  UpdateWhatsAppCampaignBody,
  VerifyQuery,
  WebhookToken,
  WhatsAppCampaign,
  WhatsAppSenderNumber,
} from './schemas.ts';

export const messagingRoutes: ModulePlugin = async (plugin, { deps }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const ctxOf = (request: Parameters<typeof principalOf>[0]) => tenantCtx(deps, principalOf(request).tenantId);

  // --- WhatsApp campaigns -------------------------------------------------------------------
  const whatsapp = ['whatsapp'];
  app.post(
    '/whatsapp/campaigns',
    {
      schema: {
        tags: whatsapp,
        summary: 'Create the WhatsApp campaign of an agent (one per agent)',
        body: CreateWhatsAppCampaignBody,
        response: { 201: WhatsAppCampaign, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await messaging.createWhatsAppCampaign(ctxOf(request), request.body)),
  );
  app.get(
    '/whatsapp/campaigns',
    {
      schema: {
        tags: whatsapp,
        summary: 'List WhatsApp campaigns',
        querystring: CampaignQuery,
        response: { 200: PageOf(WhatsAppCampaign), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await messaging.listWhatsAppCampaigns(ctxOf(request), request.query.agentId, page);
      return pageOf(data, total, page);
    },
  );
  app.get(
    '/whatsapp/campaigns/:id',
    {
      schema: {
        tags: whatsapp,
        summary: 'Get a WhatsApp campaign',
        params: IdParams,
        response: { 200: WhatsAppCampaign, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => messaging.getWhatsAppCampaign(ctxOf(request), request.params.id),
  );
  app.put(
    '/whatsapp/campaigns/:id',
    {
      schema: {
        tags: whatsapp,
        summary: 'Update a WhatsApp campaign; templates, when given, replace the whole set',
        params: IdParams,
        body: UpdateWhatsAppCampaignBody,
        response: { 200: WhatsAppCampaign, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => messaging.updateWhatsAppCampaign(ctxOf(request), request.params.id, request.body),
  );
  app.delete(
    '/whatsapp/campaigns/:id',
    {
      schema: {
        tags: whatsapp,
        summary: 'Delete a WhatsApp campaign',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      await messaging.deleteWhatsAppCampaign(ctxOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  // --- The WhatsApp account -----------------------------------------------------------------
  app.post(
    '/whatsapp/webhook-token',
    {
      schema: {
        tags: whatsapp,
        summary: 'The verify token for the WhatsApp webhook subscription (201 when issued, 200 after: always the same token)',
        body: EmptyBody,
        response: { 200: WebhookToken, 201: WebhookToken, ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const { token, created } = await messaging.webhookToken(ctxOf(request));
      return reply.code(created ? 201 : 200).send({ token });
    },
  );
  app.get(
    '/whatsapp/fetch-numbers',
    {
      schema: {
        tags: whatsapp,
        summary: 'Sender numbers of the connected WhatsApp business account, live from the provider',
        response: { 200: Type.Array(WhatsAppSenderNumber), ...errorResponses(401, 403, 409, 502) },
      },
    },
    async (request) => messaging.fetchNumbers(ctxOf(request)),
  );

  // Meta's webhook (contract §6: provider callbacks are the only routes without a key). The
  // signature covers the exact bytes, so this scope keeps JSON bodies raw.
  await app.register(async (raw) => {
    raw.removeContentTypeParser('application/json');
    raw.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    const config = { auth: 'public' as const, rateLimit: providerWebhookLimit(deps.config) };
    raw.get(
      '/whatsapp/webhook',
      {
        config,
        schema: {
          tags: whatsapp,
          summary: 'Webhook verification handshake (hub.mode, hub.verify_token, hub.challenge)',
          security: [],
          querystring: VerifyQuery,
          response: { 200: Type.String(), ...errorResponses(403) },
        },
      },
      async (request, reply) =>
        reply.type('text/plain').send(await messaging.verifyWebhookSubscription(deps, request.query as Record<string, string>)),
    );
    raw.post(
      '/whatsapp/webhook',
      {
        config,
        schema: {
          tags: whatsapp,
          summary: 'Delivery statuses from WhatsApp (signed with X-Hub-Signature-256)',
          security: [],
          response: { 200: Type.Object({ received: Type.Integer() }), ...errorResponses(400, 401, 415) },
        },
      },
      async (request) => {
        const signature = request.headers['x-hub-signature-256'];
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        return { received: await messaging.receiveWhatsAppWebhook(deps, body, typeof signature === 'string' ? signature : undefined) };
      },
    );
  });

  // SMS providers' delivery status callbacks, each verified by its provider's signature over the raw body.
  await app.register(async (callbacks) => {
    keepRawBodies(callbacks);
    for (const provider of SMS_PROVIDER_NAMES.map(smsProvider).filter((provider) => provider.sms.callbacks)) {
      if (provider.sms.callbacks?.read)
        callbacks.post(
          `/messages/${provider.name.toLowerCase()}-status`,
          {
            config: { auth: 'public', rateLimit: providerWebhookLimit(deps.config) },
            schema: {
              tags: ['messages'],
              summary: `${provider.title} SMS status callback`,
              security: [],
              response: { 204: Type.Null(), ...errorResponses(400, 403, 415) },
            },
          },
          async (request, reply) => {
            await messaging.receiveSmsStatus(deps, provider.name, {
              url: `${deps.config.publicUrl}${request.url}`,
              headers: request.headers,
              rawBody: typeof request.body === 'string' ? request.body : '',
              receivedAt: deps.clock.now(),
            });
            return reply.code(204).send(null);
          },
        );
      if (!provider.sms.callbacks?.incoming) continue;
      callbacks.post(
        `/messages/${provider.name.toLowerCase()}-incoming`,
        {
          config: { auth: 'public', rateLimit: providerWebhookLimit(deps.config) },
          schema: {
            tags: ['messages'],
            summary: `An SMS sent to one of the tenant's ${provider.title} numbers (?tenant=<tenant id>); an opt-out reply lists its sender`,
            security: [],
            response: { 200: Type.String(), ...errorResponses(400, 403, 415) },
          },
        },
        async (request, reply) => {
          const answer = await messaging.receiveIncomingSms(deps, provider.name, {
            url: `${deps.config.publicUrl}${request.url}`,
            headers: request.headers,
            rawBody: typeof request.body === 'string' ? request.body : '',
            receivedAt: deps.clock.now(),
          });
          return reply.type(answer.contentType).send(answer.body);
        },
      );
    }
  });

  // --- SMS campaigns --------------------------------------------------------------------------
  const sms = ['sms'];
  app.post(
    '/sms-agent/campaigns',
    {
      schema: {
        tags: sms,
        summary: 'Create the SMS campaign of an agent (one per agent)',
        body: CreateSmsCampaignBody,
        response: { 201: SmsCampaign, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await messaging.createSmsCampaign(ctxOf(request), request.body)),
  );
  app.get(
    '/sms-agent/campaigns',
    {
      schema: {
        tags: sms,
        summary: 'List SMS campaigns',
        querystring: CampaignQuery,
        response: { 200: PageOf(SmsCampaign), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await messaging.listSmsCampaigns(ctxOf(request), request.query.agentId, page);
      return pageOf(data, total, page);
    },
  );
  app.get(
    '/sms-agent/campaigns/:id',
    {
      schema: {
        tags: sms,
        summary: 'Get an SMS campaign',
        params: IdParams,
        response: { 200: SmsCampaign, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => messaging.getSmsCampaign(ctxOf(request), request.params.id),
  );
  app.put(
    '/sms-agent/campaigns/:id',
    {
      schema: {
        tags: sms,
        summary: 'Update an SMS campaign; templates, when given, replace the existing ones',
        params: IdParams,
        body: UpdateSmsCampaignBody,
        response: { 200: SmsCampaign, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => messaging.updateSmsCampaign(ctxOf(request), request.params.id, request.body),
  );
  app.delete(
    '/sms-agent/campaigns/:id',
    {
      schema: {
        tags: sms,
        summary: 'Delete an SMS campaign',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      await messaging.deleteSmsCampaign(ctxOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  // --- Messaging settings -------------------------------------------------------------------
  app.get(
    '/messages/settings',
    {
      schema: {
        tags: ['messages'],
        summary: "The tenant's messaging settings: what becomes of a message whose sending was interrupted",
        response: { 200: MessagingSettings, ...errorResponses(401, 403) },
      },
    },
    async (request) => messaging.getSettings(ctxOf(request)),
  );
  app.put(
    '/messages/settings',
    {
      schema: {
        tags: ['messages'],
        summary: "Set the tenant's messaging settings",
        body: MessagingSettings,
        response: { 200: MessagingSettings, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => messaging.updateSettings(ctxOf(request), request.body),
  );

  // --- The message log ------------------------------------------------------------------------
  app.get(
    '/messages',
    {
      schema: {
        tags: ['messages'],
        summary: 'Post-call messages, newest first, with their provider status',
        querystring: MessageQuery,
        response: { 200: PageOf(Message), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await messaging.listMessages(ctxOf(request), request.query, page);
      return pageOf(data, total, page);
    },
  );
};
