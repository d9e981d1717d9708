/**
 * A test suite's scenario played as a phone call through the voice pipeline (voice-call.ts, as a
 * media stream's call is assembled), on a line that lives in the process: no telephony provider.
 *
 * The scripted caller's words are spoken by eSpeak NG (the offline voice) as 8 kHz μ-law phone
 * audio and sent down the line; the agent hears them through its own speech-to-text, answers, and
 * its reply is synthesised in its own voice. The line carries silence at its own pace (20 ms every
 * 20 ms) for the whole call, as a phone line does: the caller's words reach it at once, then the
 * pause after them passes in real time, so the end of turn and the latency at the caller's ear
 * (pipeline/latency.ts) are measured as on a call. The agent's audio is taken as fast as it comes
 * and each mark reported at once: the caller waits for the reply to be over before speaking again,
 * so when it was heard changes nothing the transcript or the latency record (which ends at the
 * reply's first audio) says; playing it at the line's pace would only make a run last as long as
 * the agent talks. The transcript holds what the recogniser heard (docs/decisions/0063-suites-through-the-voice-pipeline.md).
 */
import { performance } from 'node:perf_hooks';
import { bytesFor, createAudioConverter, PHONE_AUDIO } from '../../platform/audio.ts';
import type { Deps, TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import { ProviderError } from '../../providers/errors.ts';
import { espeakSpeech } from '../../providers/espeak/speech.ts';
import type { Agent } from '../agents/schemas.ts';
import * as agents from '../agents/service.ts';
import type * as calls from '../calls/service.ts';
import type { Session } from '../conversation/service.ts';
import { agentSpeechFigures, liveSpeech, pipelineSpeech } from './line-speech.ts';
import { startVoiceCall, type AudioLine, type VoiceCall } from './voice-call.ts';

/** The line's frames: 20 ms, as Twilio's media streams carry them. */
const FRAME_MS = 20;
const FRAME_BYTES = bytesFor(FRAME_MS, PHONE_AUDIO);
/** μ-law's digital silence. */
const SILENT_FRAME = Buffer.alloc(FRAME_BYTES, 0xff);

export interface TestLineOptions {
  agent: Agent;
  session: Session;
  /** The caller's next words, the conversation so far (as the agent heard it) before them; null once the caller is done. */
  nextLine(transcript: calls.TranscriptTurn[]): Promise<string | null>;
  /** The turns, as they are recorded (what the recogniser heard, what the caller heard of the agent). */
  transcript: calls.TranscriptTurn[];
}

export interface TestLineResult {
  /** What the line's speech used: the seconds the recogniser heard, the characters synthesised. */
  speech: calls.SpeechFigures;
  /** Why the call ended (the agent, or the line: silence, a failure, the time limit); null when the caller was done first. */
  ended: calls.EndReason | null;
}

/**
 * Why an agent cannot be tested through the voice pipeline (a 409), or undefined when it can: it
 * needs a recogniser, and none ships offline (docs/decisions/0057-no-offline-recogniser.md).
 */
export function voiceTestRefusal(agent: Pick<Agent, 'name' | 'stt' | 'realtime'>) {
  if (agent.realtime) return appError('TEST_SUITE_VOICE_SPEECH_TO_SPEECH', { agent: agent.name });
  if (!agent.stt) return appError('TEST_SUITE_VOICE_NEEDS_STT', { agent: agent.name });
  return undefined;
}

/** The scenario's conversation on a test line, from the agent's opening until the caller is done or the call ends. */
export async function converseOnTestLine(deps: Deps, ctx: TenantCtx, options: TestLineOptions): Promise<TestLineResult> {
  const { agent, session, transcript } = options;
  const refusal = voiceTestRefusal(agent);
  if (refusal) throw refusal;
  const agentSpeech = await agents.speechOf(deps, ctx, agent);
  const speech = liveSpeech(deps, { ...agentSpeech, stt: agentSpeech.stt! });
  const callerVoice = agents.defaultVoice(await espeakSpeech.voices(), agent.language)?.id;
  if (!callerVoice) throw new ProviderError(`eSpeak NG has no voice for ${agent.language} to play the caller.`, { retryable: false });
  const figuresOf = agentSpeechFigures(agentSpeech);

  let figures = figuresOf({ sttSeconds: 0, ttsCharacters: 0 });
  let ended: calls.EndReason | null = null;
  /** Steps recorded (the opening, each reply, the pipeline's lines), and who waits for the next. */
  let steps = 0;
  let waiting: (() => void)[] = [];
  const stepped = () => {
    const woken = waiting;
    waiting = [];
    for (const wake of woken) wake();
  };
  const until = (done: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => (done() || ended !== null ? resolve() : waiting.push(check));
      check();
    });

  const line: AudioLine = {
    format: PHONE_AUDIO,
    // Taken as fast as it comes: played, as far as the caller is concerned, once its mark comes back.
    play: () => undefined,
    mark: (name) => setImmediate(() => call.marked(name)),
    clear: () => undefined,
  };
  const call: VoiceCall = startVoiceCall({
    ...pipelineSpeech(deps, agent, speech),
    session,
    clock: deps.clock,
    line,
    record: async (turns, spoken) => {
      if (ended !== null) return false;
      transcript.push(...turns);
      figures = figuresOf(spoken);
      steps++;
      stepped();
      return true;
    },
    hangUp: async (reason) => {
      ended = reason;
      stepped();
    },
    silenceTimeoutMs: deps.config.voice.silenceSeconds * 1000,
    maxDurationMs: deps.config.dialer.maxCallSeconds * 1000,
    onError: (error) => deps.log.warn({ agentId: agent.id, err: error }, 'test suite voice line'),
  });

  // The line's silence at its pace: as many frames as the time since the call began holds, whatever the timer's drift.
  const began = performance.now();
  let sentMs = 0;
  const ticker = setInterval(() => {
    for (; sentMs + FRAME_MS <= performance.now() - began; sentMs += FRAME_MS) call.audio(SILENT_FRAME);
  }, FRAME_MS);
  const contactTurns = () => transcript.filter((turn) => turn.role === 'contact').length;
  try {
    await until(() => steps > 0);
    while (ended === null) {
      const text = await options.nextLine(transcript);
      if (text === null || ended !== null) break;
      const words = await spokenOnLine(text, callerVoice, agent.language);
      const heard = contactTurns();
      // At once: the line's time runs ahead of the clock by the words, and the pause after them passes in real time.
      for (let at = 0; at < words.length; at += FRAME_BYTES) call.audio(words.subarray(at, at + FRAME_BYTES));
      // Until the agent answered what it heard (or the line ended the call: silence, a failure).
      await until(() => contactTurns() > heard);
    }
  } finally {
    clearInterval(ticker);
    await call.stop();
  }
  return { speech: figures, ended };
}

/** What the caller says, as a phone line carries it (8 kHz μ-law), in eSpeak NG's `voice`. */
export async function spokenOnLine(text: string, voice: string, language: string): Promise<Buffer> {
  const synthesis = espeakSpeech.synthesize({ text, voice, language, format: PHONE_AUDIO });
  const chunks: Buffer[] = [];
  for await (const chunk of synthesis.audio) chunks.push(chunk);
  const converter = await createAudioConverter(synthesis.format, PHONE_AUDIO);
  try {
    return converter.convert(Buffer.concat(chunks));
  } finally {
    converter.close();
  }
}
