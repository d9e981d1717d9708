/**
 * The line of a ConversationRelay call, the transport's way out when the provider speaks: the
 * agent's words go to it as text while the model writes them, and a reply is closed with an empty
 * last token. The provider reports no end of playback, so when the agent's words end is estimated
 * from their length (`charactersPerSecond`): the reply is played out then, or as soon as the caller
 * speaks without having cut it short (the provider would have said so). When they do cut it short,
 * the provider says what they heard, and nothing more of the reply is sent.
 */
import { performance } from 'node:perf_hooks';
import type { Reply } from './frames.ts';
import type { Stage, StageLink } from './pipeline.ts';

/** The far end of the line: speaks the text it is sent, in order; `last` closes a reply. */
export interface TextLine {
  send(token: string, last: boolean): void;
}

export interface RelayLineStage extends Stage {
  /** The caller spoke after the reply without cutting it short: they heard all of it. */
  heardAll(): void;
  /** The provider stopped speaking after `heard`: the caller spoke over the agent. */
  cutShort(heard: string): void;
}

export function relayLineStage(line: TextLine, charactersPerSecond: number, link: StageLink): RelayLineStage {
  /** The reply being sent (or last sent): the text sent of it, the model's answer it is in, whether it is closed. */
  let current: { reply: Reply; sent: string; round?: number; timer?: ReturnType<typeof setTimeout>; heardAll?: boolean } | undefined;
  /** When everything sent so far will have been spoken (performance.now() time), by estimate. */
  let playsUntil = 0;

  function sending(reply: Reply) {
    if (current?.reply === reply) return current;
    // A new reply while the last was still being written (the call's own last words): that one is
    // cut where it stands, and the caller is taken to have heard what was sent of it.
    if (current && !current.reply.silenced && current.timer === undefined) {
      current.reply.silenced = true;
      current.reply.heardText ??= current.sent;
    }
    return (current = { reply, sent: '' });
  }

  function speak(state: NonNullable<typeof current>, text: string): void {
    if (state.reply.silenced || !text) return;
    line.send(text, false);
    state.sent += text;
    playsUntil = Math.max(playsUntil, performance.now()) + (text.length * 1000) / charactersPerSecond;
  }

  function playedOut(state: NonNullable<typeof current>): void {
    clearTimeout(state.timer);
    link.up({ type: 'played_out', reply: state.reply });
  }

  return {
    name: 'relay line',
    down: {
      agent_text({ reply, text, round }) {
        if (reply.silenced) return;
        const state = sending(reply);
        // A tool ran between two answers of the model: the next one is a sentence of its own.
        if (state.round !== undefined && round !== state.round) speak(state, ' ');
        state.round = round;
        speak(state, text);
      },
      agent_line({ reply, text }) {
        if (reply.silenced) return;
        const state = sending(reply);
        speak(state, state.sent ? ` ${text}` : text);
      },
      reply_end({ reply }) {
        if (reply.silenced) return;
        const state = sending(reply);
        line.send('', true);
        state.timer = setTimeout(() => playedOut(state), state.heardAll ? 0 : Math.max(0, playsUntil - performance.now()));
      },
    },
    heardAll() {
      if (!current) return;
      // Still being written: played out as soon as it is closed.
      current.heardAll = true;
      if (current.timer !== undefined) playedOut(current);
    },
    cutShort(heard) {
      if (!current) return;
      clearTimeout(current.timer);
      playsUntil = performance.now();
      link.up({ type: 'cut_short', reply: current.reply, heard });
    },
    close() {
      clearTimeout(current?.timer);
    },
  };
}
