// Seed §4.7 (agents); contract §3 (agents, voice numbers); the voices agents speak with.
import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx } from '../../platform/context.ts';
import { PageOf, PageQuery, pageOf, toPage } from '../../platform/pagination.ts';
import { EmptyBody, errorResponses, IdParams } from '../../platform/schemas.ts';
import * as agents from './service.ts';
import {
  Agent,
  AgentVersion,
  AgentVersionDiff,
  AgentsQuery,
  CreateAgentBody,
  CreateVoiceNumberBody,
  UpdateAgentBody,
  PublishVersionBody,
  UpdateVoiceNumberBody,
  VersionDiffQuery,
  VersionParams,
  Voice,
  VoiceNumber,
  VoicesQuery,
} from './schemas.ts';

/** What the agents' routes ask of higher modules, handed down by the composition root (app.ts). */
export interface AgentUsage {
  agentInUse: agents.CampaignUsage;
  voiceNumberInUse: agents.CampaignUsage;
  /** What publishing a version sets off (the agent's test suites run against it), in the publishing transaction. */
  onPublished?: agents.OnPublished;
}

export const agentRoutes =
  (usage: AgentUsage): ModulePlugin =>
  (plugin, options) =>
    mountAgentRoutes(usage, plugin, options);

async function mountAgentRoutes(usage: AgentUsage, plugin: Parameters<ModulePlugin>[0], { deps }: Parameters<ModulePlugin>[1]) {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const ctxOf = (request: Parameters<typeof principalOf>[0]) => tenantCtx(deps, principalOf(request).tenantId);
  const tags = ['agents'];
  const numberTags = ['voice-numbers'];

  app.post(
    '/agents',
    {
      config: { shownOnce: ['toolSigningSecret'] },
      schema: {
        tags,
        summary: 'Create an agent',
        body: CreateAgentBody,
        response: { 201: Agent, ...errorResponses(400, 401, 403, 409, 502) },
      },
    },
    async (request, reply) => reply.code(201).send(await agents.createAgent(ctxOf(request), request.body)),
  );

  app.get(
    '/agents',
    {
      schema: {
        tags,
        summary: 'List agents, newest first',
        querystring: AgentsQuery,
        response: { 200: PageOf(Agent), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await agents.listAgents(ctxOf(request), request.query.search, page);
      return pageOf(data, total, page);
    },
  );

  app.get(
    '/agents/:id',
    { schema: { tags, summary: 'Get an agent', params: IdParams, response: { 200: Agent, ...errorResponses(400, 401, 403, 404) } } },
    async (request) => agents.requireAgent(ctxOf(request), request.params.id),
  );

  app.patch(
    '/agents/:id',
    {
      schema: {
        tags,
        summary: 'Update an agent (only the fields given)',
        params: IdParams,
        body: UpdateAgentBody,
        response: { 200: Agent, ...errorResponses(400, 401, 403, 404, 409, 502) },
      },
    },
    async (request) => agents.updateAgent(ctxOf(request), request.params.id, request.body),
  );

  app.delete(
    '/agents/:id',
    {
      schema: {
        tags,
        summary: 'Delete an agent (refused while a campaign that has not finished uses it)',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      await agents.deleteAgent(ctxOf(request), request.params.id, usage.agentInUse);
      return reply.code(204).send(null);
    },
  );

  // Versions (issue 41; docs/decisions/0058-agent-versions.md).
  app.post(
    '/agents/:id/versions',
    {
      schema: {
        tags,
        summary: "Publish: freeze the agent's conversational config as its next version (never changed afterwards)",
        params: IdParams,
        body: PublishVersionBody,
        response: { 201: AgentVersion, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await agents.publishVersion(ctxOf(request), request.params.id, request.body?.note, usage.onPublished)),
  );

  app.get(
    '/agents/:id/versions',
    {
      schema: {
        tags,
        summary: "List the agent's published versions, newest first",
        params: IdParams,
        querystring: PageQuery,
        response: { 200: PageOf(AgentVersion), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await agents.listVersions(ctxOf(request), request.params.id, page);
      return pageOf(data, total, page);
    },
  );

  app.get(
    '/agents/:id/versions/:version',
    {
      schema: {
        tags,
        summary: 'Get a version of the agent',
        params: VersionParams,
        response: { 200: AgentVersion, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => agents.requireVersion(ctxOf(request), request.params.id, request.params.version),
  );

  app.get(
    '/agents/:id/versions/:version/diff',
    {
      schema: {
        tags,
        summary: "What differs between a version and another (?against=m), or the agent's current config, field by field",
        params: VersionParams,
        querystring: VersionDiffQuery,
        response: { 200: AgentVersionDiff, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => agents.diffVersion(ctxOf(request), request.params.id, request.params.version, request.query.against),
  );

  app.post(
    '/agents/:id/versions/:version/restore',
    {
      schema: {
        tags,
        summary: "Make the agent's current config the version's (checked as an edit is; nothing is published)",
        params: VersionParams,
        body: EmptyBody,
        response: { 200: Agent, ...errorResponses(400, 401, 403, 404, 409, 502) },
      },
    },
    async (request) => agents.restoreVersion(ctxOf(request), request.params.id, request.params.version),
  );

  // Named by the seed as not implemented; they answer alike whether or not the agent exists.
  app.get(
    '/agents/:id/executions',
    {
      schema: {
        tags,
        summary: 'Not implemented: list the agent’s calls with GET /call-logs?agentId=…',
        params: IdParams,
        response: errorResponses(400, 401, 403, 404),
      },
    },
    async (request) => {
      throw agents.executionsNotAnEndpoint(request.params.id);
    },
  );

  app.post(
    '/agents/:id/stop-calls',
    {
      schema: {
        tags,
        summary: 'Not implemented: hang up each call with POST /call-logs/{id}/hangup',
        params: IdParams,
        response: errorResponses(400, 401, 403, 404),
      },
    },
    async () => {
      throw agents.noBulkStopCalls();
    },
  );

  app.get(
    '/voices',
    {
      schema: {
        tags: ['voices'],
        summary: "A text-to-speech provider's voices (default ESPEAK), best first; an agent's voice is one of them",
        querystring: VoicesQuery,
        response: { 200: Type.Object({ data: Type.Array(Voice) }), ...errorResponses(400, 401, 403, 502) },
      },
    },
    async (request) => ({
      data: await agents.listVoices(ctxOf(request), request.query.provider ?? 'ESPEAK', request.query.language),
    }),
  );

  app.post(
    '/voice-numbers',
    {
      schema: {
        tags: numberTags,
        summary: 'Register a phone number (unique on the platform)',
        body: CreateVoiceNumberBody,
        response: { 201: VoiceNumber, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await agents.createVoiceNumber(ctxOf(request), request.body)),
  );

  app.get(
    '/voice-numbers',
    {
      schema: {
        tags: numberTags,
        summary: 'List voice numbers, newest first',
        querystring: PageQuery,
        response: { 200: PageOf(VoiceNumber), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await agents.listVoiceNumbers(ctxOf(request), page);
      return pageOf(data, total, page);
    },
  );

  app.get(
    '/voice-numbers/:id',
    {
      schema: {
        tags: numberTags,
        summary: 'Get a voice number',
        params: IdParams,
        response: { 200: VoiceNumber, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => agents.requireVoiceNumber(ctxOf(request), request.params.id),
  );

  app.patch(
    '/voice-numbers/:id',
    {
      schema: {
        tags: numberTags,
        summary: 'Change the label or inbound agent (the number and provider are fixed)',
        params: IdParams,
        body: UpdateVoiceNumberBody,
        response: { 200: VoiceNumber, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => agents.updateVoiceNumber(ctxOf(request), request.params.id, request.body),
  );

  app.delete(
    '/voice-numbers/:id',
    {
      schema: {
        tags: numberTags,
        summary: 'Delete a voice number (refused while a campaign that has not finished uses it)',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      await agents.deleteVoiceNumber(ctxOf(request), request.params.id, usage.voiceNumberInUse);
      return reply.code(204).send(null);
    },
  );
}
