// Call logs, their recordings, hang-up, simulated inbound calls, and the providers' call status, answering-machine and incoming-call callbacks.
import { Type } from '@sinclair/typebox';
import { Readable } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ProviderWebhook } from '../../providers/types.ts';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { keepRawBodies } from '../../platform/form.ts';
import { tenantCtx } from '../../platform/context.ts';
import { PageOf, pageOf, toPage } from '../../platform/pagination.ts';
import { EmptyBody, errorResponses, IdParams } from '../../platform/schemas.ts';
import { providerWebhookLimit } from '../../platform/webhook-limit.ts';
import { telephonyProvider, VOICE_PROVIDER_NAMES } from '../../providers/registry.ts';
import * as calls from './service.ts';
import { Call, CallQuery, InboundCallBody } from './schemas.ts';

export const callRoutes: ModulePlugin = async (plugin, { deps }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const ctxOf = (request: Parameters<typeof principalOf>[0]) => tenantCtx(deps, principalOf(request).tenantId);
  const tags = ['calls'];

  app.get(
    '/call-logs',
    {
      schema: {
        tags,
        summary: 'List calls, newest first',
        querystring: CallQuery,
        response: { 200: PageOf(Call), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = toPage(request.query);
      const { data, total } = await calls.listCalls(ctxOf(request), request.query, page);
      return pageOf(data, total, page);
    },
  );

  app.get(
    '/call-logs/:id',
    {
      schema: {
        tags,
        summary: 'Get one call with transcript, usage and cost',
        params: IdParams,
        response: { 200: Call, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => calls.getCall(ctxOf(request), request.params.id),
  );

  app.get(
    '/call-logs/:id/live',
    {
      schema: {
        tags,
        summary:
          "Follow a call as it happens (server-sent events): 'turn' for each transcript turn, 'status' on changes, 'ended' with the call",
        params: IdParams,
        response: { 200: Type.String({ description: 'text/event-stream' }), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const ctx = ctxOf(request);
      await calls.getCall(ctx, request.params.id); // 404 before the stream starts
      const viewer = new AbortController();
      request.raw.once('close', () => viewer.abort());
      reply.hijack();
      reply.raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      try {
        for await (const event of calls.followCall(ctx, request.params.id, viewer.signal)) {
          const { type, ...data } = event;
          reply.raw.write(`event: ${type}\ndata: ${JSON.stringify('turn' in data ? data.turn : 'call' in data ? data.call : data)}\n\n`);
        }
      } catch (error) {
        reply.raw.write(`event: error\ndata: ${JSON.stringify({ message: (error as Error).message })}\n\n`);
      }
      reply.raw.end();
    },
  );

  app.get(
    '/call-logs/:id/recording',
    {
      schema: {
        tags,
        summary: "The call's recording: a 16-bit PCM WAV file, two channels, the caller left and the agent right",
        params: IdParams,
        response: {
          200: {
            description: 'audio/wav',
            content: { 'audio/wav': { schema: Type.Unsafe<Readable>({ type: 'string', format: 'binary' }) } },
          },
          ...errorResponses(400, 401, 403, 404),
        },
      },
    },
    async (request, reply) => {
      const { bytes, wav } = await calls.recordingWav(ctxOf(request), request.params.id);
      return reply
        .type('audio/wav')
        .header('content-length', bytes)
        .header('content-disposition', `inline; filename="call-${request.params.id}.wav"`)
        .send(Readable.from(wav));
    },
  );

  app.post(
    '/call-logs/:id/hangup',
    {
      schema: {
        tags,
        summary: 'Hang up one live call',
        params: IdParams,
        body: EmptyBody,
        response: { 202: Type.Null({ description: 'Accepted, no body.' }), ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply: FastifyReply) => {
      await calls.hangupCall(ctxOf(request), (request.params as { id: string }).id);
      return reply.code(202).send();
    },
  );

  app.post(
    '/simulator/inbound-calls',
    {
      schema: {
        tags,
        summary: 'Place a simulated incoming call to a SIMULATOR number',
        body: InboundCallBody,
        response: { 201: Call, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await calls.simulateInboundCall(ctxOf(request), request.body)),
  );

  const webhookOf = (request: FastifyRequest): ProviderWebhook => ({
    url: `${deps.config.publicUrl}${request.url}`,
    headers: request.headers,
    rawBody: typeof request.body === 'string' ? request.body : '',
    receivedAt: deps.clock.now(),
  });

  // Providers' status callbacks: the only routes without a key, each verified by its provider's signature
  // over the raw body, so the body is kept as received.
  await app.register(async (callbacks) => {
    keepRawBodies(callbacks);
    for (const provider of VOICE_PROVIDER_NAMES.map(telephonyProvider).filter((provider) => provider.telephony.callbacks)) {
      const slug = provider.name.toLowerCase();
      callbacks.post(
        `/telephony/${slug}/status`,
        {
          config: { auth: 'public', rateLimit: providerWebhookLimit(deps.config) },
          schema: {
            tags,
            summary: `${provider.title} call status callback (signed by ${provider.title})`,
            security: [],
            response: { 204: Type.Null(), ...errorResponses(400, 403, 415) },
          },
        },
        async (request, reply: FastifyReply) => {
          await calls.receiveStatusCallback(deps, slug, webhookOf(request));
          return reply.code(204).send();
        },
      );
      if (provider.telephony.callbacks?.incoming) {
        callbacks.post(
          `/telephony/${slug}/incoming`,
          {
            config: { auth: 'public', rateLimit: providerWebhookLimit(deps.config) },
            schema: {
              tags,
              summary: `${provider.title} incoming call: the number's agent answers it through the media stream (signed by ${provider.title})`,
              security: [],
              response: {
                200: Type.String({ description: `${provider.title}'s call instructions (TwiML for Twilio).` }),
                ...errorResponses(400, 403, 415),
              },
            },
          },
          async (request, reply: FastifyReply) => {
            const answer = await calls.answerIncomingCall(deps, slug, webhookOf(request));
            return reply.code(200).type(answer.contentType).send(answer.body);
          },
        );
      }
      if (provider.telephony.callbacks?.whisper) {
        callbacks.post(
          `/telephony/${slug}/transfer-whisper`,
          {
            config: { auth: 'public', rateLimit: providerWebhookLimit(deps.config) },
            schema: {
              tags,
              summary: `${provider.title} warm transfer: what the person taking a transferred call hears first (signed by ${provider.title})`,
              security: [],
              querystring: Type.Object({
                call: Type.String({ minLength: 1, maxLength: 64, description: `The transferred call, by ${provider.title}'s id.` }),
              }),
              response: {
                200: Type.String({ description: `${provider.title}'s call instructions (TwiML for Twilio): the agent's summary, said.` }),
                ...errorResponses(400, 403, 415),
              },
            },
          },
          async (request, reply: FastifyReply) => {
            const { call } = request.query as { call: string };
            const answer = await calls.transferWhisper(deps, slug, webhookOf(request), call);
            return reply.code(200).type(answer.contentType).send(answer.body);
          },
        );
      }
      if (!provider.telephony.callbacks?.readAnsweredBy) continue;
      callbacks.post(
        `/telephony/${slug}/answered-by`,
        {
          config: { auth: 'public', rateLimit: providerWebhookLimit(deps.config) },
          schema: {
            tags,
            summary: `${provider.title} answering-machine detection callback: who answered a call (signed by ${provider.title})`,
            security: [],
            response: { 204: Type.Null(), ...errorResponses(400, 403, 415) },
          },
        },
        async (request, reply: FastifyReply) => {
          await calls.receiveAnsweredByCallback(deps, slug, webhookOf(request));
          return reply.code(204).send();
        },
      );
    }
  });
};
