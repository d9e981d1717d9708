/**
 * What flows through a call's voice pipeline (pipeline.ts). Frames go down, from the caller's
 * mouth to the caller's ear: the caller's audio, what the recogniser heard, the caller's turn, the
 * agent's words, its sentences and their audio. A few go back up, from the line to the
 * conversation: a reply played out, or its voice failed. An interruption is a frame too: the
 * conversation sends it down, and each stage below drops what it holds of the reply cut short.
 */
import type { AnsweredBy, RecognitionEvent } from '../../../providers/types.ts';
import type { TranscriptTurn } from '../../calls/service.ts';

/** The agent's backup took over from a part that failed or stalled mid-call (the transcript's `failover`). */
export type Failover = NonNullable<TranscriptTurn['failover']>;

/** One sentence on its way to the caller: synthesised, played, and heard once its mark comes back. */
export interface Spoken {
  text: string;
  /** The model's answer within the reply it belongs to (-1: not the model's: first message, retrieval agent, fallback). */
  round: number;
  /** The sentence's name on the line: the line reports it once the audio before it was played. */
  mark: string;
  heard: boolean;
  /** An interruption dropped it from the line: its mark, if the line still reports it, says nothing. */
  cleared: boolean;
}

/** One reply of the agent (an answer, the opening, a line of the pipeline's own) as its sentences go down the line. */
export interface Reply {
  /** Its sentences in order, as the sentence stage cut them. */
  sentences: Spoken[];
  /** The caller cut it short: what is still written of it is not spoken. */
  silenced: boolean;
  /**
   * What the caller heard of it, in words, when a line that speaks text itself (ConversationRelay)
   * says so: it was cut short there. Lines of audio know what was heard by their sentences' marks.
   */
  heardText?: string;
}

export type DownFrame =
  /** The caller's audio, in the line's format, as it arrives. */
  | { type: 'caller_audio'; audio: Buffer }
  /** The caller pressed a key. */
  | { type: 'keypad'; digit: string }
  /** What the recogniser hears (speech started, words, the end of an utterance). */
  | RecognitionEvent
  /** The recogniser failed: the call cannot hear the caller any more. */
  | { type: 'recognition_failed'; error: Error }
  /** The recogniser failed and the agent's backup recogniser hears the caller from now on. */
  | { type: 'recognition_failed_over'; failover: Failover }
  /** The caller is talking; `interrupts`: it is speech, not noise, so an agent speaking stops. */
  | { type: 'caller_speaking'; interrupts: boolean }
  /** The caller's turn is over: what they said. */
  | { type: 'caller_turn'; text: string }
  /** The caller's turn is probably over (an eager end of turn): a reply may be prepared, not spoken. */
  | { type: 'caller_turn_likely'; text: string }
  /** After a likely end, the caller went on: a reply prepared for it is dropped. */
  | { type: 'caller_turn_resumed' }
  /** Who answered the call, as the line heard it: a machine's beep, or the words of an assistant, a menu, a person. */
  | { type: 'answered_by'; who: AnsweredBy; heardBy: 'beep' | 'words' }
  /** The model's words as it writes them, in its `round`-th answer of the reply. */
  | { type: 'agent_text'; reply: Reply; text: string; round: number }
  /** A line spoken whole (the first message, the retrieval agent's answer, a line of the pipeline's own). */
  | { type: 'agent_line'; reply: Reply; text: string }
  /** Everything of the reply has been written. */
  | { type: 'reply_end'; reply: Reply }
  /** A sentence to be spoken. */
  | { type: 'sentence'; reply: Reply; spoken: Spoken }
  /** The agent's audio, in the line's format, never empty. */
  | { type: 'agent_audio'; audio: Buffer }
  /** All of a sentence's audio went before this: the line is to report its mark. */
  | { type: 'sentence_sent'; spoken: Spoken }
  /** The caller cut the agent short: what is queued below is dropped. */
  | { type: 'interrupt' };

export type UpFrame =
  /** Every sentence of the reply was played (or the rest was cleared). */
  | { type: 'played_out'; reply: Reply }
  /** The far end stopped speaking the reply after `heard`: the caller spoke over it (ConversationRelay). */
  | { type: 'cut_short'; reply: Reply; heard: string }
  /** The voice failed while speaking the reply: the rest of it is not spoken. */
  | { type: 'voice_failed'; reply: Reply; error: unknown }
  /** The voice failed or stalled before a sentence of the reply: the agent's backup voice speaks it and all after. */
  | { type: 'voice_failed_over'; reply: Reply; failover: Failover };

export type Frame = DownFrame | UpFrame;
