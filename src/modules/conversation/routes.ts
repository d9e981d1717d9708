// Issue 16: "Talk to this agent" (the dashboard's test chat), the same engine as a call without one.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ModulePlugin } from '../../gateway.ts';
import { principalOf } from '../../platform/auth.ts';
import { tenantCtx } from '../../platform/context.ts';
import { errorResponses, IdParams } from '../../platform/schemas.ts';
import { CreateTestChatBody, TestChat, TestChatMessageBody } from './schemas.ts';
import * as conversation from './service.ts';

export const conversationRoutes: ModulePlugin = async (plugin, { deps }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const ctxOf = (request: Parameters<typeof principalOf>[0]) => tenantCtx(deps, principalOf(request).tenantId);
  const tags = ['test-chats'];

  app.post(
    '/test-chats',
    {
      schema: {
        tags,
        summary: "Start a chat with an agent: the agent's opening, through the engine that runs its calls",
        body: CreateTestChatBody,
        response: { 201: TestChat, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => reply.code(201).send(await conversation.startTestChat(deps, ctxOf(request), request.body)),
  );

  app.get(
    '/test-chats/:id',
    { schema: { tags, summary: 'Get a test chat', params: IdParams, response: { 200: TestChat, ...errorResponses(400, 401, 403, 404) } } },
    async (request) => conversation.getTestChat(ctxOf(request), request.params.id),
  );

  app.post(
    '/test-chats/:id/messages',
    {
      schema: {
        tags,
        summary: "Say something to the agent; answers the chat with the agent's reply (and any tools it ran)",
        params: IdParams,
        body: TestChatMessageBody,
        response: { 200: TestChat, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => conversation.sendTestChatMessage(deps, ctxOf(request), request.params.id, request.body.text),
  );
};
