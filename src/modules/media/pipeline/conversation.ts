/**
 * The conversation: the caller's turns to the conversation engine, one after another, and its reply
 * down the line as the model writes it; each reply recorded once played out, each agent turn cut at
 * what the caller heard. It also keeps the line's clocks (silence, the call's length), decides when
 * the caller's speech interrupts the agent (only while something they have not heard is still
 * queued) and ends the call: when the agent does, after its last words, or with a line of its own
 * (silence, the time limit, a failure).
 */
import type { Clock } from '../../../platform/clock.ts';
import type { AnsweredBy } from '../../../providers/types.ts';
import type { EndReason, TranscriptTurn } from '../../calls/service.ts';
import type { PreparedReply, Session } from '../../conversation/service.ts';
import { lineTimers, SILENCE_PROMPT } from '../line-timers.ts';
import type { Failover, Reply } from './frames.ts';
import type { VoiceLatency } from './latency.ts';
import type { Stage, StageLink } from './pipeline.ts';

/** What speech cost, to be billed with the call. */
export interface SpeechUsage {
  sttSeconds: number;
  ttsCharacters: number;
  /** Of those, what the agent's backup recogniser heard and backup voice spoke (absent: neither ran). */
  backup?: { sttSeconds: number; ttsCharacters: number };
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
  /** The caller's utterance as the recogniser settled it, before the agent answers: a live caption. */
  heard?(text: string): void;
  /** Who answered, as the line heard it (an outgoing call): what follows. */
  answered?(who: AnsweredBy, heardBy: 'beep' | 'words'): Promise<AnswerAction>;
}

/** What follows who answered: the conversation goes on, the call is hung up (a machine), or the campaign's voicemail is left. */
export type AnswerAction = { act: 'converse' } | { act: 'hang_up' } | { act: 'voicemail'; text: string };

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
export function pipelineLine(text: string, clock: Clock, started: number, by = 'pipeline'): TranscriptTurn {
  const offset = clock.now().getTime() - started;
  return { role: 'agent', text, at: clock.now().toISOString(), startMs: offset, endMs: offset, by };
}
/** What the engine hears of a key the caller pressed. */
export const keypadLine = (digit: string) => `(The caller pressed ${digit} on the keypad.)`;

/**
 * A reply's turns cut at what a line that speaks text says was heard: each agent turn keeps its
 * share of `heard`, in order, and is marked interrupted when that is not all of it; one the caller
 * heard nothing of is left out. Tool turns stay: they ran.
 */
export function cutToHeard(turns: TranscriptTurn[], heard: string): TranscriptTurn[] {
  let left = heard.trim();
  return turns.flatMap((turn) => {
    if (turn.role !== 'agent') return [turn];
    const kept = left.slice(0, turn.text.length).trim();
    left = left.slice(turn.text.length).trim();
    if (kept === turn.text) return [turn];
    return kept ? [{ ...turn, text: kept, interrupted: true }] : [];
  });
}

export interface ConversationStageOptions extends LineConversationOptions {
  /** What speech was used so far (the recognition's and the synthesis' stages count it). */
  speechUsed(): SpeechUsage;
  /** Closes the whole line (every stage): the call is over. */
  closeLine(): Promise<void>;
  /** How long the caller waited for the reply, at their ear (the latency meter), once its first audio went out. */
  latencyOf?(reply: Reply): VoiceLatency | undefined;
}

/** The reply's turns with its latency at the caller's ear on its first agent turn (the one the caller waited for). */
export function withVoiceLatency(turns: TranscriptTurn[], voice: VoiceLatency | undefined): TranscriptTurn[] {
  const first = turns.findIndex((turn) => turn.role === 'agent' && turn.latency);
  if (!voice || first < 0) return turns;
  return turns.map((turn, index) => (index === first ? { ...turn, latency: { ...turn.latency!, voice } } : turn));
}

const hundredths = (seconds: number) => Math.round(seconds * 100) / 100;

/** Records settled turns with the speech used so far (seconds to the hundredth); false once the call is over. */
export const recorderOf =
  (options: Pick<ConversationStageOptions, 'record' | 'speechUsed'>) =>
  (turns: TranscriptTurn[]): Promise<boolean> => {
    const used = options.speechUsed();
    return options.record(turns, {
      ...used,
      sttSeconds: hundredths(used.sttSeconds),
      ...(used.backup && { backup: { ...used.backup, sttSeconds: hundredths(used.backup.sttSeconds) } }),
    });
  };

/** The first turn of `role` carries `failover`, unless it carries one already (the model's own). */
function withFailover(turns: TranscriptTurn[], role: TranscriptTurn['role'], failover: Failover | undefined): TranscriptTurn[] {
  const first = turns.findIndex((turn) => turn.role === role);
  if (!failover || first < 0 || turns[first]!.failover) return turns;
  return turns.map((turn, index) => (index === first ? { ...turn, failover } : turn));
}

export interface ConversationStage extends Stage {
  /** The line closed (the caller hung up, or the call ended): settles once the last turns are recorded. */
  stop(): Promise<void>;
}

/** How a reply's playing out is awaited: settled by the line (played out, voice failed), an interruption or the end of the call. */
interface Playing {
  reply: Reply;
  done: Promise<void>;
  /** Until it is settled. */
  playing: boolean;
  resolve(): void;
  reject(error: unknown): void;
}

export function conversationStage(options: ConversationStageOptions, link: StageLink): ConversationStage {
  const { session, clock } = options;
  const started = clock.now().getTime();
  let stopped = false;
  /** How each reply's playing out is awaited. */
  const playings = new WeakMap<Reply, Playing>();
  /** The reply being spoken, until the next begins. */
  let current: Playing = playing({ sentences: [], silenced: false });
  /** Utterances are answered one after another. */
  const replies = oneAfterAnother(() => stopped, fail);
  /** Replies queued or being answered: a reply is prepared only while there are none. */
  let answering = 0;
  /** A reply prepared for words the caller has probably finished (an eager end of turn), until their turn is over or goes on. */
  let prepared: { text: string; reply: PreparedReply } | undefined;
  /** The prepared reply, when the caller's turn ended as it was prepared for; any other is dropped, never spoken or billed. */
  function takePrepared(text: string): PreparedReply | undefined {
    const kept = prepared?.text === text ? prepared.reply : undefined;
    if (!kept) prepared?.reply.drop();
    prepared = undefined;
    return kept;
  }
  /** The backup recogniser took over: said on the next caller turn recorded. */
  let hearingFailover: Failover | undefined;
  /** The backup voice took over during a reply: said on its first agent turn. */
  const voiceFailovers = new WeakMap<Reply, Failover>();

  const timers = lineTimers(options, {
    promptSilence: () =>
      replies.then(async () => {
        const reply = beginSpeaking();
        link.down({ type: 'agent_line', reply, text: SILENCE_PROMPT });
        await playedOut(reply);
        await record([agentLine(SILENCE_PROMPT)]);
        timers.armSilence();
      }),
    end: (goodbye, reason) => void endWith(goodbye, reason),
  });

  function playing(reply: Reply): Playing {
    let settle!: (error?: unknown) => void;
    const done = new Promise<void>((resolve, reject) => {
      settle = (error) => {
        made.playing = false;
        if (error === undefined) resolve();
        else reject(error);
      };
    });
    // Awaited only once the reply is written; a failure before then must not go unhandled meanwhile.
    done.catch(() => undefined);
    const made: Playing = {
      reply,
      done,
      playing: true,
      resolve: () => settle(),
      reject: (error) => settle(error ?? new Error('The voice failed.')),
    };
    playings.set(reply, made);
    return made;
  }

  /** A new reply (or line) begins: nothing of the previous one is pending. */
  function beginSpeaking(): Reply {
    current.resolve();
    current = playing({ sentences: [], silenced: false });
    return current.reply;
  }

  /** Waits until everything of the reply written so far was synthesised and played by the far end. */
  async function playedOut(reply: Reply): Promise<void> {
    link.down({ type: 'reply_end', reply });
    if (stopped || reply.silenced) return;
    await playings.get(reply)?.done;
  }

  function bargeIn(): void {
    const { reply } = current;
    // Only while something the caller has not heard is still queued (not already cleared).
    if (!reply.sentences.some((spoken) => !spoken.heard && !spoken.cleared)) return;
    reply.silenced = true;
    for (const spoken of reply.sentences) if (!spoken.heard) spoken.cleared = true;
    current.resolve();
    link.down({ type: 'interrupt' });
  }

  /** The reply's turns with each agent turn cut at what the caller heard; the engine told what they missed. */
  function heardTurns(turns: TranscriptTurn[], reply: Reply): TranscriptTurn[] {
    if (reply.heardText !== undefined) {
      session.interrupted(reply.heardText);
      return cutToHeard(turns, reply.heardText);
    }
    const spoken = reply.sentences;
    const modelTurns = turns.filter((turn) => turn.role === 'agent' && turn.by?.startsWith('model:'));
    const interrupted = spoken.some((sentence) => !sentence.heard);
    if (!interrupted) return turns;
    const heardOf = (predicate: (sentence: (typeof spoken)[number]) => boolean) =>
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

  /** One utterance answered: the reply spoken as it is written (the one prepared for it, if any), then the turns recorded as heard. */
  async function respond(heard: string, ready?: PreparedReply): Promise<void> {
    timers.disarmSilence();
    const reply = beginSpeaking();
    const listener = {
      onText(text: string, round: number) {
        link.down({ type: 'agent_text', reply, text, round });
      },
    };
    const turns = await (ready ? ready.commit(listener) : session.hear(heard, listener));
    // What the model did not stream (the retrieval agent, the fallback line) is spoken whole.
    for (const turn of turns)
      if (turn.role === 'agent' && !turn.by?.startsWith('model:')) link.down({ type: 'agent_line', reply, text: turn.text });
    // Recorded even when the voice failed: the caller's words stay, the agent's say what was heard.
    const voiceFailure = await playedOut(reply).then(
      () => undefined,
      (error: unknown) => error ?? new Error('The voice failed.'),
    );
    const settled = withVoiceLatency(heardTurns(turns, reply), options.latencyOf?.(reply));
    const told = withFailover(withFailover(settled, 'contact', hearingFailover), 'agent', voiceFailovers.get(reply));
    if (told.some((turn) => turn.role === 'contact')) hearingFailover = undefined;
    if (!(await record(told))) return void stopAll();
    if (voiceFailure) throw voiceFailure;
    if (session.ended) return hangUp(session.ended);
    timers.armSilence();
  }

  const record = recorderOf(options);

  async function hangUp(reason: EndReason): Promise<void> {
    if (stopped) return;
    await stopAll();
    await options.hangUp(reason).catch(options.onError);
  }

  /** The pipeline's own last words (silence, time limit, a failure, a voicemail `by` it): spoken, recorded, then the call ends. */
  async function endWith(text: string, reason: EndReason, by?: string): Promise<void> {
    if (stopped) return;
    timers.disarmSilence();
    bargeIn();
    const reply = beginSpeaking();
    link.down({ type: 'agent_line', reply, text });
    try {
      await playedOut(reply);
      await record([pipelineLine(text, clock, started, by)]);
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
    takePrepared('');
    timers.stop();
    current.resolve();
    await options.closeLine();
  }

  function queueReply(text: string): void {
    timers.heard();
    const ready = takePrepared(text);
    answering++;
    replies.then(() => respond(text, ready).finally(() => answering--));
  }

  function fail(error: unknown): void {
    if (stopped) return;
    options.onError(error);
    void endWith(SPEECH_FAILED, 'provider_error');
  }

  // The opening, then the caller's words as turn detection settles them.
  replies.then(async () => {
    const opening = await session.open();
    const reply = beginSpeaking();
    for (const turn of opening) if (turn.role === 'agent') link.down({ type: 'agent_line', reply, text: turn.text });
    await playedOut(reply);
    if (!(await record(heardTurns(opening, reply)))) return void stopAll();
    if (session.ended) return hangUp(session.ended);
    timers.armSilence();
  });

  return {
    name: 'conversation',
    down: {
      caller_speaking({ interrupts }) {
        timers.disarmSilence();
        if (interrupts) bargeIn();
      },
      caller_turn({ text }) {
        options.heard?.(text);
        queueReply(text);
      },
      caller_turn_likely({ text }) {
        // Flux says so again for the same words after the caller went on and stopped: the one prepared stands.
        if (prepared?.text === text) return;
        takePrepared('');
        // While a reply is still being answered the conversation is not where the prepared one would start.
        if (answering === 0 && !session.ended) prepared = { text, reply: session.prepare(text) };
      },
      caller_turn_resumed() {
        takePrepared('');
      },
      keypad({ digit }) {
        queueReply(keypadLine(digit));
      },
      recognition_failed({ error }) {
        fail(error);
      },
      answered_by({ who, heardBy }) {
        void options.answered?.(who, heardBy).then((action) => {
          if (action.act === 'voicemail') return endWith(action.text, 'voicemail_left', 'voicemail');
          if (action.act !== 'hang_up') return;
          // A machine hung up on: what was being said to it is dropped.
          timers.disarmSilence();
          bargeIn();
          return hangUp('answering_machine');
        }, options.onError);
      },
      recognition_failed_over({ failover }) {
        hearingFailover = failover;
      },
    },
    up: {
      played_out({ reply }) {
        playings.get(reply)?.resolve();
      },
      cut_short({ reply, heard }) {
        timers.disarmSilence();
        // Once played out the reply is recorded as it was: a late word of its interruption changes nothing.
        if (reply.silenced || !playings.get(reply)?.playing) return;
        reply.silenced = true;
        reply.heardText = heard;
        playings.get(reply)!.resolve();
      },
      voice_failed({ reply, error }) {
        playings.get(reply)?.reject(error);
      },
      voice_failed_over({ reply, failover }) {
        voiceFailovers.set(reply, failover);
      },
    },
    async stop() {
      await stopAll();
      await replies.done();
    },
  };
}
