/**
 * One conversation: the agent's side of a call or a test chat, turn by turn. The contact's words go
 * in (`hear`), the agent's reply comes out as transcript turns, with the tools it ran and the
 * knowledge it used. Two brains behind one shape: a language model with tools, or, when no model is
 * configured, the built-in retrieval agent, which answers from the agent's knowledge bases and says
 * so in every turn it writes (`by: 'retrieval-agent'`). Nothing here knows of calls or HTTP; the
 * transport (a simulated caller, a test chat, later a phone line) feeds it text.
 */
import { performance } from 'node:perf_hooks';
import type { Clock } from '../../platform/clock.ts';
import { ProviderError } from '../../providers/errors.ts';
import type { ChatMessage, ChatModel, ChatTool, ChatToolCall } from '../../providers/types.ts';
import type { EndReason, TranscriptTurn } from '../calls/service.ts';
import type { Passage } from '../knowledge/service.ts';
import { answerFromPassages, isGoodbye, isGreeting, isOptOut, RETRIEVAL_LINES, type SentenceSimilarity } from './retrieval-agent.ts';

export interface ConversationModel {
  chat: ChatModel;
  /** The model's name, as asked of the server and as priced. */
  name: string;
  /** The registry's name of the provider serving it (`OPENAI_COMPATIBLE`). */
  provider: string;
  temperature?: number;
  maxTokens: number;
}

/** What a tool answered; `end` when running it ends the conversation (end_call, transfer_call). */
export interface ToolResult {
  ok: boolean;
  /** What the model reads back: the result, or why the tool refused or failed. */
  content: string;
  sources?: Passage[];
  end?: EndReason;
}

export interface Toolbox {
  definitions: ChatTool[];
  run(call: ChatToolCall): Promise<ToolResult>;
}

export interface SessionSetup {
  agentName: string;
  /** The system prompt with its variables filled. */
  systemPrompt: string;
  /** The opening line with its variables filled; null lets the model open. */
  firstMessage: string | null;
  language: string;
  /** Null: the retrieval agent. */
  model: ConversationModel | null;
  /**
   * The agent's backup model: when the model fails, or says nothing for `stallMs`, before the
   * first words of a reply, the backup answers that reply and every one after it.
   */
  backup?: { model: ConversationModel; stallMs: number } | null;
  toolbox: Toolbox;
  /** The agent's knowledge for a query (the retrieval agent's answers, and the context of each turn). */
  search(query: string): Promise<Passage[]>;
  /** How close in meaning sentences are to a question (the retrieval agent's judgement of an answer). */
  similarityToQuestion: SentenceSimilarity;
  /** Passages are put in the model's context every turn (the agent's `knowledgeInContext`). */
  knowledgeInContext: boolean;
  clock: Clock;
  /** Turn offsets count from here (the answer of the call, the start of the chat). */
  startedAt: Date;
  /** A conversation continued from where it was left (a test chat, one request per message). */
  resume?: SavedSession;
}

/** What a session needs to go on later, in this process or another. */
export interface SavedSession {
  history: ChatMessage[];
  usage: TokenUsage;
  ended: EndReason | null;
}

export interface ReplyListener {
  onText(delta: string, round: number): void;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  /** Of those, the audio a speech-to-speech model heard and spoke (absent: none). */
  inputAudioTokens?: number;
  outputAudioTokens?: number;
  /** Of those, the backup model's, once the conversation failed over to it (absent: it has not). */
  backup?: { model: string; provider: string; inputTokens: number; outputTokens: number };
}

/**
 * A conversation a speech-to-speech model holds itself (its server keeps the context and speaks):
 * the session gives it the agent's instructions and tools, runs the tools, and keeps the transcript
 * and the usage the server reports.
 */
export interface SpokenSession {
  /** The system prompt, its variables filled, as the model reads it. */
  readonly instructions: string;
  /** The opening line with its variables filled; null lets the model open. */
  readonly firstMessage: string | null;
  readonly tools: ChatTool[];
  /** A turn the server transcribed (the caller's) or spoke (the agent's, `by` the model), `fromMs` after the start. */
  said(role: 'contact' | 'agent', text: string, fromMs: number, extra?: Partial<TranscriptTurn>): TranscriptTurn;
  /** Runs a tool the model called: its transcript turn, and what the model reads back. */
  runTool(call: ChatToolCall): Promise<{ turn: TranscriptTurn; content: string }>;
  /** Tokens a response used, as the server reported them. */
  used(tokens: { inputText: number; inputAudio: number; outputText: number; outputAudio: number }): void;
  /** Milliseconds since the conversation began. */
  offset(): number;
}

export interface Session {
  /** The agent's opening: the first message, or the model's own when there is none. */
  open(): Promise<TranscriptTurn[]>;
  /**
   * The contact said `text`: their turn and the agent's reply (with any tool turns). `onText` hears
   * the reply as the model writes it, so speech can start before the reply is complete; `round`
   * counts the model's answers within the reply (a tool call starts the next).
   */
  hear(text: string, listener?: ReplyListener): Promise<TranscriptTurn[]>;
  /**
   * The contact has probably finished saying `text` (a recogniser's eager end of turn): the model's
   * first answer is written meanwhile and kept aside, nothing of it in the conversation yet. Only
   * one at a time, and only while no reply is being heard.
   */
  prepare(text: string): PreparedReply;
  /**
   * The contact cut the last reply short: the model's memory keeps only what they heard, so the
   * next answer does not assume they heard the rest.
   */
  interrupted(heard: string): void;
  /** Why the conversation is over, once it is. */
  readonly ended: EndReason | null;
  /** Tokens the model server reported, summed over the session. */
  readonly usage: TokenUsage;
  /** The session as it stands, to be resumed. */
  save(): SavedSession;
  /** The session for a speech-to-speech model, which converses itself. */
  readonly spoken: SpokenSession;
}

/** A reply written before the contact's turn was sure to be over. */
export interface PreparedReply {
  /**
   * The turn is over as prepared: the same as `hear(text, listener)`, but the model's first answer
   * is the one already being written (its words so far given to the listener at once).
   */
  commit(listener?: ReplyListener): Promise<TranscriptTurn[]>;
  /** The contact went on: the answer's request is stopped and forgotten; nothing of it is kept or counted. */
  drop(): void;
}

/** One answer of the model, as it streamed: its words, the tools it called, what it used. */
interface ModelRound {
  text: string;
  toolCalls: ChatToolCall[];
  usage: { inputTokens: number; outputTokens: number };
  firstTokenMs: number | null;
}

/** Rounds of tool calls one reply may take before the model must answer in words. */
const MAX_TOOL_ROUNDS = 4;
/** Passages put in context per turn, found by knowledge_search, and weighed by the retrieval agent. */
export const CONTEXT_PASSAGES = 3;

/** Passages as the model reads them, numbered, each with its source's name. */
export const passagesForModel = (passages: Passage[]): string =>
  passages.map((passage, i) => `[${i + 1}] (${passage.sourceName}) ${passage.text}`).join('\n');
const FALLBACK_LINE = "I'm sorry, I'm having trouble on my side right now. Someone will get back to you soon. Goodbye.";

const PHONE_STYLE =
  'You are speaking with a person on a phone call. Answer in one to three short spoken sentences, with no lists, markdown or emoji. ' +
  'If you do not know something, say so rather than invent it.';

/** Aborts `signal` unless stopped within `ms`: a model that said nothing. */
function stallTimer(ms: number) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  return { signal: controller.signal, stop: () => clearTimeout(timer) };
}

const sourcesOf = (passages: Passage[]) => passages.map(({ sourceId, sourceName, chunkId }) => ({ sourceId, sourceName, chunkId }));

export function openSession(setup: SessionSetup): Session {
  const usage: TokenUsage = { ...(setup.resume?.usage ?? { inputTokens: 0, outputTokens: 0 }) };
  let ended: EndReason | null = setup.resume?.ended ?? null;
  const history: ChatMessage[] = setup.resume
    ? [...setup.resume.history]
    : [
        {
          role: 'system',
          content: [
            setup.systemPrompt.trim() || `You are ${setup.agentName}, a helpful phone agent.`,
            PHONE_STYLE,
            `Speak the language of the tag ${setup.language} unless the person uses another.`,
          ].join('\n\n'),
        },
      ];
  const offset = () => setup.clock.now().getTime() - setup.startedAt.getTime();
  const turn = (role: TranscriptTurn['role'], text: string, from: number, extra: Partial<TranscriptTurn> = {}): TranscriptTurn => {
    // A test clock may be set back; an offset is never before the start.
    const startMs = Math.max(0, from);
    return {
      role,
      text,
      at: new Date(setup.startedAt.getTime() + startMs).toISOString(),
      startMs,
      endMs: Math.max(startMs, offset()),
      ...extra,
    };
  };

  /** Runs a tool the model called: its result in the history, its turn for the transcript; the conversation ends if it says so. */
  async function runTool(call: ChatToolCall): Promise<{ turn: TranscriptTurn; content: string }> {
    const toolStart = offset();
    const result = await setup.toolbox.run(call);
    history.push({ role: 'tool', toolCallId: call.id, content: result.content });
    if (result.end) ended = result.end;
    const toolTurn = turn('tool', result.content, toolStart, {
      tool: { id: call.id, name: call.name, arguments: parsedOrRaw(call.arguments), ok: result.ok },
      ...(result.sources?.length ? { sources: sourcesOf(result.sources) } : {}),
    });
    return { turn: toolTurn, content: result.content };
  }

  /**
   * The model's reply to the conversation so far, tools run as it asks, until it answers in words;
   * its turns are added to `turns` as they are settled (a failure keeps those already run). `spoke`
   * is set once its first words went to the listener. The first event of each answer must come
   * within `stallMs` when given: a model that says nothing is a failure too (one that goes quiet
   * after its first words is waited for, as without a backup).
   */
  async function modelReply(
    model: ConversationModel,
    context: { passages: Passage[]; at: number },
    turns: TranscriptTurn[],
    progress: { spoke: boolean },
    listener?: ReplyListener,
    stallMs?: number,
    prepared?: Promise<ModelRound>,
  ): Promise<void> {
    const startedAt = performance.now();
    const startMs = offset();
    let firstTokenMs: number | null = null;
    const contextMessage: ChatMessage[] = context.passages.length
      ? [
          {
            role: 'system',
            content: `Passages from your knowledge that may help with the next answer (use them only if relevant):\n${passagesForModel(context.passages)}`,
          },
        ]
      : [];
    const backupUsage =
      model === setup.backup?.model
        ? (usage.backup ??= { model: model.name, provider: model.provider, inputTokens: 0, outputTokens: 0 })
        : undefined;
    for (let round = 0; round <= MAX_TOOL_ROUNDS; round++) {
      let text = '';
      const toolCalls: ChatToolCall[] = [];
      // A prepared first answer: already written (its words went to the listener at the commit), counted now.
      const ready = round === 0 ? await prepared : undefined;
      if (ready) {
        text = ready.text;
        toolCalls.push(...ready.toolCalls);
        progress.spoke ||= ready.text.length > 0;
        for (const counted of [usage, backupUsage]) {
          if (!counted) continue;
          counted.inputTokens += ready.usage.inputTokens;
          counted.outputTokens += ready.usage.outputTokens;
        }
        firstTokenMs ??= ready.firstTokenMs;
      }
      const stalled = stallMs === undefined || ready ? undefined : stallTimer(stallMs);
      if (!ready)
        try {
          for await (const event of model.chat.stream(
            {
              model: model.name,
              messages: [...history.slice(0, context.at), ...contextMessage, ...history.slice(context.at)],
              tools: round < MAX_TOOL_ROUNDS && setup.toolbox.definitions.length ? setup.toolbox.definitions : undefined,
              temperature: model.temperature,
              maxTokens: model.maxTokens,
            },
            stalled ? { signal: stalled.signal } : undefined,
          )) {
            stalled?.stop();
            if (event.type === 'text') {
              text += event.delta;
              progress.spoke = true;
              listener?.onText(event.delta, round);
            } else if (event.type === 'tool_call') toolCalls.push({ id: event.id, name: event.name, arguments: event.arguments });
            else {
              usage.inputTokens += event.usage?.inputTokens ?? 0;
              usage.outputTokens += event.usage?.outputTokens ?? 0;
              if (backupUsage) {
                backupUsage.inputTokens += event.usage?.inputTokens ?? 0;
                backupUsage.outputTokens += event.usage?.outputTokens ?? 0;
              }
              if (firstTokenMs === null && event.firstTokenMs !== undefined) firstTokenMs = event.firstTokenMs;
            }
          }
        } catch (error) {
          if (stalled?.signal.aborted) throw new ProviderError(`The model said nothing for ${stallMs} ms.`, { retryable: true });
          throw error;
        } finally {
          stalled?.stop();
        }
      const said = text.trim();
      history.push({ role: 'assistant', content: said || null, ...(toolCalls.length ? { toolCalls } : {}) });
      const latency = () => ({ firstTokenMs, totalMs: Math.round(performance.now() - startedAt) });
      if (said)
        turns.push(
          turn('agent', said, startMs, {
            by: `model:${model.name}`,
            ...(context.passages.length ? { sources: sourcesOf(context.passages) } : {}),
            latency: latency(),
          }),
        );
      if (toolCalls.length === 0) return;
      for (const call of toolCalls) turns.push((await runTool(call)).turn);
      // The conversation is over once end_call or a transfer ran: nothing more is said.
      if (ended) return;
    }
  }

  /** The retrieval agent's reply: goodbye and opt-out understood, questions answered from knowledge. */
  async function retrievalReply(heard: string): Promise<TranscriptTurn[]> {
    const startMs = offset();
    const startedAt = performance.now();
    const say = (text: string, extra: Partial<TranscriptTurn> = {}) => [
      turn('agent', text, startMs, {
        by: 'retrieval-agent',
        latency: { firstTokenMs: null, totalMs: Math.round(performance.now() - startedAt) },
        ...extra,
      }),
    ];
    if (isOptOut(heard)) {
      ended = 'opted_out';
      return say(RETRIEVAL_LINES.optedOut);
    }
    if (isGoodbye(heard)) {
      ended = 'agent_ended';
      return say(RETRIEVAL_LINES.goodbye);
    }
    if (isGreeting(heard)) return say(RETRIEVAL_LINES.offerHelp(setup.agentName));
    const passages = await setup.search(heard);
    const answer = await answerFromPassages(heard, passages.slice(0, CONTEXT_PASSAGES), setup.similarityToQuestion);
    // Words were heard but nothing answers them: say so, rather than ask to hear them again.
    if (!answer) return say(/\p{L}/u.test(heard) ? RETRIEVAL_LINES.dontKnow : RETRIEVAL_LINES.didNotCatch);
    return say(answer.text, { sources: sourcesOf([answer.passage]) });
  }

  /** The model answering: the agent's, or its backup once the conversation failed over. */
  const answering = () => (usage.backup && setup.backup ? setup.backup.model : setup.model);

  async function reply(heard: string | null, listener?: ReplyListener, prepared?: Promise<ModelRound>): Promise<TranscriptTurn[]> {
    const model = answering();
    if (!model) return retrievalReply(heard ?? '');
    const turns: TranscriptTurn[] = [];
    const progress = { spoke: false };
    const backup = setup.backup && model !== setup.backup.model ? setup.backup : undefined;
    try {
      const passages = heard !== null && setup.knowledgeInContext ? (await setup.search(heard)).slice(0, CONTEXT_PASSAGES) : [];
      // Just before the contact's words; tool results must follow their call, so nothing goes after them.
      const context = { passages, at: history.length - 1 };
      try {
        await modelReply(model, context, turns, progress, listener, backup?.stallMs, prepared);
      } catch (error) {
        // Before its first words the backup answers instead, and from then on; after them the caller heard a reply cut short.
        if (!(error instanceof ProviderError) || !backup || progress.spoke) throw error;
        const from = turns.length;
        await modelReply(backup.model, context, turns, progress, listener);
        const first = turns.findIndex((turn, index) => index >= from && turn.role === 'agent');
        const failover = {
          component: 'llm' as const,
          from: `model:${model.name}`,
          to: `model:${backup.model.name}`,
          reason: error.message,
        };
        if (first >= 0) turns[first] = { ...turns[first]!, failover };
        else usage.backup ??= { model: backup.model.name, provider: backup.model.provider, inputTokens: 0, outputTokens: 0 };
      }
      return turns;
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      // The caller hears why the call ends; the transcript says the model failed, not what it would have said.
      ended = 'llm_error';
      return [...turns, turn('agent', FALLBACK_LINE, offset(), { by: 'fallback', latency: { firstTokenMs: null, totalMs: 0 } })];
    }
  }

  async function hear(text: string, listener?: ReplyListener, prepared?: Promise<ModelRound>): Promise<TranscriptTurn[]> {
    if (ended) return [];
    const contact = turn('contact', text, offset());
    history.push({ role: 'user', content: text });
    return [contact, ...(await reply(text, listener, prepared))];
  }

  /** A prepared reply's first answer, its words to `onText` as they come, nothing counted or kept. */
  async function firstAnswer(
    model: ConversationModel,
    messages: ChatMessage[],
    signal: AbortSignal,
    onText: (delta: string) => void,
  ): Promise<ModelRound> {
    const made: ModelRound = { text: '', toolCalls: [], usage: { inputTokens: 0, outputTokens: 0 }, firstTokenMs: null };
    const tools = setup.toolbox.definitions.length ? setup.toolbox.definitions : undefined;
    const request = { model: model.name, messages, tools, temperature: model.temperature, maxTokens: model.maxTokens };
    for await (const event of model.chat.stream(request, { signal })) {
      if (event.type === 'text') {
        made.text += event.delta;
        onText(event.delta);
      } else if (event.type === 'tool_call') made.toolCalls.push({ id: event.id, name: event.name, arguments: event.arguments });
      else {
        made.usage.inputTokens += event.usage?.inputTokens ?? 0;
        made.usage.outputTokens += event.usage?.outputTokens ?? 0;
        made.firstTokenMs ??= event.firstTokenMs ?? null;
      }
    }
    return made;
  }

  const spoken: SpokenSession = {
    instructions: (history[0]?.role === 'system' ? history[0].content : '') ?? '',
    firstMessage: setup.firstMessage?.trim() || null,
    tools: setup.toolbox.definitions,
    said(role, text, fromMs, extra = {}) {
      history.push(role === 'contact' ? { role: 'user', content: text } : { role: 'assistant', content: text });
      return turn(role, text, fromMs, extra);
    },
    async runTool(call) {
      history.push({ role: 'assistant', content: null, toolCalls: [call] });
      return runTool(call);
    },
    used(tokens) {
      usage.inputTokens += tokens.inputText + tokens.inputAudio;
      usage.outputTokens += tokens.outputText + tokens.outputAudio;
      usage.inputAudioTokens = (usage.inputAudioTokens ?? 0) + tokens.inputAudio;
      usage.outputAudioTokens = (usage.outputAudioTokens ?? 0) + tokens.outputAudio;
    },
    offset,
  };

  return {
    get ended() {
      return ended;
    },
    usage,
    spoken,
    save: () => ({ history: [...history], usage: { ...usage }, ended }),
    async open() {
      if (setup.firstMessage?.trim()) {
        const text = setup.firstMessage.trim();
        history.push({ role: 'assistant', content: text });
        return [turn('agent', text, offset(), { by: 'first-message' })];
      }
      if (!setup.model) return [turn('agent', RETRIEVAL_LINES.greeting(setup.agentName), offset(), { by: 'retrieval-agent' })];
      return reply(null);
    },
    hear,
    prepare(text) {
      const model = answering();
      // Only the model's own first answer is prepared: the retrieval agent, and passages put in context, answer once the turn is over.
      if (!model || ended || setup.knowledgeInContext) return { commit: (listener) => hear(text, listener), drop: () => undefined };
      const stop = new AbortController();
      const written: string[] = [];
      let live: ReplyListener | undefined;
      // The conversation so far and these words, as hear() will have it; tools may be asked for, and run only once committed.
      const first = firstAnswer(model, [...history, { role: 'user', content: text }], stop.signal, (delta) => {
        written.push(delta);
        live?.onText(delta, 0);
      });
      // Dropped, or failed before it was committed: the commit (if any) hears the failure.
      first.catch(() => undefined);
      return {
        commit(listener) {
          for (const delta of written) listener?.onText(delta, 0);
          live = listener;
          return hear(text, listener, first);
        },
        drop: () => stop.abort(),
      };
    },
    interrupted(heard) {
      const last = history.findLastIndex((message) => message.role === 'assistant');
      if (last < 0) return;
      const message = history[last] as Extract<ChatMessage, { role: 'assistant' }>;
      history[last] = { ...message, content: heard.trim() ? `${heard.trim()} …` : null };
    },
  };
}

function parsedOrRaw(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return json;
  }
}
