import type { Provider } from '../types.ts';
import { createChatModel } from './chat-model.ts';

/**
 * Every server that speaks OpenAI's Chat Completions (OpenAI, Azure OpenAI, Groq, Together,
 * Mistral, vLLM, Ollama, LM Studio, llama.cpp's server, LiteLLM): one adapter, through the vendor's SDK.
 */
export const openaiCompatible: Provider = {
  name: 'OPENAI_COMPATIBLE',
  title: 'OpenAI-compatible',
  llm: { connect: createChatModel },
};
