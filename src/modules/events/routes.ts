// Contract §9: webhook deliveries with their attempts, and redelivery.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx } from '../../platform/context.ts';
import { PageOf, pageOf, toPage } from '../../platform/pagination.ts';
import { EmptyBody, errorResponses, IdParams } from '../../platform/schemas.ts';
import * as events from './service.ts';
import { Delivery, DeliveryQuery } from './schemas.ts';

export const eventRoutes: ModulePlugin = async (plugin, { deps }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const ctxOf = (request: Parameters<typeof principalOf>[0]) => tenantCtx(deps, principalOf(request).tenantId);
  const tags = ['webhooks'];

  app.get(
    '/webhook-deliveries',
    {
      schema: {
        tags,
        summary: 'Webhook deliveries, newest first, each with its attempts',
        querystring: DeliveryQuery,
        response: { 200: PageOf(Delivery), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await events.listDeliveries(ctxOf(request), request.query, page);
      return pageOf(data, total, page);
    },
  );

  app.get(
    '/webhook-deliveries/:id',
    {
      schema: {
        tags,
        summary: 'One webhook delivery with its attempts',
        params: IdParams,
        response: { 200: Delivery, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => events.getDelivery(ctxOf(request), request.params.id),
  );

  app.post(
    '/webhook-deliveries/:id/redeliver',
    {
      schema: {
        tags,
        summary: 'Send a delivery again (same webhook-id); answers the delivery, PENDING until it is sent',
        params: IdParams,
        body: EmptyBody,
        response: { 202: Delivery, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply: FastifyReply) =>
      reply.code(202).send(await events.redeliver(ctxOf(request), (request.params as { id: string }).id)),
  );
};
