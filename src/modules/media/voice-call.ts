/**
 * A conversation on an audio line, as a pipeline of stages (pipeline/pipeline.ts):
 *
 *   transport in → recognition → turn detection → (answerer) → interruptions → conversation → sentences → synthesis → playback (transport out)
 *
 * The caller's audio goes to speech-to-text, each turn to the conversation engine, and the agent's
 * reply, cut into sentences as the model writes it, to text-to-speech and back down the line.
 * Nothing here knows Twilio or a browser: a transport (media/service.ts, browser-call.ts) turns its
 * messages into calls of the returned handlers and gives the line the agent's audio is played on.
 * The line reports each `mark` once the audio before it was played, so the transcript keeps what
 * the caller heard; when the caller speaks over the agent, queued audio is cleared and the agent's
 * turn is cut at the last sentence played (barge-in). The recording observes the line.
 */
import type { RealtimeConversation, RealtimeEvent, SpeechToText, TextToSpeech } from '../../providers/types.ts';
import { conversationStage, type ConversationStage, type LineConversationOptions } from './pipeline/conversation.ts';
import { answererStage } from './pipeline/answerer.ts';
import { interruptions, type InterruptionsOptions } from './pipeline/interruptions.ts';
import { pipeline, type Observer, type Pipeline } from './pipeline/pipeline.ts';
import { latencyMeter } from './pipeline/latency.ts';
import { playbackStage, type AudioLine, type PlaybackStage } from './pipeline/playback.ts';
import { recognitionStage } from './pipeline/recognition.ts';
import { sentencesStage } from './pipeline/sentences.ts';
import { speechToSpeechStage, type SpeechToSpeechStage } from './pipeline/speech-to-speech.ts';
import { synthesisStage } from './pipeline/synthesis.ts';
import { turnsStage } from './pipeline/turns.ts';
import type { LineRecording } from './recording.ts';
import { turnDetectorOf } from './turn-detection/registry.ts';
import type { TurnDetectorSettings } from './turn-detection/types.ts';
import type { EndOfTurn } from '../agents/schemas.ts';

export type { AudioLine } from './pipeline/playback.ts';

type LiveRecogniser = Extract<SpeechToText, { kind: 'live' }>;

export interface VoiceCallOptions extends LineConversationOptions {
  stt: LiveRecogniser;
  tts: TextToSpeech;
  voice: string;
  language: string;
  ttsModel?: string;
  sttModel?: string;
  /** How the caller's turn is found to be over: the agent's detector and the service's settings. */
  turns: TurnChoice;
  /** The providers' names, as the transcript names them when a backup takes over. */
  sttProvider?: string;
  ttsProvider?: string;
  /** The agent's backup recogniser and voice, and how long a voice may stall before its backup takes over. */
  backup?: {
    stt?: { stt: LiveRecogniser; provider: string; model?: string };
    tts?: { tts: TextToSpeech; provider: string; voice: string; model?: string };
    stallMs: number;
  };
  line: AudioLine;
  /** Hears the line both ways when the call is recorded (recording.ts). */
  recording?: LineRecording;
  /** Watch the frames as they pass. */
  observers?: Observer[];
  /** The caller spoke over the agent without interrupting it: a backchannel, a sound, its own echo (logged). */
  ignored?: InterruptionsOptions['ignored'];
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

/** The agent's end-of-turn detector (`stt.endOfTurn`) and the service's settings for it. */
export type TurnChoice = { endOfTurn?: EndOfTurn | undefined } & Omit<TurnDetectorSettings, 'format' | 'language'>;

/** The line's stages from the top: the recogniser of the caller's speech, and turn detection by the agent's detector. */
function listeningStages(
  call: Pipeline,
  options: Pick<VoiceCallOptions, 'stt' | 'language' | 'sttModel' | 'line' | 'sttProvider' | 'turns'> & {
    backup?: Pick<NonNullable<VoiceCallOptions['backup']>, 'stt'>;
  },
) {
  const listen = (stt: LiveRecogniser, model: string | undefined) =>
    stt.listen(options.line.format, { language: options.language, ...(model ? { model } : {}) });
  const backup = options.backup?.stt;
  const hearing = call.add((link) =>
    recognitionStage(
      listen(options.stt, options.sttModel),
      options.line.format,
      link,
      backup && { listen: () => listen(backup.stt, backup.model), from: options.sttProvider ?? 'speech-to-text', to: backup.provider },
    ),
  );
  const { endOfTurn, ...settings } = options.turns;
  const detector = turnDetectorOf(endOfTurn, { ...settings, format: options.line.format, language: options.language });
  call.add((link) => turnsStage(detector, link));
  return hearing;
}

/** An empty line with its observers: the recording, whoever watches, and the stages' own (`stages`). */
const observedLine = (options: Pick<VoiceCallOptions, 'recording' | 'observers'>, stages: Observer[] = []) =>
  pipeline([...(options.recording ? [recordingObserver(options.recording)] : []), ...(options.observers ?? []), ...stages]);

/** The transport's handlers of a line whose conversation stage is `conversation`. */
function voiceCallOf(call: Pipeline, playback: PlaybackStage, conversation: ConversationStage, stopped: () => boolean): VoiceCall {
  return {
    audio(frame) {
      if (!stopped()) call.send({ type: 'caller_audio', audio: frame });
    },
    marked: (name) => playback.marked(name),
    dtmf: (digit) => call.send({ type: 'keypad', digit }),
    stop: () => conversation.stop(),
  };
}

export function startVoiceCall(options: VoiceCallOptions): VoiceCall {
  const { line } = options;
  // Which of the caller's sounds over the agent stop it (not a backchannel, a cough, its own echo).
  const meant = interruptions({
    language: options.language,
    format: line.format,
    ...(options.ignored ? { ignored: options.ignored } : {}),
  });
  const meter = latencyMeter(line.format);
  const call = observedLine({ ...options, observers: [meter.observe, ...(options.observers ?? [])] }, [meant.observe]);
  let stopped = false;
  const hearing = listeningStages(call, options);
  // Who answered an outgoing call: the beep, an assistant's or a menu's words.
  if (options.answered) call.add((link) => answererStage({ format: line.format }, link));
  call.add(meant.stage);
  const conversation = call.add((link) =>
    conversationStage(
      {
        ...options,
        speechUsed: () => ({
          sttSeconds: hearing.seconds(),
          ttsCharacters: speaking.characters(),
          ...(options.backup && { backup: { sttSeconds: hearing.backupSeconds(), ttsCharacters: speaking.backupCharacters() } }),
        }),
        latencyOf: meter.of,
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
        provider: options.ttsProvider ?? 'text-to-speech',
        ...(options.backup?.tts && { backup: { ...options.backup.tts, stallMs: options.backup.stallMs } }),
      },
      link,
    ),
  );
  const playback = call.add((link) => playbackStage(line, link));
  return voiceCallOf(call, playback, conversation, () => stopped);
}

export interface SpeechToSpeechCallOptions extends LineConversationOptions, Pick<VoiceCallOptions, 'line' | 'recording' | 'observers'> {
  /** The speech-to-speech model: its name, and how a call's conversation with its server is opened. */
  model: string;
  connect(listener: (event: RealtimeEvent) => void): Promise<RealtimeConversation>;
  /** Our turn detection, when it decides the caller's turns (else the model's server does): the recogniser it listens with. */
  listen?: Pick<VoiceCallOptions, 'stt' | 'language' | 'sttModel' | 'turns'>;
}

/**
 * A conversation with a speech-to-speech model on an audio line (pipeline/speech-to-speech.ts): the
 * caller's audio to the model and its audio to playback, through our turn detection first when
 * `listen` is given.
 */
export function startSpeechToSpeechCall(options: SpeechToSpeechCallOptions): VoiceCall {
  const { line } = options;
  const call = observedLine(options);
  let stopped = false;
  const hearing = options.listen ? listeningStages(call, { ...options.listen, line }) : undefined;
  const conversation: SpeechToSpeechStage = call.add((link) =>
    speechToSpeechStage(
      {
        ...options,
        turnDetection: hearing ? 'pipeline' : 'server',
        format: line.format,
        speechUsed: () => ({ sttSeconds: hearing?.seconds() ?? conversation.transcribedSeconds(), ttsCharacters: 0 }),
        closeLine: () => {
          stopped = true;
          return call.close();
        },
      },
      link,
    ),
  );
  const playback = call.add((link) => playbackStage(line, link));
  return voiceCallOf(call, playback, conversation, () => stopped);
}

/** The recording hears the line: the caller's audio as it enters recognition, the agent's as it is played, and each clear. */
function recordingObserver(recording: LineRecording): Observer {
  /** A recogniser hears the caller first on this line (a speech-to-speech model then hears them after it). */
  let recognised = false;
  return (frame, stage) => {
    if (frame.type === 'caller_audio' && stage === 'recognition') recognised = true;
    // The caller's audio as it enters the first stage that hears it: recognition, or the speech-to-speech model.
    if (frame.type === 'caller_audio' && (stage === 'recognition' || (stage === 'speech-to-speech' && !recognised)))
      recording.callerAudio(frame.audio);
    else if (frame.type === 'agent_audio' && stage === 'playback') recording.agentAudio(frame.audio);
    else if (frame.type === 'interrupt' && stage === 'playback') recording.cleared();
  };
}
