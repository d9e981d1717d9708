// Issue 17: the phone line's audio. A provider opens a WebSocket to us for each answered call;
// the dashboard opens one for a test call from the browser.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import { telephonyProvider, VOICE_PROVIDER_NAMES } from '../../providers/registry.ts';
import { acceptBrowserCall } from './browser-call.ts';
import { BrowserCallQuery } from './schemas.ts';
import { acceptMediaStream } from './service.ts';

export const mediaRoutes: ModulePlugin = async (app, { deps }) => {
  for (const provider of VOICE_PROVIDER_NAMES.map(telephonyProvider)) {
    const wire = provider.telephony.mediaStream;
    if (!wire) continue;
    app.get(
      `/telephony/${provider.name.toLowerCase()}/media`,
      {
        websocket: true,
        config: { auth: 'public', rateLimit: false },
        schema: { hide: true },
        // Unsigned upgrades are refused before the socket opens; the signature itself is checked
        // with the tenant's credentials once the stream's start message names the call.
        preValidation: async (request) => {
          if (typeof request.headers[wire.signatureHeader] !== 'string')
            throw appError('INVALID_SIGNATURE', { header: wire.signatureHeader });
        },
      },
      (socket, request) => {
        const stream = acceptMediaStream(deps, provider.name, { headers: request.headers }, socket);
        socket.on('message', (data, isBinary) => {
          if (!isBinary) stream.message(data.toString());
        });
        socket.on('close', () => stream.closed());
      },
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
