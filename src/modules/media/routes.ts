// Issue 17: the phone line's audio. A provider opens a WebSocket to us for each answered call.
import type { ModulePlugin } from '../../gateway.ts';
import { appError } from '../../platform/errors.ts';
import { telephonyProvider, VOICE_PROVIDER_NAMES } from '../../providers/registry.ts';
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
};
