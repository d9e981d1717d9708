/**
 * An agent's language model: the tenant's own model server (its `llm` integration) first, then the
 * service's (LLM_API_URL), or none. The conversation converses with it and analytics reads the
 * finished call with it, so both reach the same server, with the same key, for the same tenant.
 */
import type { Deps, TenantCtx } from '../../platform/context.ts';
import { publicOnlyFetch } from '../../platform/safe-fetch.ts';
import { llmProvider, realtimeProvider, type ProviderWith } from '../../providers/registry.ts';
import type { ChatModel, RealtimeConversation, RealtimeEvent, RealtimeSetup } from '../../providers/types.ts';
import type { Agent, StoredRealtime } from './schemas.ts';
import { serverFor } from './speech.ts';

export interface LanguageModel {
  chat: ChatModel;
  /** The model's name, as asked of the server and as priced. */
  name: string;
  /** The registry's name of the provider serving it (`OPENAI_COMPATIBLE`). */
  provider: string;
}

// One SDK client (and connection pool) per model server and key, not one per call or message:
// building them is waste, and each would hold its own sockets. Bounded: tenants' servers come and go.
const chatModels = new Map<string, ChatModel>();
const MAX_CHAT_MODELS = 200;

function chatModelOf(
  provider: ProviderWith<'llm'>,
  endpoint: { baseUrl: string; apiKey?: string; timeoutMs: number },
  publicOnly: boolean,
) {
  const key = JSON.stringify([provider.name, endpoint.baseUrl, endpoint.apiKey ?? null, endpoint.timeoutMs, publicOnly]);
  let chat = chatModels.get(key);
  if (!chat) {
    chat = provider.llm.connect({ ...endpoint, ...(publicOnly ? { fetch: publicOnlyFetch({ allowPrivate: false }) } : {}) });
    if (chatModels.size >= MAX_CHAT_MODELS) chatModels.delete(chatModels.keys().next().value!);
    chatModels.set(key, chat);
  }
  return chat;
}

/**
 * The agent's model, or null when there is no model server. The tenant's own server is reached only
 * at public addresses (unless ALLOW_PRIVATE_URLS); the service's, which the operator configured, is
 * trusted as it is.
 */
export async function languageModelOf(
  deps: Pick<Deps, 'config'>,
  ctx: TenantCtx,
  agent: Pick<Agent, 'llm'>,
): Promise<LanguageModel | null> {
  const { llm } = deps.config;
  const provider = llmProvider(agent.llm?.provider ?? 'OPENAI_COMPATIBLE');
  const server = await serverFor({ ...ctx, config: deps.config }, provider, llm);
  if (!server?.baseUrl) return null;
  return {
    chat: chatModelOf(provider, { baseUrl: server.baseUrl, apiKey: server.apiKey, timeoutMs: llm.timeoutMs }, server.publicOnly),
    name: agent.llm?.model ?? llm.model,
    provider: provider.name,
  };
}

/** Speech-to-speech runs on the OpenAI-compatible connection, as the agent's language model does. */
const REALTIME_PROVIDER = 'OPENAI_COMPATIBLE';

/** Where the tenant's speech-to-speech model is reached: its OpenAI-compatible connection, else the service's LLM_API_URL. */
export async function realtimeServerOf(ctx: TenantCtx) {
  const server = await serverFor(ctx, realtimeProvider(REALTIME_PROVIDER), ctx.config.llm);
  return server?.baseUrl ? { ...server, baseUrl: server.baseUrl } : undefined;
}

/** An agent's speech-to-speech model, ready to open a call's conversation. */
export interface RealtimeModel extends StoredRealtime {
  /** The registry's name of the provider serving it (`OPENAI_COMPATIBLE`). */
  provider: string;
  connect(
    setup: Omit<RealtimeSetup, 'model' | 'voice' | 'turnDetection'>,
    listener: (event: RealtimeEvent) => void,
  ): Promise<RealtimeConversation>;
}

/** The agent's speech-to-speech model; null when it has none, or no server to reach any more. */
export async function realtimeModelOf(ctx: TenantCtx, agent: Pick<Agent, 'realtime'>): Promise<RealtimeModel | null> {
  if (!agent.realtime) return null;
  const server = await realtimeServerOf(ctx);
  if (!server) return null;
  const provider = realtimeProvider(REALTIME_PROVIDER);
  const { model, voice, turnDetection } = agent.realtime;
  const endpoint = { baseUrl: server.baseUrl, apiKey: server.apiKey, timeoutMs: ctx.config.llm.timeoutMs, publicOnly: server.publicOnly };
  return {
    ...agent.realtime,
    provider: provider.name,
    connect: (setup, listener) =>
      provider.realtime.connect(
        endpoint,
        { ...setup, model, voice, turnDetection: turnDetection === 'server' ? 'server' : 'client' },
        listener,
      ),
  };
}
