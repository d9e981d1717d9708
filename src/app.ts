import cookie from '@fastify/cookie';
import websocket from '@fastify/websocket';
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { API_BASE, gatewayNotFound, isDashboardOnlyPath, mountModules, type ModuleName, type ModulePlugin } from './gateway.ts';
import { countingInvalidKeys } from './platform/auth-failures.ts';
import { authHook, chosenWebSocketProtocol, type Authenticator } from './platform/auth.ts';
import type { Deps } from './platform/context.ts';
import { appError, clientErrorHandler, MAX_PARAM_LENGTH, sendError } from './platform/errors.ts';
import { healthRoutes } from './platform/health.ts';
import { parseJsonBody, refuseUnstorableInput } from './platform/input.ts';
import { registerIdempotency } from './platform/idempotency.ts';
import { OneLinePerRequest } from './platform/request-log.ts';
import { DOCS_POLICY, pageHeaders } from './platform/page-security.ts';
import { FAVICON_SVG, LOGO_SVG } from './platform/brand.ts';
import { sessionCookies } from './platform/session-cookie.ts';
import { validatorCompiler } from './platform/validation.ts';
import { agentRoutes } from './modules/agents/routes.ts';
import { callRoutes } from './modules/calls/routes.ts';
import { campaignRoutes } from './modules/campaigns/routes.ts';
import { contactRoutes } from './modules/contacts/routes.ts';
import { complianceRoutes } from './modules/compliance/routes.ts';
import { identityRoutes } from './modules/identity/routes.ts';
import { integrationRoutes } from './modules/integrations/routes.ts';
import { messagingRoutes } from './modules/messaging/routes.ts';
import { eventRoutes } from './modules/events/routes.ts';
import { analyticsRoutes } from './modules/analytics/routes.ts';
import { knowledgeRoutes } from './modules/knowledge/routes.ts';
import * as agents from './modules/agents/service.ts';
import * as calls from './modules/calls/service.ts';
import * as campaigns from './modules/campaigns/service.ts';
import * as identity from './modules/identity/service.ts';
import * as integrations from './modules/integrations/service.ts';
import { registerDashboard } from './dashboard/routes.ts';
import { SERVICE_VERSION } from './version.ts';
import { conversationRoutes } from './modules/conversation/routes.ts';
import { mediaRoutes } from './modules/media/routes.ts';
import { suiteRoutes } from './modules/suites/routes.ts';
import * as suites from './modules/suites/service.ts';
import { rehearsalRoutes } from './modules/rehearsals/routes.ts';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const BODY_LIMIT = 1_048_576;

// The composition root: where a lower module needs an answer only a higher one has (is this
// list used by a campaign?), the function is handed down here, so no module imports upwards.
const modules: Partial<Record<ModuleName, ModulePlugin>> = {
  identity: identityRoutes({
    // Contract §8: derived from real state, asked of the modules that own it.
    onboarding: {
      hasIntegration: (tenant) => `(${integrations.hasIntegrationCondition(tenant)} OR ${agents.hasVoiceNumberCondition(tenant)})`,
      hasFlow: agents.hasAgentCondition,
      hasTestedCall: calls.hasFinishedCallCondition,
    },
    agentExists: agents.agentExists,
  }),
  contacts: contactRoutes(campaigns.listInUse),
  compliance: complianceRoutes,
  agents: agentRoutes({
    agentInUse: campaigns.agentInUse,
    voiceNumberInUse: campaigns.voiceNumberInUse,
    // Publishing a version runs the agent's test suites against it (queued in the publishing transaction).
    onPublished: suites.runSuitesOnPublish,
  }),
  // A campaign's rehearsals are under /campaigns but need the modules above campaigns: mounted beside its routes here.
  campaigns: async (scope, options) => {
    await campaignRoutes(scope, options);
    await rehearsalRoutes(scope, options);
  },
  calls: callRoutes,
  integrations: integrationRoutes,
  messaging: messagingRoutes,
  events: eventRoutes,
  analytics: analyticsRoutes,
  knowledge: knowledgeRoutes(agents.agentsSearchingBase),
  conversation: conversationRoutes,
  media: mediaRoutes,
  suites: suiteRoutes,
};

/** The HTTP API over `deps`; used by main and by the tests alike. */
/** A hop count believes that many proxies nearest the service, whatever their addresses. */
const trustProxyOf = (trust: Deps['config']['trustProxy']) =>
  typeof trust === 'number' ? (_address: string, hop: number) => hop < trust : trust;

export async function buildApp(deps: Deps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // The router's own refusals (a broken %-escape, an overlong path parameter) and Node's (headers
    // over the limit, a broken request line) answer in the one error shape too.
    frameworkErrors: (error, request, reply) => sendError(error, request, reply),
    clientErrorHandler,
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    trustProxy: trustProxyOf(deps.config.trustProxy),
    logController: new OneLinePerRequest(),
  });

  app.setValidatorCompiler(validatorCompiler);
  app.setErrorHandler((error, request, reply) => sendError(error, request, reply));
  app.setNotFoundHandler(gatewayNotFound);

  // An empty body is no body (POST /campaigns/{id}/resume with no payload), not a JSON error.
  // JSON only: any other body type is a 415 (multipart is added by the routes that take uploads).
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(String(body)));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.addHook('preValidation', refuseUnstorableInput);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  // Media streams (a provider's WebSocket per answered call, a browser's test call): messages are
  // small frames. Registered before authentication, so an upgrade refused there still has its
  // socket released once the refusal is sent.
  await app.register(websocket, { options: { maxPayload: 64 * 1024, handleProtocols: chosenWebSocketProtocol } });

  // Parses the Cookie header before authentication reads the dashboard's session cookie.
  await app.register(cookie, { hook: 'onRequest' });
  const authenticator: Authenticator = {
    apiKey: countingInvalidKeys((token) => identity.authenticateApiKey(deps, token), deps.db, deps.clock, {
      max: deps.config.authFailures.invalidKeysPerAddress,
      windowSeconds: deps.config.authFailures.windowSeconds,
    }),
    session: (token) => identity.verifySession(deps, token),
  };
  const cookies = sessionCookies(deps);
  app.addHook('onRequest', authHook(authenticator, cookies, isDashboardOnlyPath));

  await app.register(rateLimit, {
    global: true,
    hook: 'preValidation',
    max: deps.config.rateLimitPerMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => {
      const principal = request.principal;
      if (principal?.kind === 'apiKey') return `key:${principal.keyId}`;
      if (principal?.kind === 'session') return `user:${principal.userId}`;
      return `ip:${request.ip}`;
    },
    errorResponseBuilder: (_request, context) => appError('RATE_LIMITED', { max: context.max, after: context.after }),
  });

  registerIdempotency(app, deps.db, deps.clock, deps.config.idempotencyTtlHours);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'callforge API',
        version: SERVICE_VERSION,
        description:
          'Voice-agent campaigns, contacts, post-call messaging, knowledge bases and usage. Authenticate with `Authorization: Bearer <API key>`.',
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          apiKey: {
            type: 'http',
            scheme: 'bearer',
            description: 'Paste only the key (aok_…) or a dashboard session token; the word Bearer is added for you.',
          },
          sessionCookie: {
            type: 'apiKey',
            in: 'cookie',
            name: cookies.sessionName,
            description: `The dashboard's sign-in: POST /api/v1/auth/login sets this httpOnly cookie and the readable \`${cookies.csrfName}\` cookie. A request that changes something (POST, PUT, PATCH, DELETE) must echo the latter in the \`X-CSRF-Token\` header (403 CSRF_TOKEN_INVALID otherwise). API clients send a Bearer key instead.`,
          },
        },
      },
      security: [{ apiKey: [] }, { sessionCookie: [] }],
    },
  });
  // The interactive docs are open to all; the key is typed inside them.
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) route.config = { ...(route.config as object), auth: 'public' };
  });
  // The key typed into the docs is not persisted: kept in localStorage, any script of this origin
  // (the dashboard's included) could read it. The pages get the same kind of policy as the dashboard.
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { persistAuthorization: false, validatorUrl: null },
    // callforge's name and mark, not Swagger's: the page title, the top bar and the tab's icon.
    logo: { type: 'image/svg+xml', content: Buffer.from(LOGO_SVG), href: '/docs/', target: '_self' },
    theme: {
      title: 'callforge API docs',
      favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: Buffer.from(FAVICON_SVG) }],
    },
    uiHooks: {
      onRequest: (_request, reply, done) => {
        pageHeaders(reply, DOCS_POLICY);
        done();
      },
    },
    logLevel: 'warn',
  });

  const open = { auth: 'public' as const, rateLimit: false as const };
  healthRoutes(app, deps, open);
  registerDashboard(app, () => ({
    service: 'callforge',
    version: SERVICE_VERSION,
    api: API_BASE,
    dashboard: '/',
    docs: '/docs',
    openapi: `${API_BASE}/openapi.json`,
  }));
  app.get(`${API_BASE}/openapi.json`, { config: open, schema: { hide: true } }, async () => app.swagger());

  await mountModules(app, deps, modules);
  return app;
}
