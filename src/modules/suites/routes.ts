// Issue 41, item 2: test suites of an agent, their runs and their pass rates per version.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx } from '../../platform/context.ts';
import { PageOf, PageQuery, pageOf, toPage } from '../../platform/pagination.ts';
import { errorResponses, IdParams } from '../../platform/schemas.ts';
import * as scorecards from './scorecards.ts';
import {
  CallScorecard,
  CallScorecardsQuery,
  CreateTestSuiteBody,
  PassRates,
  PutScorecardBody,
  RunQuery,
  Scorecard,
  TestSuite,
  TestSuiteRun,
  TestSuiteRunDetail,
  TestSuitesQuery,
  UpdateTestSuiteBody,
} from './schemas.ts';
import * as suites from './service.ts';

export const suiteRoutes: ModulePlugin = async (plugin, { deps }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const ctxOf = (request: Parameters<typeof principalOf>[0]) => tenantCtx(deps, principalOf(request).tenantId);
  const tags = ['test-suites'];

  app.post(
    '/test-suites',
    {
      schema: {
        tags,
        summary: "Create a test suite: scenarios (a caller's script or persona, contact, mocked tools, assertions) for an agent",
        body: CreateTestSuiteBody,
        response: { 201: TestSuite, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => reply.code(201).send(await suites.createSuite(ctxOf(request), request.body)),
  );

  app.get(
    '/test-suites',
    {
      schema: {
        tags,
        summary: "List the tenant's test suites (of one agent with ?agentId=), newest first",
        querystring: TestSuitesQuery,
        response: { 200: PageOf(TestSuite), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await suites.listSuites(ctxOf(request), request.query.agentId, page);
      return pageOf(data, total, page);
    },
  );

  app.get(
    '/test-suites/:id',
    {
      schema: { tags, summary: 'Get a test suite', params: IdParams, response: { 200: TestSuite, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request) => suites.getSuite(ctxOf(request), request.params.id),
  );

  app.patch(
    '/test-suites/:id',
    {
      schema: {
        tags,
        summary: "Change a test suite's name, description, runOnPublish or scenarios (runs already made keep the scenarios they ran)",
        params: IdParams,
        body: UpdateTestSuiteBody,
        response: { 200: TestSuite, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => suites.updateSuite(ctxOf(request), request.params.id, request.body),
  );

  app.delete(
    '/test-suites/:id',
    {
      schema: {
        tags,
        summary: 'Delete a test suite and its runs',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      await suites.deleteSuite(ctxOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/test-suites/:id/runs',
    {
      schema: {
        tags,
        summary:
          'Run the suite against a published version (?version=n) or the agent as it is, as text or through the voice pipeline (?voice=true); answers 202 with the run, poll GET /test-suite-runs/{id}',
        params: IdParams,
        querystring: RunQuery,
        response: { 202: TestSuiteRun, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => reply.code(202).send(await suites.startRun(ctxOf(request), request.params.id, request.query)),
  );

  app.get(
    '/test-suites/:id/runs',
    {
      schema: {
        tags,
        summary: "The suite's runs, newest first, each with its counts and pass rate",
        params: IdParams,
        querystring: PageQuery,
        response: { 200: PageOf(TestSuiteRun), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await suites.listRuns(ctxOf(request), request.params.id, page);
      return pageOf(data, total, page);
    },
  );

  app.get(
    '/test-suites/:id/pass-rates',
    {
      schema: {
        tags,
        summary: "Pass rates per version of the agent: each version's finished runs, its pass rate over them and its latest run",
        params: IdParams,
        response: { 200: PassRates, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => suites.passRates(ctxOf(request), request.params.id),
  );

  app.get(
    '/test-suite-runs/:id',
    {
      schema: {
        tags,
        summary: "A run of a test suite: its status, counts, and each scenario's result (verdicts with why, transcript, usage and cost)",
        params: IdParams,
        response: { 200: TestSuiteRunDetail, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => suites.getRun(ctxOf(request), request.params.id),
  );

  app.get(
    '/scorecard',
    {
      schema: {
        tags: ['scorecards'],
        summary: 'The checks every ended call is held to (empty until set)',
        response: { 200: Scorecard, ...errorResponses(401, 403) },
      },
    },
    async (request) => scorecards.getScorecard(ctxOf(request)),
  );

  app.put(
    '/scorecard',
    {
      schema: {
        tags: ['scorecards'],
        summary: 'Set the checks every call that ends from now on is held to: assertions as test suites take them',
        body: PutScorecardBody,
        response: { 200: Scorecard, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => scorecards.putScorecard(ctxOf(request), request.body),
  );

  app.get(
    '/call-scorecards',
    {
      schema: {
        tags: ['scorecards'],
        summary: "Ended calls' scorecards, newest first; ?passed=false for the calls that failed a check",
        querystring: CallScorecardsQuery,
        response: { 200: PageOf(CallScorecard), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await scorecards.listCallScorecards(ctxOf(request), request.query, page);
      return pageOf(data, total, page);
    },
  );
};
