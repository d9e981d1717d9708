/**
 * A caller played by a model: a persona (who they are, what they want) answering an agent, for a
 * test suite's scenario or a rehearsed contact. The persona runs on the agent's own model; its
 * tokens are counted apart (`Tokens`) and billed as the model's.
 */
import type { ChatMessage } from '../../providers/types.ts';
import type * as calls from '../calls/service.ts';
import type { ConversationModel } from './engine.ts';

export interface Persona {
  description: string;
  goal: string;
}

export interface Tokens {
  inputTokens: number;
  outputTokens: number;
}

/** A persona's turns when none are set. */
export const PERSONA_TURNS = 10;
/** What the persona says when its goal is reached or the conversation is over. */
const END_MARK = '[END]';

export const addTokens = (extra: Tokens, usage: Tokens | null | undefined) => {
  extra.inputTokens += usage?.inputTokens ?? 0;
  extra.outputTokens += usage?.outputTokens ?? 0;
};

/** The conversation's usage with the tokens spent beside it (a persona's, a judge's): they run on the agent's model, and are billed as its. */
export function withExtraTokens(usage: calls.CallUsage, extra: Tokens, model: ConversationModel | null): calls.CallUsage {
  if (!model || extra.inputTokens + extra.outputTokens === 0) return usage;
  return {
    ...usage,
    llmInputTokens: usage.llmInputTokens + extra.inputTokens,
    llmOutputTokens: usage.llmOutputTokens + extra.outputTokens,
    llmTokens: usage.llmTokens + extra.inputTokens + extra.outputTokens,
    llmModel: usage.llmModel ?? model.name,
    llmProvider: usage.llmProvider ?? model.provider,
  };
}

/** The persona's next words, the conversation so far seen from the caller's side; null once it says it is done. */
export async function personaLine(
  model: ConversationModel,
  persona: Persona,
  transcript: calls.TranscriptTurn[],
  extra: Tokens,
): Promise<string | null> {
  const messages: ChatMessage[] = [
    {
      role: 'system',
      content: [
        'You are role-playing the person who answers a phone call from an agent, to test that agent.',
        `Who you are: ${persona.description}`,
        `What you want from the call: ${persona.goal}`,
        'Speak only as that person, in one or two short spoken sentences, without stage directions.',
        `Once your goal is reached, or the call is clearly over, answer exactly ${END_MARK}.`,
      ].join('\n'),
    },
    ...transcript.flatMap((turn): ChatMessage[] =>
      turn.role === 'agent'
        ? [{ role: 'user', content: turn.text }]
        : turn.role === 'contact'
          ? [{ role: 'assistant', content: turn.text }]
          : [],
    ),
  ];
  let text = '';
  for await (const event of model.chat.stream({
    model: model.name,
    messages,
    temperature: model.temperature,
    maxTokens: model.maxTokens,
  })) {
    if (event.type === 'text') text += event.delta;
    else if (event.type === 'done') addTokens(extra, event.usage);
  }
  const said = text.trim();
  if (!said || said.includes(END_MARK)) return null;
  return said;
}
