/**
 * A conversation on a line that carries text (Twilio's ConversationRelay): the provider listens and
 * speaks, so the caller's words arrive as text, go to the conversation engine (the same one as the
 * media pipeline's), and its reply streams back as text while the model writes it.
 *
 * The provider says what the caller heard only when they cut the agent short (`interrupted`, with
 * the words spoken until then), so a reply is recorded once the next thing happens (the caller's
 * next words, an interruption, silence, the end of the call), cut to what was heard when it was
 * interrupted. It reports no end of playback either: when the agent's words end is estimated from
 * their length (`charactersPerSecond`), so the call is not hung up over its last words and the
 * caller's silence is counted from then.
 */
import { performance } from 'node:perf_hooks';
import type { EndReason, TranscriptTurn } from '../calls/service.ts';
import { lineTimers, SILENCE_PROMPT } from './line-timers.ts';
import {
  keypadLine,
  oneAfterAnother,
  pipelineLine,
  SPEECH_FAILED,
  type LineConversationOptions,
  type SpeechUsage,
} from './pipeline/conversation.ts';

/** The far end of the line: speaks the text it is sent, in order; `last` closes a reply. */
export interface TextLine {
  send(token: string, last: boolean): void;
}

/** The line's end of playback is estimated (its provider says nothing of it): see the file's comment. */
export interface RelayCallOptions extends LineConversationOptions {
  line: TextLine;
  /** The provider's speaking rate, by which the end of the agent's words is estimated. */
  charactersPerSecond: number;
}

export interface RelayCall {
  /** The caller's words; `last` once the utterance is complete (earlier prompts only say they are talking). */
  prompt(text: string, last: boolean): void;
  /** The caller spoke over the agent: the provider stopped speaking after `heard`. */
  interrupted(heard: string): void;
  /** The caller pressed a key. */
  dtmf(digit: string): void;
  /** The line closed (the caller hung up, or the call ended): stop speaking; settles once the last turns are recorded. */
  stop(): Promise<void>;
}

/** Our speech providers do not run on a relayed call: the provider listens and speaks, and bills that itself. */
const NO_SPEECH: SpeechUsage = { sttSeconds: 0, ttsCharacters: 0 };

/** One reply on its way to the caller: the text sent so far, its turns once written, and what was heard of it if cut short. */
interface Reply {
  sent: string;
  turns?: TranscriptTurn[];
  heard?: string;
  settled: boolean;
}

export function startRelayCall(options: RelayCallOptions): RelayCall {
  const { session, line, clock } = options;
  const started = clock.now().getTime();
  let stopped = false;
  /** The reply the provider speaks (or last spoke), until it is settled. */
  let current: Reply | undefined;
  /** When everything sent so far will have been spoken (performance.now() time), by estimate. */
  let playsUntil = 0;
  /** Ends the wait for the words to be played: an interruption, or the end of the call. */
  let wake = () => {};
  /** Utterances are answered one after another. */
  const replies = oneAfterAnother(
    () => stopped,
    (error) => {
      options.onError(error);
      void endWith(SPEECH_FAILED, 'provider_error');
    },
  );
  const timers = lineTimers(options, {
    promptSilence: () =>
      replies.then(async () => {
        await settle();
        sayLine(SILENCE_PROMPT);
        armSilence();
      }),
    end: (goodbye, reason) => void endWith(goodbye, reason),
  });
  /** Silence is counted from when the words sent so far will have been spoken. */
  const armSilence = () => timers.armSilence(Math.max(0, playsUntil - performance.now()));

  function begin(): Reply {
    current = { sent: '', settled: false };
    return current;
  }

  function speak(reply: Reply, text: string): void {
    if (stopped || reply.heard !== undefined || !text) return;
    line.send(text, false);
    reply.sent += text;
    playsUntil = Math.max(playsUntil, performance.now()) + (text.length * 1000) / options.charactersPerSecond;
  }

  /** The reply is written: what was not streamed is sent whole, and the reply is closed. */
  function written(reply: Reply, turns: TranscriptTurn[], streamed: (turn: TranscriptTurn) => boolean): void {
    for (const turn of turns) if (turn.role === 'agent' && !streamed(turn)) speak(reply, reply.sent ? ` ${turn.text}` : turn.text);
    if (!stopped && reply.heard === undefined) line.send('', true);
    reply.turns = turns;
  }

  /** One whole line of the call's own (silence, goodbye): sent and, once settled, recorded. */
  function sayLine(text: string): Reply {
    const reply = begin();
    speak(reply, text);
    written(reply, [pipelineLine(text, clock, started)], () => true);
    return reply;
  }

  /** Resolves once the words sent so far were played, by estimate, or at once on an interruption or the end of the call. */
  function playedOut(): Promise<void> {
    const wait = playsUntil - performance.now();
    if (wait <= 0 || stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, wait);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      wake = done;
    });
  }

  /** The reply as the caller heard it, recorded once; the engine keeps in mind only what they heard. */
  async function settle(reply: Reply | undefined = current): Promise<void> {
    if (!reply?.turns || reply.settled) return;
    reply.settled = true;
    let turns = reply.turns;
    if (reply.heard !== undefined) {
      turns = cutToHeard(turns, reply.heard);
      session.interrupted(reply.heard);
    }
    if (!(await options.record(turns, NO_SPEECH))) await stopAll();
  }

  /** The reply is out: the call goes on (the caller's silence counted once it is played) or ends. */
  async function replied(reply: Reply): Promise<void> {
    // Cut short while it was written, or overtaken by the call's own last words: settled now.
    if (reply !== current || reply.heard !== undefined) await settle(reply);
    if (stopped) return;
    if (session.ended) return end(session.ended);
    armSilence();
  }

  /** One utterance answered: the reply streamed as it is written. */
  async function respond(heard: string): Promise<void> {
    await settle();
    const reply = begin();
    let streamedRound: number | undefined;
    const turns = await session.hear(heard, {
      onText(delta, round) {
        // A tool ran between two answers of the model: the next one is a sentence of its own.
        if (streamedRound !== undefined && round !== streamedRound) speak(reply, ' ');
        streamedRound = round;
        speak(reply, delta);
      },
    });
    // What the model did not stream (the retrieval agent, the fallback line) is sent whole.
    written(reply, turns, (turn) => turn.by?.startsWith('model:') === true);
    await replied(reply);
  }

  /** The agent ended the conversation: its last words played, the reply recorded, then the call ends. */
  async function end(reason: EndReason): Promise<void> {
    await playedOut();
    await settle();
    await hangUp(reason);
  }

  /** The call's own last words (silence, time limit, a failure): spoken, recorded, then the call ends. */
  async function endWith(text: string, reason: EndReason): Promise<void> {
    if (stopped) return;
    timers.disarmSilence();
    // A reply still being written is cut where it stands: the caller hears the goodbye next.
    if (current && !current.turns) current.heard ??= current.sent;
    try {
      await settle();
      const goodbye = sayLine(text);
      await playedOut();
      await settle(goodbye);
    } catch (error) {
      // A recording that failed: the call still ends.
      options.onError(error);
    }
    await hangUp(reason);
  }

  async function hangUp(reason: EndReason): Promise<void> {
    if (stopped) return;
    await stopAll();
    await options.hangUp(reason).catch(options.onError);
  }

  async function stopAll(): Promise<void> {
    if (stopped) return;
    stopped = true;
    timers.stop();
    wake();
  }

  function queueReply(text: string): void {
    timers.heard();
    replies.then(() => respond(text));
  }

  // The opening (the first message, or the model's own, not streamed) is sent as soon as the line is up.
  replies.then(async () => {
    const reply = begin();
    written(reply, await session.open(), () => false);
    await replied(reply);
  });

  return {
    prompt(text, last) {
      timers.disarmSilence();
      if (last && text.trim()) queueReply(text.trim());
    },
    interrupted(heard) {
      timers.disarmSilence();
      const reply = current;
      if (!reply || reply.settled || reply.heard !== undefined) return;
      // The provider stopped speaking: nothing more of the reply is sent, and it is recorded as heard.
      reply.heard = heard;
      playsUntil = performance.now();
      wake();
      if (reply.turns) replies.then(() => settle(reply));
    },
    dtmf(digit) {
      queueReply(keypadLine(digit));
    },
    async stop() {
      await stopAll();
      await replies.done();
      await settle().catch(options.onError);
    },
  };
}

/**
 * A reply's turns cut at what the provider says was heard: each agent turn keeps its share of
 * `heard`, in order, and is marked interrupted when that is not all of it; one the caller heard
 * nothing of is left out. Tool turns stay: they ran.
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
