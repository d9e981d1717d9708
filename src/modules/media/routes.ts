// Issue 17: the phone line. A provider opens a WebSocket to us for each answered call: its audio
// (a media stream) or, when the provider listens and speaks itself, its text (a conversation relay);
// the dashboard opens one for a test call from the browser.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx, type Deps } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import { providerWebhookLimit } from '../../platform/webhook-limit.ts';
import { telephonyProvider, VOICE_PROVIDER_NAMES } from '../../providers/registry.ts';
import { acceptBrowserCall } from './browser-call.ts';
import { acceptConversationRelay } from './conversation-relay.ts';
import { BrowserCallQuery } from './schemas.ts';
import { acceptMediaStream, type MediaSocket, type MediaStreamHandler, type StreamUpgrade } from './service.ts';

type Accept = (upgrade: StreamUpgrade, socket: MediaSocket) => MediaStreamHandler;

/** A provider's socket at `path`: unsigned upgrades are refused before it opens; its text messages go to the handler. */
function providerSocket(app: FastifyInstance, deps: Deps, path: string, signatureHeader: string, accept: Accept): void {
  app.get(
    path,
    {
      websocket: true,
      config: { auth: 'public', rateLimit: providerWebhookLimit(deps.config) },
      schema: { hide: true },
      // The signature itself is checked with the tenant's credentials once the first message names the call.
      preValidation: async (request) => {
        if (typeof request.headers[signatureHeader] !== 'string') throw appError('INVALID_SIGNATURE', { header: signatureHeader });
      },
    },
    (socket, request) => {
      const handler = accept({ headers: request.headers }, socket);
      socket.on('message', (data, isBinary) => {
        if (!isBinary) handler.message(data.toString());
      });
      socket.on('close', () => handler.closed());
    },
  );
}

export const mediaRoutes: ModulePlugin = async (app, { deps }) => {
  for (const provider of VOICE_PROVIDER_NAMES.map(telephonyProvider)) {
    const slug = provider.name.toLowerCase();
    const { mediaStream, conversationRelay } = provider.telephony;
    if (mediaStream)
      providerSocket(app, deps, `/telephony/${slug}/media`, mediaStream.signatureHeader, (upgrade, socket) =>
        acceptMediaStream(deps, provider.name, upgrade, socket),
      );
    if (conversationRelay)
      providerSocket(app, deps, `/telephony/${slug}/relay`, conversationRelay.signatureHeader, (upgrade, socket) =>
        acceptConversationRelay(deps, provider.name, upgrade, socket),
      );
  }

  // A dashboard session only (its token offered as the subprotocol `bearer.<token>`): anyone else is
  // refused with 401/403 before the socket opens, a bad query with 400.
  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .get(
      '/test-chats/voice',
      { websocket: true, config: { auth: 'dashboard' }, schema: { querystring: BrowserCallQuery } },
      (socket, request) => {
        const ctx = tenantCtx(deps, principalOf(request).tenantId);
        const call = acceptBrowserCall(deps, ctx, request.query, socket, request.id);
        socket.on('message', (data: Buffer, isBinary) => call.message(data, isBinary));
        socket.on('close', () => call.closed());
      },
    );
};
