// Issue 41, item 4: campaign rehearsals. Mounted with the campaigns module's routes (their paths
// are under /campaigns) by the composition root, since a rehearsal needs modules above campaigns.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx } from '../../platform/context.ts';
import { PageOf, PageQuery, pageOf, toPage } from '../../platform/pagination.ts';
import { errorResponses, IdParams } from '../../platform/schemas.ts';
import { CreateRehearsalBody, ListedRehearsal, Rehearsal, RehearsalParams } from './schemas.ts';
import * as rehearsals from './service.ts';

export const rehearsalRoutes: ModulePlugin = async (plugin, { deps }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const ctxOf = (request: Parameters<typeof principalOf>[0]) => tenantCtx(deps, principalOf(request).tenantId);
  const tags = ['campaigns'];

  app.post(
    '/campaigns/:id/rehearsals',
    {
      schema: {
        tags,
        summary:
          'Rehearse the campaign over a seeded sample of its list without dialling: who would be called when or why not, the conversations, the follow-ups and a cost forecast (any status; runs on the job queue)',
        params: IdParams,
        body: CreateRehearsalBody,
        response: { 202: Rehearsal, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => reply.code(202).send(await rehearsals.startRehearsal(ctxOf(request), request.params.id, request.body ?? {})),
  );

  app.get(
    '/campaigns/:id/rehearsals',
    {
      schema: {
        tags,
        summary: "The campaign's rehearsals, newest first, each with its summary and forecast (GET one for its contacts)",
        params: IdParams,
        querystring: PageQuery,
        response: { 200: PageOf(ListedRehearsal), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await rehearsals.listRehearsals(ctxOf(request), request.params.id, page);
      return pageOf(data, total, page);
    },
  );

  app.get(
    '/campaigns/:id/rehearsals/:rehearsalId',
    {
      schema: {
        tags,
        summary: "A campaign rehearsal's report (contacts is empty until its status is DONE)",
        params: RehearsalParams,
        response: { 200: Rehearsal, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => rehearsals.getRehearsal(ctxOf(request), request.params.id, request.params.rehearsalId),
  );
};
