/**
 * A conversation on an audio line: the caller's audio goes to speech-to-text, each utterance to
 * the conversation engine, and the agent's reply, cut into sentences as the model writes it, to
 * text-to-speech and back down the line. Nothing here knows Twilio or a browser: a transport
 * (twilio-stream.ts) turns its frames into calls of the returned handlers and plays what `line`
 * is given. The transport's far end reports each `mark` once the audio before it was played, so
 * the transcript keeps what the caller heard; when the caller speaks over the agent, queued audio
 * is cleared and the agent's turn is cut at the last sentence played (barge-in).
 */
import type { Clock } from '../../platform/clock.ts';
import { createAudioConverter, type AudioConverter, type AudioFormat } from '../../platform/audio.ts';
import { ProviderError } from '../../providers/errors.ts';
import type { LiveRecognition, SpeechToText, TextToSpeech } from '../../providers/types.ts';
import type { EndReason, TranscriptTurn } from '../calls/service.ts';
import type { Session } from '../conversation/service.ts';
import { lineTimers, SILENCE_PROMPT } from './line-timers.ts';
import type { LineRecording } from './recording.ts';
import { sentenceCutter } from '../../platform/sentences.ts';

/** The far end of the line: plays audio in order and reports marks once what came before them was played. */
export interface AudioLine {
  /** The format the line carries both ways. */
  readonly format: AudioFormat;
  /** Never empty: each transport sends it as one message, and a message without audio is invalid (Twilio's warning 31951). */
  play(audio: Buffer): void;
  mark(name: string): void;
  /** Drops audio queued but not yet played. */
  clear(): void;
}

/** What speech cost, to be billed with the call. */
export interface SpeechUsage {
  sttSeconds: number;
  ttsCharacters: number;
}

/** What a conversation on a phone line needs, however the line carries it (audio here, text in relay-call.ts). */
export interface LineConversationOptions {
  session: Session;
  clock: Clock;
  /** Turns as they are settled (the agent's cut at what was heard), with speech usage so far; false once the call is over. */
  record(turns: TranscriptTurn[], speech: SpeechUsage): Promise<boolean>;
  /** The agent ends the call (after its last words were played), or the pipeline must (silence, a failure). */
  hangUp(reason: EndReason): Promise<void>;
  /** After the agent's last words, how long the caller may stay silent before being asked once if they are there. */
  silenceTimeoutMs: number;
  /** The longest a call may last; then the agent says goodbye. */
  maxDurationMs: number;
  /** Failures the caller does not hear about (a recording write, a hang-up that failed). */
  onError(error: unknown): void;
  /** Hears the line both ways when the call is recorded (recording.ts). */
  recording?: LineRecording;
  /** The caller's utterance as the recogniser settled it, before the agent answers: a live caption. */
  heard?(text: string): void;
}

export interface VoiceCallOptions extends LineConversationOptions {
  stt: Extract<SpeechToText, { kind: 'live' }>;
  tts: TextToSpeech;
  voice: string;
  language: string;
  ttsModel?: string;
  sttModel?: string;
  line: AudioLine;
}

export interface VoiceCall {
  /** The caller's audio, in the line's format, as it arrives. */
  audio(frame: Buffer): void;
  /** The line played everything before mark `name`. */
  marked(name: string): void;
  /** The caller pressed a key. */
  dtmf(digit: string): void;
  /** The line closed (the caller hung up, or the call ended): stop listening and speaking; settles once the last turns are recorded. */
  stop(): Promise<void>;
}

// The pipeline's own lines, shared with the conversation relay (relay-call.ts).
export const SPEECH_FAILED = "I'm sorry, I'm having trouble hearing you on this line. Someone will get back to you. Goodbye.";
/**
 * The call's steps (the opening, each reply, the silence prompt) run one after another; none runs
 * once the call stopped, and one that fails while it goes on goes to `fail` (which ends it).
 */
export function oneAfterAnother(stopped: () => boolean, fail: (error: unknown) => void) {
  let last: Promise<void> = Promise.resolve();
  return {
    then(step: () => Promise<void> | void): void {
      last = last
        .then(() => (stopped() ? undefined : step()))
        .catch((error: unknown) => {
          if (!stopped()) fail(error);
        });
    },
    /** Settles once every step queued so far has run. */
    done: () => last,
  };
}

/** One of those lines as the transcript keeps it, `started` (ms) being when the call's conversation began. */
export function pipelineLine(text: string, clock: Clock, started: number): TranscriptTurn {
  const offset = clock.now().getTime() - started;
  return { role: 'agent', text, at: clock.now().toISOString(), startMs: offset, endMs: offset, by: 'pipeline' };
}
/** What the engine hears of a key the caller pressed. */
export const keypadLine = (digit: string) => `(The caller pressed ${digit} on the keypad.)`;

/** One sentence on its way to the caller: synthesised, played, and heard once its mark comes back. */
interface Spoken {
  text: string;
  /** The model's answer within the reply it belongs to (-1: not the model's: first message, retrieval agent, fallback). */
  round: number;
  mark: string;
  heard: boolean;
}

export function startVoiceCall(options: VoiceCallOptions): VoiceCall {
  const { session, clock, recording } = options;
  const line = recording ? recordedLine(options.line, recording) : options.line;
  const started = clock.now().getTime();
  const usage: SpeechUsage = { sttSeconds: 0, ttsCharacters: 0 };
  const toSpeechFormat = (bytes: number) => bytes / (line.format.encoding === 'mulaw' ? 1 : 2) / line.format.sampleRate;

  let stopped = false;
  let markCount = 0;
  /** The sentences of the reply being spoken, in order. */
  let speaking: Spoken[] = [];
  /** Aborts the synthesis in flight: barge-in or the end of the call. */
  let synthesis = new AbortController();
  /** Sentences are synthesised one after another; a barge-in starts a new chain. */
  let voiceQueue: Promise<void> = Promise.resolve();
  /**
   * One converter per format the voice delivers, for the whole call: a resampler is a WebAssembly
   * instance, too costly per sentence; the few milliseconds its filter holds back of one sentence
   * lead the next.
   */
  const converters = new Map<string, Promise<AudioConverter>>();
  const converterFor = (format: AudioFormat) => {
    const key = `${format.encoding}/${format.sampleRate}`;
    let converter = converters.get(key);
    if (!converter) converters.set(key, (converter = createAudioConverter(format, line.format)));
    return converter;
  };
  /** Marks of audio a barge-in cleared: the line reports them too (Twilio does), but they were never heard. */
  const clearedMarks = new Set<string>();
  /** Resolves marks the pipeline waits for (the last sentence before hanging up). */
  const markWaiters = new Map<string, () => void>();
  /** Utterances are answered one after another. */
  const replies = oneAfterAnother(() => stopped, fail);
  /** The caller cut the current reply short: what the model still writes of it is not spoken. */
  let silenced = false;

  const recognition: LiveRecognition = options.stt.listen(line.format, {
    language: options.language,
    ...(options.sttModel ? { model: options.sttModel } : {}),
  });
  const timers = lineTimers(options, {
    promptSilence: () =>
      replies.then(async () => {
        beginSpeaking();
        say(SILENCE_PROMPT, -1);
        await playedOut();
        await record([agentLine(SILENCE_PROMPT)]);
        timers.armSilence();
      }),
    end: (goodbye, reason) => void endWith(goodbye, reason),
  });

  /** A new reply (or line) begins: nothing of the previous one is pending. */
  function beginSpeaking(): void {
    speaking = [];
    silenced = false;
  }

  function say(text: string, round: number): Spoken {
    const spoken: Spoken = { text, round, mark: `m${++markCount}`, heard: false };
    speaking.push(spoken);
    if (silenced) return spoken;
    const signal = synthesis.signal;
    voiceQueue = voiceQueue.then(() => (signal.aborted ? undefined : play(spoken, signal)));
    // A failure surfaces where the reply waits for its audio (playedOut); a queue a barge-in
    // replaced before anyone waited must not take the process down as an unhandled rejection.
    voiceQueue.catch(() => undefined);
    return spoken;
  }

  async function play(spoken: Spoken, signal: AbortSignal): Promise<void> {
    const synthesised = options.tts.synthesize({
      text: spoken.text,
      voice: options.voice,
      language: options.language,
      format: line.format,
      signal,
      ...(options.ttsModel ? { model: options.ttsModel } : {}),
    });
    usage.ttsCharacters += spoken.text.length;
    const converter = await converterFor(synthesised.format);
    try {
      for await (const chunk of synthesised.audio) {
        if (signal.aborted) return;
        // A chunk may hold no audio (eSpeak ends each sentence with an empty one), or convert to none
        // (a resampler keeps the last few samples for its filter): nothing is sent for it.
        const audio = converter.convert(chunk);
        if (audio.length > 0) line.play(audio);
      }
    } catch (error) {
      if (signal.aborted) return;
      throw error;
    }
    if (!signal.aborted) line.mark(spoken.mark);
  }

  /** Waits until everything queued so far was synthesised and played by the far end. */
  async function playedOut(): Promise<void> {
    await voiceQueue;
    const last = speaking.at(-1);
    if (!last || last.heard || stopped || silenced) return;
    await new Promise<void>((resolve) => markWaiters.set(last.mark, resolve));
  }

  function bargeIn(): void {
    // Only while something the caller has not heard is still queued (not already cleared).
    if (!speaking.some((spoken) => !spoken.heard && !clearedMarks.has(spoken.mark))) return;
    silenced = true;
    for (const spoken of speaking) if (!spoken.heard) clearedMarks.add(spoken.mark);
    synthesis.abort();
    synthesis = new AbortController();
    voiceQueue = Promise.resolve();
    line.clear();
    for (const resolve of markWaiters.values()) resolve();
    markWaiters.clear();
  }

  /** The reply's turns with each agent turn cut at what the caller heard; the engine told what they missed. */
  function heardTurns(turns: TranscriptTurn[], spoken: Spoken[]): TranscriptTurn[] {
    const modelTurns = turns.filter((turn) => turn.role === 'agent' && turn.by?.startsWith('model:'));
    const interrupted = spoken.some((sentence) => !sentence.heard);
    if (!interrupted) return turns;
    const heardOf = (predicate: (sentence: Spoken) => boolean) =>
      spoken
        .filter((sentence) => predicate(sentence) && sentence.heard)
        .map((sentence) => sentence.text)
        .join(' ');
    const rounds = [...new Set(spoken.filter((sentence) => sentence.round >= 0).map((sentence) => sentence.round))];
    const result = turns.flatMap((turn) => {
      if (turn.role !== 'agent') return [turn];
      const index = modelTurns.indexOf(turn);
      const text = index >= 0 ? heardOf((sentence) => sentence.round === rounds[index]) : heardOf((sentence) => sentence.round < 0);
      if (text === turn.text) return [turn];
      // A turn the caller heard nothing of is not theirs to read (the model is told below).
      return text ? [{ ...turn, text, interrupted: true }] : [];
    });
    session.interrupted(heardOf(() => true));
    return result;
  }

  /** One utterance answered: the reply spoken as it is written, then the turns recorded as heard. */
  async function respond(heard: string): Promise<void> {
    timers.disarmSilence();
    beginSpeaking();
    const cutter = sentenceCutter(options.language);
    let streamedRound = -1;
    const turns = await session.hear(heard, {
      onText(delta, round) {
        if (round !== streamedRound) {
          for (const sentence of cutter.flush()) say(sentence, streamedRound);
          streamedRound = round;
        }
        for (const sentence of cutter.push(delta)) say(sentence, round);
      },
    });
    for (const sentence of cutter.flush()) say(sentence, streamedRound);
    // What the model did not stream (the retrieval agent, the fallback line) is spoken whole.
    for (const turn of turns) if (turn.role === 'agent' && !turn.by?.startsWith('model:')) say(turn.text, -1);
    const spoken = speaking;
    // Recorded even when the voice failed: the caller's words stay, the agent's say what was heard.
    const voiceFailure = await playedOut().then(
      () => undefined,
      (error: unknown) => error ?? new Error('The voice failed.'),
    );
    if (!(await record(heardTurns(turns, spoken)))) return void stopAll();
    if (voiceFailure) throw voiceFailure;
    if (session.ended) return hangUp(session.ended);
    timers.armSilence();
  }

  async function record(turns: TranscriptTurn[]): Promise<boolean> {
    const sttSeconds = recognition.sentSeconds?.() ?? usage.sttSeconds;
    return options.record(turns, { ...usage, sttSeconds: Math.round(sttSeconds * 100) / 100 });
  }

  async function hangUp(reason: EndReason): Promise<void> {
    if (stopped) return;
    await stopAll();
    await options.hangUp(reason).catch(options.onError);
  }

  /** The pipeline's own last words (silence, time limit, a failure): spoken, recorded, then the call ends. */
  async function endWith(text: string, reason: EndReason): Promise<void> {
    if (stopped) return;
    bargeIn();
    beginSpeaking();
    voiceQueue = Promise.resolve();
    say(text, -1);
    try {
      await playedOut();
      await record([agentLine(text)]);
    } catch (error) {
      // The voice itself failed: the call still ends, without last words.
      options.onError(error);
    }
    await hangUp(reason);
  }

  const agentLine = (text: string) => pipelineLine(text, clock, started);

  async function stopAll(): Promise<void> {
    if (stopped) return;
    stopped = true;
    timers.stop();
    synthesis.abort();
    for (const resolve of markWaiters.values()) resolve();
    markWaiters.clear();
    await recognition.close().catch(() => undefined);
    for (const converter of converters.values())
      void converter.then(
        (done) => done.close(),
        () => undefined,
      );
  }

  function queueReply(text: string): void {
    timers.heard();
    replies.then(() => respond(text));
  }

  function fail(error: unknown): void {
    if (stopped) return;
    options.onError(error);
    void endWith(SPEECH_FAILED, 'provider_error');
  }

  // The opening, then the caller's words as the recogniser cuts them into utterances.
  replies.then(async () => {
    const opening = await session.open();
    beginSpeaking();
    for (const turn of opening) if (turn.role === 'agent') say(turn.text, -1);
    await playedOut();
    if (!(await record(opening))) return void stopAll();
    if (session.ended) return hangUp(session.ended);
    timers.armSilence();
  });

  void (async () => {
    let words: string[] = [];
    try {
      for await (const event of recognition.events) {
        if (stopped) break;
        if (event.type === 'speech_started') {
          timers.disarmSilence();
          if (event.confirmed) bargeIn();
        } else if (event.type === 'transcript') {
          // Words, not noise, stop the agent: a cough or the line's hiss starts no barge-in.
          if (event.text.trim()) {
            timers.disarmSilence();
            bargeIn();
          }
          if (event.final && event.text.trim()) words.push(event.text.trim());
        } else if (words.length) {
          options.heard?.(words.join(' '));
          queueReply(words.join(' '));
          words = [];
        }
      }
    } catch (error) {
      fail(error instanceof ProviderError ? error : new ProviderError(`Speech-to-text failed: ${String(error)}`, { retryable: false }));
    }
  })();

  return {
    audio(frame) {
      if (stopped) return;
      recording?.callerAudio(frame);
      usage.sttSeconds += toSpeechFormat(frame.length);
      recognition.send(frame);
    },
    marked(name) {
      if (clearedMarks.delete(name)) return;
      const spoken = speaking.find((sentence) => sentence.mark === name);
      if (spoken) spoken.heard = true;
      markWaiters.get(name)?.();
      markWaiters.delete(name);
    },
    dtmf(digit) {
      queueReply(keypadLine(digit));
    },
    async stop() {
      await stopAll();
      await replies.done();
    },
  };
}

/** The line, with what is played and cleared on it also told to the recording. */
function recordedLine(line: AudioLine, recording: LineRecording): AudioLine {
  return {
    format: line.format,
    play(audio) {
      recording.agentAudio(audio);
      line.play(audio);
    },
    mark: (name) => line.mark(name),
    clear() {
      recording.cleared();
      line.clear();
    },
  };
}
