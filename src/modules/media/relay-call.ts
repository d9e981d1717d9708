/**
 * A conversation on a line that carries text (Twilio's ConversationRelay): the provider listens and
 * speaks, so the caller's words arrive as text and go straight to the conversation stage (the same
 * as a media stream's, pipeline/conversation.ts), and its reply goes to the provider as text while
 * the model writes it (pipeline/relay-line.ts, which also estimates when the words were spoken, the
 * provider saying nothing of it). The provider says what the caller heard only when they cut the
 * agent short (`interrupted`, with the words spoken until then): the reply is recorded cut there.
 */
import { conversationStage, type LineConversationOptions, type SpeechUsage } from './pipeline/conversation.ts';
import { pipeline } from './pipeline/pipeline.ts';
import { relayLineStage, type TextLine } from './pipeline/relay-line.ts';

export type { TextLine } from './pipeline/relay-line.ts';

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

export function startRelayCall(options: RelayCallOptions): RelayCall {
  const call = pipeline();
  const conversation = call.add((link) =>
    conversationStage({ ...options, speechUsed: () => NO_SPEECH, closeLine: () => call.close() }, link),
  );
  const relay = call.add((link) => relayLineStage(options.line, options.charactersPerSecond, link));
  return {
    prompt(text, last) {
      // The provider decides when the caller interrupts (it tells us): their talking alone stops nothing here.
      call.send({ type: 'caller_speaking', interrupts: false });
      if (!last || !text.trim()) return;
      relay.heardAll();
      call.send({ type: 'caller_turn', text: text.trim() });
    },
    interrupted: (heard) => relay.cutShort(heard),
    dtmf: (digit) => call.send({ type: 'keypad', digit }),
    stop: () => conversation.stop(),
  };
}
