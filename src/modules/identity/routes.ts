// Seed §2.1 (API keys), §2.10 (profile), §5 (authentication); contract §2.
import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx } from '../../platform/context.ts';
import { PageOf, PageQuery, pageOf, toPage } from '../../platform/pagination.ts';
import { sessionCookies } from '../../platform/session-cookie.ts';
import { errorResponses, IdParams } from '../../platform/schemas.ts';
import {
  ApiKey,
  CreateApiKeyBody,
  CreatedApiKey,
  LoginBody,
  PasswordBody,
  Profile,
  Session,
  SignupBody,
  UpdateApiKeyBody,
  UpdatedApiKey,
} from './schemas.ts';
import * as identity from './service.ts';

/** What identity's routes ask of higher modules, handed down by the composition root (app.ts): identity is the lowest layer. */
export interface IdentityNeeds {
  onboarding: identity.OnboardingSources;
  agentExists: identity.AgentExists;
}

export const identityRoutes =
  (needs: IdentityNeeds): ModulePlugin =>
  (plugin, options) =>
    mountIdentityRoutes(needs, plugin, options);

async function mountIdentityRoutes(needs: IdentityNeeds, plugin: Parameters<ModulePlugin>[0], { deps }: Parameters<ModulePlugin>[1]) {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const publicRoute = { auth: 'public' as const };
  const dashboardOnly = { auth: 'dashboard' as const };
  // A browser signing in also gets the session as an httpOnly cookie (the dashboard keeps no token
  // of its own); the body still carries the token for API clients, as the contract says.
  const cookies = sessionCookies(deps);

  app.post(
    '/auth/signup',
    {
      config: { ...publicRoute, shownOnce: ['accessToken'] },
      schema: {
        tags: ['auth'],
        summary: 'Create a tenant and its owner, and sign in',
        security: [],
        body: SignupBody,
        response: { 201: Session, ...errorResponses(400, 403, 409) },
      },
    },
    async (request, reply) => {
      const session = await identity.signup(deps, request.body);
      cookies.set(reply, session.accessToken);
      return reply.code(201).send(session);
    },
  );

  app.post(
    '/auth/login',
    {
      config: { ...publicRoute, shownOnce: ['accessToken'] },
      schema: {
        tags: ['auth'],
        summary: 'Sign in to the dashboard',
        security: [],
        body: LoginBody,
        response: { 200: Session, ...errorResponses(400, 401, 429) },
      },
    },
    async (request, reply) => {
      const session = await identity.login(deps, request.body, request.ip);
      cookies.set(reply, session.accessToken);
      return session;
    },
  );

  app.post(
    '/auth/logout',
    {
      config: dashboardOnly,
      schema: {
        tags: ['auth'],
        summary: 'End the dashboard session (its token stops working) and clear its cookies',
        response: { 204: Type.Null(), ...errorResponses(401, 403) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      if (principal.kind !== 'session') throw new Error('dashboard route reached without a session');
      await identity.endSession(deps, principal);
      cookies.clear(reply);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/auth/password',
    {
      config: dashboardOnly,
      schema: {
        tags: ['auth'],
        summary: 'Change the signed-in user’s password',
        body: PasswordBody,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      if (principal.kind !== 'session') throw new Error('dashboard route reached without a session');
      await identity.changePassword(tenantCtx(deps, principal.tenantId), principal.userId, request.body, principal.sessionId);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api-keys',
    {
      config: { ...dashboardOnly, shownOnce: ['key', 'webhookSecret'] },
      schema: {
        tags: ['api-keys'],
        summary: 'Create an API key (shown once)',
        body: CreateApiKeyBody,
        response: { 201: CreatedApiKey, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const createdBy = principal.kind === 'session' ? principal.userId : null;
      return reply
        .code(201)
        .send(await identity.createApiKey(deps, principal.tenantId, request.body, { createdBy, agentExists: needs.agentExists }));
    },
  );

  app.get(
    '/api-keys',
    {
      config: dashboardOnly,
      schema: {
        tags: ['api-keys'],
        summary: 'List the tenant’s API keys',
        querystring: PageQuery,
        response: { 200: PageOf(ApiKey), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await identity.listApiKeys(tenantCtx(deps, principalOf(request).tenantId), page);
      return pageOf(data, total, page);
    },
  );

  app.patch(
    '/api-keys/:id',
    {
      config: { ...dashboardOnly, shownOnce: ['webhookSecret'] },
      schema: {
        tags: ['api-keys'],
        summary: 'Rename a key or change its webhook URL',
        params: IdParams,
        body: UpdateApiKeyBody,
        response: { 200: UpdatedApiKey, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => identity.updateApiKey(tenantCtx(deps, principalOf(request).tenantId), request.params.id, request.body),
  );

  app.delete(
    '/api-keys/:id',
    {
      config: dashboardOnly,
      schema: {
        tags: ['api-keys'],
        summary: 'Revoke an API key, at once',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(401, 403, 404) },
      },
    },
    async (request, reply) => {
      await identity.revokeApiKey(deps, principalOf(request).tenantId, request.params.id);
      return reply.code(204).send(null);
    },
  );

  const readProfile = identity.profileReader(deps.db, needs.onboarding);
  app.get(
    '/profile',
    {
      schema: {
        tags: ['profile'],
        summary: 'The tenant profile; also a key check',
        response: { 200: Profile, ...errorResponses(401, 403) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const userId = principal.kind === 'session' ? principal.userId : null;
      return readProfile(principal.tenantId, userId);
    },
  );
}
