import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from './platform/context.ts';
import { appError, sendError } from './platform/errors.ts';

export const API_BASE = '/api/v1';

export type ModuleName =
  | 'platform'
  | 'identity'
  | 'contacts'
  | 'compliance'
  | 'agents'
  | 'campaigns'
  | 'calls'
  | 'messaging'
  | 'integrations'
  | 'knowledge'
  | 'analytics'
  | 'events'
  | 'conversation'
  | 'media'
  | 'suites';

/**
 * The gateway's prefix table (contract §10): every first path segment under /api/v1 named by the
 * seed or the contract, and the module that owns it. A module may only add routes under its own
 * prefixes; a path under no prefix here answers "No gateway route for …".
 */
export const PREFIXES: Record<string, ModuleName> = {
  'openapi.json': 'platform',
  auth: 'identity',
  'api-keys': 'identity',
  profile: 'identity',
  'contact-lists': 'contacts',
  dnc: 'compliance',
  compliance: 'compliance',
  consents: 'compliance',
  agents: 'agents',
  'voice-numbers': 'agents',
  voices: 'agents',
  campaigns: 'campaigns',
  'call-logs': 'calls',
  simulator: 'calls',
  telephony: 'calls',
  whatsapp: 'messaging',
  'sms-agent': 'messaging',
  messages: 'messaging',
  integrations: 'integrations',
  'knowledge-bases': 'knowledge',
  analytics: 'analytics',
  'webhook-deliveries': 'events',
  'test-chats': 'conversation',
  'test-suites': 'suites',
  'test-suite-runs': 'suites',
  // Longer prefixes win: a provider's media stream and conversation relay belong to the media module, its callbacks to calls.
  'telephony/twilio/media': 'media',
  'telephony/twilio/relay': 'media',
  'telephony/telnyx/media': 'media',
  // A test chat spoken from the browser: the media module's own transport (a WebSocket).
  'test-chats/voice': 'media',
};

export type ModulePlugin = FastifyPluginAsync<{ deps: Deps }>;

export function ownerOf(path: string): ModuleName | undefined {
  if (!path.startsWith(`${API_BASE}/`)) return undefined;
  const segments = path.slice(API_BASE.length + 1).split('/');
  for (let length = Math.min(segments.length, 3); length > 0; length--) {
    const prefix = segments.slice(0, length).join('/');
    if (Object.hasOwn(PREFIXES, prefix)) return PREFIXES[prefix];
  }
  return undefined;
}

/** Mounts each module's routes under /api/v1, refusing any route outside the module's prefixes. */
export async function mountModules(app: FastifyInstance, deps: Deps, modules: Partial<Record<ModuleName, ModulePlugin>>) {
  for (const [name, plugin] of Object.entries(modules) as [ModuleName, ModulePlugin][]) {
    await app.register(
      async (scope) => {
        scope.addHook('onRoute', (route) => {
          if (ownerOf(route.url) !== name)
            throw new Error(`Module ${name} may not add route ${route.url}: its prefix belongs to ${ownerOf(route.url) ?? 'no module'}`);
        });
        await scope.register(plugin, { deps });
      },
      { prefix: API_BASE },
    );
  }
}

/** Prefixes whose every route is the dashboard's: an API key is refused there, route or not (the auth hook refuses it). */
const DASHBOARD_ONLY = [`${API_BASE}/api-keys`, `${API_BASE}/integrations`];
export const isDashboardOnlyPath = (path: string) => DASHBOARD_ONLY.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));

export function gatewayNotFound(request: FastifyRequest, reply: FastifyReply) {
  const path = request.url.split('?')[0]!;
  const owner = ownerOf(path);
  const error = owner
    ? appError('ROUTE_NOT_FOUND', { service: owner, method: request.method, path })
    : appError('NO_GATEWAY_ROUTE', { method: request.method, path });
  return sendError(error, request, reply);
}
