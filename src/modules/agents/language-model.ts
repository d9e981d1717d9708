/**
 * An agent's language model: the tenant's own model server (its `llm` integration) first, then the
 * service's (LLM_API_URL), or none. The conversation converses with it and analytics reads the
 * finished call with it, so both reach the same server, with the same key, for the same tenant.
 */
import type { Deps, TenantCtx } from '../../platform/context.ts';
import { publicOnlyFetch } from '../../platform/safe-fetch.ts';
import { llmProvider, type ProviderWith } from '../../providers/registry.ts';
import type { ChatModel } from '../../providers/types.ts';
import type { Agent } from './schemas.ts';
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
