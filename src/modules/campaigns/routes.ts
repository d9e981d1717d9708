// Seed §2.4, §3, §4.3, §8; contract §1 and §5: voice campaigns and their lifecycle.
import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx, type TenantCtx } from '../../platform/context.ts';
import { PageOf, pageOf, PageQuery, toPage } from '../../platform/pagination.ts';
import { EmptyBody, errorResponses, IdParams, StringEnum } from '../../platform/schemas.ts';
import * as campaigns from './service.ts';
import { CallerIdStats, Campaign, CampaignContact, CampaignQuery, CreateCampaignBody, UpdateCampaignBody } from './schemas.ts';

export const campaignRoutes: ModulePlugin = async (plugin, { deps }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const ctxOf = (request: Parameters<typeof principalOf>[0]) => tenantCtx(deps, principalOf(request).tenantId);
  const tags = ['campaigns'];

  app.post(
    '/campaigns',
    {
      schema: {
        tags,
        summary: 'Create a voice campaign (DRAFT, or SCHEDULED with scheduledAt)',
        body: CreateCampaignBody,
        response: { 201: Campaign, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await campaigns.createCampaign(ctxOf(request), request.body)),
  );

  app.get(
    '/campaigns',
    {
      schema: {
        tags,
        summary: 'List campaigns',
        querystring: CampaignQuery,
        response: { 200: PageOf(Campaign), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await campaigns.listCampaigns(
        ctxOf(request),
        { status: request.query.status, agentId: request.query.agentId },
        page,
      );
      return pageOf(data, total, page);
    },
  );

  app.get(
    '/campaigns/:id',
    {
      schema: {
        tags,
        summary: 'Get a campaign with live stats',
        params: IdParams,
        response: { 200: Campaign, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => campaigns.getCampaign(ctxOf(request), request.params.id),
  );

  app.patch(
    '/campaigns/:id',
    {
      schema: {
        tags,
        summary: 'Update a DRAFT campaign; scheduledAt moves it to SCHEDULED',
        params: IdParams,
        body: UpdateCampaignBody,
        response: { 200: Campaign, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => campaigns.updateCampaign(ctxOf(request), request.params.id, request.body),
  );

  app.delete(
    '/campaigns/:id',
    {
      schema: {
        tags,
        summary: 'Delete a DRAFT, COMPLETED or CANCELLED campaign',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      await campaigns.deleteCampaign(ctxOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/campaigns/:id/contacts',
    {
      schema: {
        tags,
        summary: 'Per-contact dial state: status, attempts, next attempt',
        params: IdParams,
        querystring: PageQuery,
        response: { 200: PageOf(CampaignContact), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await campaigns.listCampaignContacts(ctxOf(request), request.params.id, page);
      return pageOf(data, total, page);
    },
  );

  app.get(
    '/campaigns/:id/compliance-records',
    {
      schema: {
        tags,
        summary:
          'Every dial decision of the campaign (dialled, skipped or put off, and why: zones and local times, rules, do-not-call, consent, call counts), hash-chained, as CSV or JSON',
        params: IdParams,
        querystring: Type.Object({
          format: Type.Optional(StringEnum(['json', 'csv'] as const, { description: 'json (default) or csv.' })),
        }),
        response: {
          200: {
            description: 'application/json (an array of records) or text/csv',
            content: {
              'application/json': { schema: Type.Unsafe<Readable>(campaigns.ComplianceRecordList) },
              'text/csv': { schema: Type.Unsafe<Readable>({ type: 'string' }) },
            },
          },
          ...errorResponses(400, 401, 403, 404),
        },
      },
    },
    async (request, reply) => {
      const format = request.query.format ?? 'json';
      const body = await campaigns.complianceRecords(ctxOf(request), request.params.id, format);
      return reply
        .type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8')
        .header('content-disposition', `attachment; filename="compliance-records-${request.params.id}.${format}"`)
        .send(Readable.from(body));
    },
  );

  app.get(
    '/campaigns/:id/caller-ids',
    {
      schema: {
        tags,
        summary: "The campaign's caller-ID pool: each number's calls, answer rate and dials today",
        params: IdParams,
        response: { 200: Type.Object({ data: Type.Array(CallerIdStats) }), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => ({ data: await campaigns.callerIdStats(ctxOf(request), request.params.id) }),
  );

  const actions: [string, string, (ctx: TenantCtx, id: string) => Promise<void>][] = [
    ['start', 'Start dialling (DRAFT or SCHEDULED → RUNNING)', campaigns.startCampaign],
    ['pause', 'Pause (RUNNING → PAUSED); live calls finish, none start', campaigns.pauseCampaign],
    ['resume', 'Resume (PAUSED → RUNNING)', campaigns.resumeCampaign],
    ['cancel', 'Cancel an unfinished campaign', campaigns.cancelCampaign],
  ];
  for (const [action, summary, run] of actions) {
    app.post(
      `/campaigns/:id/${action}`,
      {
        schema: {
          tags,
          summary,
          params: IdParams,
          body: EmptyBody,
          response: { 202: Type.Null({ description: 'Accepted, no body.' }), ...errorResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request, reply: FastifyReply) => {
        await run(ctxOf(request), (request.params as { id: string }).id);
        return reply.code(202).send();
      },
    );
  }
};
