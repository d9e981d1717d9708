/**
 * Speech-to-speech: a realtime model hears the caller's audio and answers in audio, in place of
 * recognition, conversation, sentences and synthesis. The line of such a call:
 *
 *   transport in → speech-to-speech → playback (transport out)                      (the server detects turns)
 *   transport in → recognition → turn detection → speech-to-speech → playback        (ours does)
 *
 * The caller's audio is appended to the model's input as it arrives; the model's audio goes down to
 * playback in chunks, each with its mark, so the line says how much of it the caller heard. When
 * the caller speaks over the agent (the server's speech_started, or our turn detection's), queued
 * audio is cleared and the server told to forget what was not heard (`truncate` at the audio heard).
 * The transcript keeps the caller's turns as transcribed (by the server, or by our recogniser) and
 * the agent's as the server transcribed its audio, cut in proportion to the audio heard when it was
 * interrupted; tools run through the conversation's toolbox; the tokens billed are those each
 * `response.done` reported. The clocks and the end of the call are the conversation stage's.
 */
import { durationMs, type AudioFormat } from '../../../platform/audio.ts';
import type { RealtimeConversation, RealtimeEvent } from '../../../providers/types.ts';
import type { EndReason, TranscriptTurn } from '../../calls/service.ts';
import { lineTimers, SILENCE_PROMPT } from '../line-timers.ts';
import { oneAfterAnother, recorderOf, type ConversationStage, type ConversationStageOptions } from './conversation.ts';
import type { Reply, Spoken } from './frames.ts';
import type { StageLink } from './pipeline.ts';

export interface SpeechToSpeechOptions extends ConversationStageOptions {
  /** Opens the conversation with the model's server, its events to `listener`. */
  connect(listener: (event: RealtimeEvent) => void): Promise<RealtimeConversation>;
  /** `server`: the model's server detects the caller's turns; `pipeline`: ours does (caller_speaking, caller_turn come down). */
  turnDetection: 'server' | 'pipeline';
  /** The line's audio format (what each chunk of the agent's audio lasts). */
  format: AudioFormat;
  /** Names the model in the transcript (`model:<name>`). */
  model: string;
}

export interface SpeechToSpeechStage extends ConversationStage {
  /** Seconds of the caller's audio the server transcribed, as it reported them (server turn detection). */
  transcribedSeconds(): number;
}

/** One chunk of the agent's audio on the line, with the item it belongs to and how long it plays. */
interface Chunk {
  spoken: Spoken;
  itemId: string;
  ms: number;
}

/** One response of the model's as it goes down the line. */
interface Response {
  reply: Reply;
  chunks: Chunk[];
  /** Each audio item's transcript, in order, as the server sent it. */
  transcripts: Map<string, string>;
  tools: { id: string; name: string; arguments: string }[];
  /** When the response's first audio came, after the start of the call. */
  startMs: number | null;
  /** Settles once the line played every chunk (or the rest was cleared). */
  playedOut: Promise<void>;
  done(): void;
}

/** What the caller heard of a transcript: the share of it that the heard share of its audio carries, cut at a word. */
export function heardShare(text: string, heardMs: number, totalMs: number): string {
  if (totalMs <= 0 || heardMs >= totalMs) return text;
  const words = text.split(/\s+/).filter(Boolean);
  return words.slice(0, Math.floor((words.length * heardMs) / totalMs)).join(' ');
}

const sayExactly = (line: string) => `Say exactly this to the caller, and nothing else: "${line}"`;

export function speechToSpeechStage(options: SpeechToSpeechOptions, link: StageLink): SpeechToSpeechStage {
  const { session } = options;
  const spokenSession = session.spoken;
  let stopped = false;
  let server: RealtimeConversation | undefined;
  /** The caller's audio while the server's session is being set up. */
  const early: Buffer[] = [];
  /** The response being written, and the last that sent audio (it may still be playing). */
  let writing: Response | undefined;
  let speaking: Response | undefined;
  /** The pipeline's own last words are being said: the call ends after them, for this reason. */
  let ending: EndReason | undefined;
  let callerFromMs: number | null = null;
  let transcribed = 0;
  let marks = 0;
  const played = new Map<Reply, () => void>();
  const steps = oneAfterAnother(() => stopped, fail);

  const timers = lineTimers(options, {
    promptSilence: () => server?.respond(sayExactly(SILENCE_PROMPT)),
    end: (goodbye, reason) => endWith(goodbye, reason),
  });

  function newResponse(): Response {
    let done!: () => void;
    const playedOut = new Promise<void>((resolve) => (done = resolve));
    const response: Response = {
      reply: { sentences: [], silenced: false },
      chunks: [],
      transcripts: new Map(),
      tools: [],
      startMs: null,
      playedOut,
      done,
    };
    played.set(response.reply, done);
    return response;
  }

  const heardMs = (chunks: Chunk[]) => chunks.reduce((sum, chunk) => sum + (chunk.spoken.heard ? chunk.ms : 0), 0);

  /** The caller talks over the agent: only while audio they have not heard is queued. */
  function bargeIn(): void {
    const response = speaking;
    if (!response || !response.chunks.some(({ spoken }) => !spoken.heard && !spoken.cleared)) return;
    response.reply.silenced = true;
    for (const { spoken } of response.chunks) if (!spoken.heard) spoken.cleared = true;
    link.down({ type: 'interrupt' });
    // The server forgets what the caller did not hear, item by item.
    for (const itemId of new Set(response.chunks.map((chunk) => chunk.itemId)))
      server?.truncate(itemId, heardMs(response.chunks.filter((chunk) => chunk.itemId === itemId)));
    // Our turn detection decides: the response still being written is stopped (the server's stops itself).
    if (options.turnDetection === 'pipeline' && writing === response) server?.cancel();
    response.done();
  }

  /** The response's agent turns as the caller heard them, then its tools' turns. */
  function turnsOf(response: Response, tools: TranscriptTurn[]): TranscriptTurn[] {
    const by = `model:${options.model}`;
    const fromMs = response.startMs ?? spokenSession.offset();
    const said = [...response.transcripts].flatMap(([itemId, text]) => {
      const chunks = response.chunks.filter((chunk) => chunk.itemId === itemId);
      const total = chunks.reduce((sum, chunk) => sum + chunk.ms, 0);
      const heard = response.reply.silenced ? heardShare(text, heardMs(chunks), total) : text;
      if (!heard.trim()) return [];
      return [spokenSession.said('agent', heard, fromMs, { by, ...(heard === text ? {} : { interrupted: true }) })];
    });
    return [...said, ...tools];
  }

  /** A response is written: its tools run (and the model answers their results), then its turns are recorded once heard. */
  async function finish(response: Response): Promise<void> {
    const tools: TranscriptTurn[] = [];
    for (const call of response.tools) {
      const { turn, content } = await spokenSession.runTool(call);
      server?.toolResult(call.id, content);
      tools.push(turn);
    }
    if (tools.length && !session.ended) server?.respond();
    link.down({ type: 'reply_end', reply: response.reply });
    await response.playedOut;
    if (!(await record(turnsOf(response, tools)))) return void (await stopAll());
    const reason = session.ended ?? (response.tools.length === 0 ? ending : undefined);
    if (reason) return hangUp(reason);
    if (!tools.length) timers.armSilence();
  }

  function onEvent(event: RealtimeEvent): void {
    if (stopped) return;
    switch (event.type) {
      case 'speech_started':
        callerFromMs = spokenSession.offset();
        timers.disarmSilence();
        return bargeIn();
      case 'caller_transcript': {
        transcribed += event.seconds ?? 0;
        const text = event.text.trim();
        if (!text) return;
        callerHeard(text, callerFromMs ?? spokenSession.offset());
        return;
      }
      case 'agent_audio': {
        writing ??= newResponse();
        const response = writing;
        // Audio of a response the caller already cut short is not played.
        if (response.reply.silenced) return;
        response.startMs ??= spokenSession.offset();
        speaking = response;
        const spoken: Spoken = { text: '', round: -1, mark: `s2s-${++marks}`, heard: false, cleared: false };
        response.reply.sentences.push(spoken);
        response.chunks.push({ spoken, itemId: event.itemId, ms: durationMs(event.audio.length, options.format) });
        link.down({ type: 'agent_audio', audio: event.audio });
        link.down({ type: 'sentence_sent', spoken });
        return;
      }
      case 'agent_transcript':
        (writing ??= newResponse()).transcripts.set(event.itemId, event.text);
        return;
      case 'tool_call':
        (writing ??= newResponse()).tools.push({ id: event.id, name: event.name, arguments: event.arguments });
        return;
      case 'response_done': {
        if (event.usage)
          spokenSession.used({
            inputText: event.usage.inputTextTokens,
            inputAudio: event.usage.inputAudioTokens,
            outputText: event.usage.outputTextTokens,
            outputAudio: event.usage.outputAudioTokens,
          });
        const response = writing ?? newResponse();
        writing = undefined;
        steps.then(() => finish(response));
        return;
      }
      case 'error':
        if (event.fatal) return fail(event.error);
        return options.onError(event.error);
    }
  }

  /** A turn of the caller's, as transcribed: a live caption, then recorded. */
  function callerHeard(text: string, fromMs: number): void {
    options.heard?.(text);
    timers.heard();
    callerFromMs = null;
    const turn = spokenSession.said('contact', text, fromMs);
    steps.then(async () => {
      if (!(await record([turn]))) await stopAll();
    });
  }

  const recordTurns = recorderOf(options);
  /** No turn to record (a response the caller heard nothing of) writes nothing. */
  const record = async (turns: TranscriptTurn[]) => turns.length === 0 || recordTurns(turns);

  async function hangUp(reason: EndReason): Promise<void> {
    if (stopped) return;
    await stopAll();
    await options.hangUp(reason).catch(options.onError);
  }

  /** The pipeline's own last words (silence, the time limit): the model says them, then the call ends. */
  function endWith(goodbye: string, reason: EndReason): void {
    if (stopped || ending) return;
    ending = reason;
    bargeIn();
    if (!server) return void hangUp(reason);
    server.respond(sayExactly(goodbye));
  }

  async function stopAll(): Promise<void> {
    if (stopped) return;
    stopped = true;
    timers.stop();
    for (const done of played.values()) done();
    server?.close();
    await options.closeLine();
  }

  /** The model's server failed: the call cannot speak any more, so it ends, with no last words to say. */
  function fail(error: unknown): void {
    if (stopped) return;
    options.onError(error);
    void hangUp('provider_error');
  }

  // The opening: the first message said as written, or the model's own.
  steps.then(async () => {
    server = await options.connect(onEvent);
    if (stopped) return server.close();
    for (const audio of early.splice(0)) server.appendAudio(audio);
    server.respond(spokenSession.firstMessage ? sayExactly(spokenSession.firstMessage) : undefined);
  });

  return {
    name: 'speech-to-speech',
    down: {
      caller_audio({ audio }) {
        if (stopped) return;
        if (server) server.appendAudio(audio);
        else early.push(audio);
      },
      caller_speaking({ interrupts }) {
        timers.disarmSilence();
        callerFromMs ??= spokenSession.offset();
        if (interrupts) bargeIn();
      },
      caller_turn({ text }) {
        callerHeard(text, callerFromMs ?? spokenSession.offset());
        server?.commit();
        server?.respond();
      },
      recognition_failed({ error }) {
        fail(error);
      },
    },
    up: {
      played_out({ reply }) {
        played.get(reply)?.();
        played.delete(reply);
      },
    },
    transcribedSeconds: () => transcribed,
    async stop() {
      await stopAll();
      await steps.done();
    },
  };
}
