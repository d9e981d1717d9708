// Seed §4.6 and contract §8: usage, cost and trends from real calls; the fields agents extract.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx } from '../../platform/context.ts';
import { PageOf, pageOf, PageQuery, toPage } from '../../platform/pagination.ts';
import { errorResponses } from '../../platform/schemas.ts';
import * as agents from '../agents/service.ts';
import { campaignExperiment } from './experiments.ts';
import * as analytics from './service.ts';
import {
  AgentParams,
  Bindings,
  CampaignParams,
  Detail,
  DetailQuery,
  ExperimentQuery,
  ExperimentReport,
  Latency,
  LatencyQuery,
  PutBindingsBody,
  Result,
  ResultsQuery,
  Tool,
  Trends,
  TrendsQuery,
} from './schemas.ts';

export const analyticsRoutes: ModulePlugin = async (plugin, { deps }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const ctxOf = (request: Parameters<typeof principalOf>[0]) => tenantCtx(deps, principalOf(request).tenantId);
  const tags = ['analytics'];

  app.get(
    '/analytics/my-detail',
    {
      schema: {
        tags,
        summary: 'Usage and cost per component of the calls ended in a range (default the last 30 days)',
        querystring: DetailQuery,
        response: { 200: Detail, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => analytics.myDetail(ctxOf(request), request.query),
  );
  app.get(
    '/analytics/my-trends',
    {
      schema: {
        tags,
        summary: "Calls, answered calls, minutes and spend per day or hour in the tenant's time zone",
        querystring: TrendsQuery,
        response: { 200: Trends, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => analytics.myTrends(ctxOf(request), request.query),
  );
  app.get(
    '/analytics/latency',
    {
      schema: {
        tags,
        summary:
          "How long contacts waited for the agent's answers: p50/p95 from their last sound to the answer's first audio, per agent and campaign",
        querystring: LatencyQuery,
        response: { 200: Latency, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => analytics.answerLatency(ctxOf(request), request.query),
  );
  app.get(
    '/analytics/tools',
    {
      schema: {
        tags,
        summary: 'Tools available to agents',
        querystring: PageQuery,
        response: { 200: PageOf(Tool), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      return pageOf(agents.AGENT_TOOLS.slice(page.offset, page.offset + page.limit), agents.AGENT_TOOLS.length, page);
    },
  );
  app.get(
    '/analytics/agents/:agentId/bindings',
    {
      schema: {
        tags,
        summary: 'Analytics fields an agent extracts',
        params: AgentParams,
        response: { 200: Bindings, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => analytics.getBindings(ctxOf(request), request.params.agentId),
  );
  app.put(
    '/analytics/agents/:agentId/bindings',
    {
      schema: {
        tags,
        summary: 'Replace the analytics fields an agent extracts',
        params: AgentParams,
        body: PutBindingsBody,
        response: { 200: Bindings, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => analytics.putBindings(ctxOf(request), request.params.agentId, request.body),
  );
  app.get(
    '/analytics/campaigns/:campaignId/experiment',
    {
      schema: {
        tags,
        summary:
          "A campaign's experiment arm by arm (contacts, outcomes, tool outcomes, durations, cost per success) and whether each arm's success rate differs significantly from the first arm's",
        params: CampaignParams,
        querystring: ExperimentQuery,
        response: { 200: ExperimentReport, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => campaignExperiment(ctxOf(request), request.params.campaignId, request.query),
  );
  app.get(
    '/analytics/results',
    {
      schema: {
        tags,
        summary: 'Structured data extracted from conversations, one record per call',
        querystring: ResultsQuery,
        response: { 200: PageOf(Result), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await analytics.listResults(ctxOf(request), request.query, page);
      return pageOf(data, total, page);
    },
  );
};
