// Contract §3: a tenant's own provider credentials, dashboard sessions only.
import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx } from '../../platform/context.ts';
import { errorResponses } from '../../platform/schemas.ts';
import * as integrations from './service.ts';
import { Integration, INTEGRATION_KINDS, KindParams, type IntegrationKind } from './schemas.ts';

export const integrationRoutes: ModulePlugin = async (plugin, { deps }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const ctxOf = (request: Parameters<typeof principalOf>[0]) => tenantCtx(deps, principalOf(request).tenantId);
  const config = { auth: 'dashboard' as const };
  const tags = ['integrations'];

  app.get(
    '/integrations',
    {
      config,
      schema: {
        tags,
        summary: 'The connected providers (secrets never shown)',
        response: { 200: Type.Object({ data: Type.Array(Integration) }), ...errorResponses(401, 403) },
      },
    },
    async (request) => ({
      data: await integrations.listIntegrations(ctxOf(request)),
    }),
  );

  for (const [kind, { body, summary }] of Object.entries(INTEGRATION_KINDS) as [
    IntegrationKind,
    (typeof INTEGRATION_KINDS)[IntegrationKind],
  ][]) {
    app.put(
      `/integrations/${kind}`,
      { config, schema: { tags, summary, body, response: { 200: Integration, ...errorResponses(400, 401, 403) } } },
      async (request) => integrations.putIntegration(ctxOf(request), kind, request.body as Record<string, string>),
    );
  }

  app.get(
    '/integrations/:kind',
    {
      config,
      schema: {
        tags,
        summary: 'One connected provider',
        params: KindParams,
        response: { 200: Integration, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => integrations.getIntegration(ctxOf(request), request.params.kind as IntegrationKind),
  );

  app.delete(
    '/integrations/:kind',
    {
      config,
      schema: {
        tags,
        summary: 'Disconnect a provider',
        params: KindParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      await integrations.deleteIntegration(ctxOf(request), request.params.kind as IntegrationKind);
      return reply.code(204).send(null);
    },
  );
};
