/**
 * A conversation on an audio line, as a pipeline of stages (pipeline/pipeline.ts):
 *
 *   transport in → recognition → turn detection → conversation → sentences → synthesis → playback (transport out)
 *
 * The caller's audio goes to speech-to-text, each turn to the conversation engine, and the agent's
 * reply, cut into sentences as the model writes it, to text-to-speech and back down the line.
 * Nothing here knows Twilio or a browser: a transport (media/service.ts, browser-call.ts) turns its
 * messages into calls of the returned handlers and gives the line the agent's audio is played on.
 * The line reports each `mark` once the audio before it was played, so the transcript keeps what
 * the caller heard; when the caller speaks over the agent, queued audio is cleared and the agent's
 * turn is cut at the last sentence played (barge-in). The recording observes the line.
 */
import type { SpeechToText, TextToSpeech } from '../../providers/types.ts';
import { conversationStage, type LineConversationOptions } from './pipeline/conversation.ts';
import { pipeline, type Observer } from './pipeline/pipeline.ts';
import { playbackStage, type AudioLine } from './pipeline/playback.ts';
import { recognitionStage } from './pipeline/recognition.ts';
import { sentencesStage } from './pipeline/sentences.ts';
import { synthesisStage } from './pipeline/synthesis.ts';
import { recogniserTurnsStage } from './pipeline/turns.ts';
import type { LineRecording } from './recording.ts';

export type { AudioLine } from './pipeline/playback.ts';

export interface VoiceCallOptions extends LineConversationOptions {
  stt: Extract<SpeechToText, { kind: 'live' }>;
  tts: TextToSpeech;
  voice: string;
  language: string;
  ttsModel?: string;
  sttModel?: string;
  line: AudioLine;
  /** Hears the line both ways when the call is recorded (recording.ts). */
  recording?: LineRecording;
  /** Watch the frames as they pass (the latency meter). */
  observers?: Observer[];
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

export function startVoiceCall(options: VoiceCallOptions): VoiceCall {
  const { line, recording } = options;
  const call = pipeline([...(recording ? [recordingObserver(recording)] : []), ...(options.observers ?? [])]);
  const recognition = options.stt.listen(line.format, {
    language: options.language,
    ...(options.sttModel ? { model: options.sttModel } : {}),
  });
  let stopped = false;
  const hearing = call.add((link) => recognitionStage(recognition, line.format, link));
  call.add(recogniserTurnsStage);
  const conversation = call.add((link) =>
    conversationStage(
      {
        ...options,
        speechUsed: () => ({ sttSeconds: hearing.seconds(), ttsCharacters: speaking.characters() }),
        closeLine: () => {
          stopped = true;
          return call.close();
        },
      },
      link,
    ),
  );
  call.add((link) => sentencesStage(options.language, link));
  const speaking = call.add((link) =>
    synthesisStage(
      {
        tts: options.tts,
        voice: options.voice,
        language: options.language,
        format: line.format,
        ...(options.ttsModel ? { model: options.ttsModel } : {}),
      },
      link,
    ),
  );
  const playback = call.add((link) => playbackStage(line, link));

  return {
    audio(frame) {
      if (!stopped) call.send({ type: 'caller_audio', audio: frame });
    },
    marked: (name) => playback.marked(name),
    dtmf: (digit) => call.send({ type: 'keypad', digit }),
    stop: () => conversation.stop(),
  };
}

/** The recording hears the line: the caller's audio as it enters recognition, the agent's as it is played, and each clear. */
function recordingObserver(recording: LineRecording): Observer {
  return (frame, stage) => {
    if (frame.type === 'caller_audio' && stage === 'recognition') recording.callerAudio(frame.audio);
    else if (frame.type === 'agent_audio' && stage === 'playback') recording.agentAudio(frame.audio);
    else if (frame.type === 'interrupt' && stage === 'playback') recording.cleared();
  };
}
