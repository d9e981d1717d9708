/**
 * An agent's speech as the staged pipeline takes it on a phone line (voice-call.ts), whatever
 * carries the line: a provider's media stream (service.ts) or a test suite's line (test-line.ts).
 */
import type { Deps } from '../../platform/context.ts';
import type { SpeechToText } from '../../providers/types.ts';
import type { Agent } from '../agents/schemas.ts';
import type { AgentSpeech } from '../agents/service.ts';
import type * as calls from '../calls/service.ts';
import type { SpeechUsage } from './pipeline/conversation.ts';
import { turnChoiceOf } from './turn-detection/registry.ts';
import { listenInUtterances, type LiveRecogniser } from './utterance-recognition.ts';
import type { VoiceCallOptions } from './voice-call.ts';

export type ListeningSpeech = AgentSpeech & { stt: SpeechToText };

/** A recogniser of whole utterances hears them as the voice-activity detection cuts them; a live one hears the line. */
export function liveSpeech(deps: Pick<Deps, 'config'>, speech: ListeningSpeech) {
  const live = (heard: SpeechToText): LiveRecogniser =>
    heard.kind === 'live' ? heard : listenInUtterances(heard, { pauseMs: deps.config.voice.pauseMs });
  const { stt: backupStt, tts: backupTts } = speech.backup ?? {};
  const backup = {
    ...(backupStt && { stt: { ...backupStt, stt: live(backupStt.stt) } }),
    ...(backupTts && { tts: backupTts }),
  };
  return { ...speech, stt: live(speech.stt), backup };
}

/** What the staged pipeline listens and speaks with on one of the agent's lines. */
export function pipelineSpeech(
  deps: Pick<Deps, 'config'>,
  agent: Pick<Agent, 'stt' | 'language'>,
  speech: ReturnType<typeof liveSpeech>,
): Pick<
  VoiceCallOptions,
  'stt' | 'language' | 'sttModel' | 'turns' | 'tts' | 'voice' | 'ttsModel' | 'sttProvider' | 'ttsProvider' | 'backup'
> {
  return {
    stt: speech.stt,
    language: agent.language,
    ...(speech.sttModel ? { sttModel: speech.sttModel } : {}),
    turns: turnChoiceOf(deps.config, agent),
    tts: speech.tts,
    voice: speech.voice,
    ...(speech.ttsModel ? { ttsModel: speech.ttsModel } : {}),
    ...(speech.sttProvider ? { sttProvider: speech.sttProvider } : {}),
    ttsProvider: speech.ttsProvider,
    backup: { ...speech.backup, stallMs: deps.config.voice.failoverStallMs },
  };
}

/** What the line's speech used, in the call's terms: each part's provider named when it ran, the backup's share apart. */
export function speechFigures(
  spoken: SpeechUsage,
  providers: { stt: string | null; tts: string | null; backupStt?: string | null; backupTts?: string | null },
): calls.SpeechFigures {
  const { backup } = spoken;
  return {
    sttSeconds: spoken.sttSeconds,
    ttsCharacters: spoken.ttsCharacters,
    sttProvider: spoken.sttSeconds - (backup?.sttSeconds ?? 0) > 0 ? providers.stt : null,
    ttsProvider: spoken.ttsCharacters - (backup?.ttsCharacters ?? 0) > 0 ? providers.tts : null,
    ...(backup && {
      backup: {
        ...backup,
        sttProvider: backup.sttSeconds > 0 ? (providers.backupStt ?? null) : null,
        ttsProvider: backup.ttsCharacters > 0 ? (providers.backupTts ?? null) : null,
      },
    }),
  };
}

/** `speechFigures` with the agent's providers. */
export const agentSpeechFigures = (speech: AgentSpeech) => (spoken: SpeechUsage) =>
  speechFigures(spoken, {
    stt: speech.sttProvider,
    tts: speech.ttsProvider,
    backupStt: speech.backup?.stt?.provider ?? null,
    backupTts: speech.backup?.tts?.provider ?? null,
  });
