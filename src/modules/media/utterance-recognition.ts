/**
 * Listening for an utterance recogniser (Whisper-style `/audio/transcriptions`), which hears a
 * whole utterance at once and says nothing while the caller talks. The pipeline's own
 * voice-activity detection (Silero, voice-activity.ts) cuts the line's audio into utterances: the
 * caller started speaking once enough of it is voice (a cough or a click is not), and paused once
 * the voice has been gone for the pause (VOICE_PAUSE_MS); that utterance alone is sent to the
 * recogniser. Whether the pause ends the caller's turn is turn detection's to decide
 * (pipeline/turns.ts): the caller may go on, and the next utterance joins the same turn. The
 * result is the same live recognition a streaming recogniser gives the pipeline (`speech_started`,
 * a final `transcript`, `utterance_end`), so voice-call.ts takes either.
 */
import { createAudioConverter, joinedSamples, pcm16Samples, type AudioConverter, type AudioFormat } from '../../platform/audio.ts';
import { eventQueue } from '../../providers/event-queue.ts';
import type { LiveRecognition, RecognitionEvent, RecognitionOptions, SpeechToText } from '../../providers/types.ts';
import { detectVoiceActivity, type VadRate } from './voice-activity.ts';

export type UtteranceRecogniser = Extract<SpeechToText, { kind: 'utterance' }>;
export type LiveRecogniser = Extract<SpeechToText, { kind: 'live' }>;

export interface UtteranceSettings {
  /** How long the voice must be gone before the caller's utterance is over (a pause, not yet the turn's end). */
  pauseMs: number;
}

/** Silero's own thresholds (silero-vad's `get_speech_timestamps`): speech from 0.5, silence below 0.35, between the two no change. */
const SPEECH_THRESHOLD = 0.5;
const SILENCE_THRESHOLD = 0.35;
/** Less voice than this is a cough, a click or a breath: no barge-in, nothing transcribed (silero-vad's default is 250 ms). */
export const MIN_SPEECH_MS = 250;
/**
 * Within CONTINUING_MS of an utterance, the caller going on after a pause: a short word ("five",
 * "yes") is the rest of what they were saying, so less voice confirms it.
 */
export const MIN_CONTINUING_SPEECH_MS = 96;
const CONTINUING_MS = 1_000;
/** The silence after an utterance is reported window by window up to this long (the longest a turn is ever held: VOICE_UNFINISHED_MS's bound). */
const REPORTED_SILENCE_MS = 10_000;
/** Audio kept from before the first voiced window, so the utterance's first sound is not clipped. */
const PRE_SPEECH_MS = 200;
/** Of the silence that ended the utterance, this much is sent with it: the end of the last word, not the pause. */
const TRAILING_SILENCE_MS = 200;
/** An utterance is cut here even while the voice goes on (OpenAI takes at most 25 MB; nobody speaks a minute without a pause). */
const MAX_UTTERANCE_MS = 60_000;

/** A live recogniser made of an utterance recogniser and the voice-activity detection. */
export function listenInUtterances(recogniser: UtteranceRecogniser, settings: UtteranceSettings): LiveRecogniser {
  return { kind: 'live', listen: (format, options) => utteranceRecognition(recogniser, settings, format, options) };
}

function utteranceRecognition(
  recogniser: UtteranceRecogniser,
  settings: UtteranceSettings,
  format: AudioFormat,
  options: RecognitionOptions,
): LiveRecognition {
  const events = eventQueue<RecognitionEvent>();
  // A phone line's 8 kHz is one of Silero's rates: no resampling of every frame.
  const rate: VadRate = format.sampleRate === 8000 ? 8000 : 16000;
  const segmenter = speechSegmenter({ rate, pauseMs: settings.pauseMs });
  const stopped = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stopped.signal]) : stopped.signal;
  let sentSeconds = 0;
  let transcriptions = Promise.resolve();
  /** Utterances sent to be transcribed whose words have not come back yet. */
  let transcribing = 0;

  const fail = (error: Error) => {
    if (stopped.signal.aborted) return;
    stop();
    events.fail(error);
  };
  const voiceActivity = detectVoiceActivity(rate, {
    window(probability, samples) {
      const cut = segmenter.window(probability, samples);
      if (cut?.type === 'silence') inOrder(cut);
      else if (cut?.type === 'voice') inOrder({ type: 'speech_started', confirmed: false });
      else if (cut?.type === 'speech_started') inOrder({ type: 'speech_started', confirmed: true });
      else if (cut?.type === 'speech_ended') transcribe(cut.audio);
      // A sound that was not speech after all: the pause before it is asked about again.
      else if (cut?.type === 'dropped') inOrder({ type: 'utterance_end' });
    },
    failed: fail,
  });

  /**
   * Utterances are transcribed one after another, so their words come in the order they were said.
   * Each is sent at the detector's rate (a phone line's own 8 kHz): Whisper-style servers resample
   * what they are given, and resampling each utterance to 16 kHz here was measured at 30–50 ms of
   * the event loop for 2 s of speech.
   */
  function transcribe(audio: Int16Array): void {
    const format: AudioFormat = { encoding: 'pcm16', sampleRate: rate };
    transcribing++;
    transcriptions = transcriptions
      .then(async () => {
        if (signal.aborted) return;
        const text = await recogniser.transcribe(Buffer.from(audio.buffer, audio.byteOffset, audio.byteLength), format, {
          ...options,
          signal,
        });
        sentSeconds += audio.length / rate;
        events.push({ type: 'transcript', text, final: true });
        events.push({ type: 'utterance_end', afterSilenceMs: settings.pauseMs });
      })
      .catch(fail)
      .finally(() => transcribing--);
  }

  /**
   * Events in the order of the audio they tell of: what the detector heard after an utterance waits
   * for that utterance's words, so turn detection never hears of the caller going on (or of the
   * silence after their next words) before it has the words they went on from.
   */
  function inOrder(event: RecognitionEvent): void {
    if (transcribing === 0) events.push(event);
    else transcriptions = transcriptions.then(() => void events.push(event));
  }

  // Audio that arrives while the converter is made (a few milliseconds) waits for it.
  let converter: AudioConverter | undefined;
  const early: Buffer[] = [];
  const listen = (audio: Buffer) => voiceActivity.push(pcm16Samples(converter!.convert(audio)));
  const converting = createAudioConverter(format, { encoding: 'pcm16', sampleRate: rate }).then((made) => {
    converter = made;
    if (stopped.signal.aborted) return made.close();
    for (const audio of early.splice(0)) listen(audio);
  }, fail);

  function stop(): void {
    stopped.abort();
    voiceActivity.close();
    converter?.close();
  }

  return {
    send(audio) {
      if (stopped.signal.aborted) return;
      if (converter) listen(audio);
      else early.push(audio);
    },
    events,
    // The call is over: an utterance being transcribed is abandoned (no one will hear the answer), one being spoken is dropped.
    async close() {
      if (!stopped.signal.aborted) stop();
      await Promise.all([converting, transcriptions]);
      events.end();
    },
    sentSeconds: () => sentSeconds,
  };
}

export type SpeechCut =
  | { type: 'voice' }
  | { type: 'silence'; ms: number }
  | { type: 'speech_started' }
  | { type: 'speech_ended'; audio: Int16Array }
  | { type: 'dropped' };

/**
 * Where speech starts and ends in a stream of windows and their speech probabilities. Speech
 * begins at a window at or above the speech threshold (`voice`: maybe speech) and is confirmed
 * (`speech_started`) once its windows above it add up to `MIN_SPEECH_MS` (`MIN_CONTINUING_SPEECH_MS`
 * soon after an utterance: the caller going on after a pause); it ends once the windows
 * since the first one below the silence threshold (none of them back above the speech threshold)
 * last `pauseMs`. A confirmed stretch is one utterance (`speech_ended` with its audio, padded
 * before and after); an unconfirmed one is `dropped` without its audio. After an utterance, each
 * silent window says how long the silence has lasted (`silence`), up to REPORTED_SILENCE_MS.
 */
export function speechSegmenter(settings: { rate: VadRate; pauseMs: number }) {
  const ms = (samples: Int16Array) => (samples.length / settings.rate) * 1000;
  /** Before speech: the latest windows, up to PRE_SPEECH_MS. In speech: every window since. */
  let windows: Int16Array[] = [];
  let speaking = false;
  let confirmed = false;
  let spokenMs = 0;
  let voicedMs = 0;
  let silentMs = 0;
  /** Since the last utterance ended (long ago, at first). */
  let sinceUtteranceMs = Infinity;

  function end(): SpeechCut {
    let dropMs = silentMs - Math.min(silentMs, TRAILING_SILENCE_MS);
    while (dropMs > 0 && windows.length > 0 && ms(windows.at(-1)!) <= dropMs) dropMs -= ms(windows.pop()!);
    const cut: SpeechCut = confirmed ? { type: 'speech_ended', audio: joinedSamples(windows) } : { type: 'dropped' };
    if (confirmed) sinceUtteranceMs = silentMs;
    windows = [];
    speaking = confirmed = false;
    spokenMs = voicedMs = silentMs = 0;
    return cut;
  }

  return {
    window(probability: number, samples: Int16Array): SpeechCut | undefined {
      windows.push(samples);
      if (!speaking) sinceUtteranceMs += ms(samples);
      if (!speaking && probability < SPEECH_THRESHOLD) {
        while (windows.length * ms(samples) > PRE_SPEECH_MS) windows.shift();
        return sinceUtteranceMs <= REPORTED_SILENCE_MS ? { type: 'silence', ms: sinceUtteranceMs } : undefined;
      }
      const began = !speaking;
      speaking = true;
      spokenMs += ms(samples);
      if (probability >= SPEECH_THRESHOLD) {
        voicedMs += ms(samples);
        silentMs = 0;
      } else if (silentMs > 0 || probability < SILENCE_THRESHOLD) silentMs += ms(samples);
      if (silentMs >= settings.pauseMs || (confirmed && spokenMs >= MAX_UTTERANCE_MS)) return end();
      const minSpeechMs = sinceUtteranceMs < CONTINUING_MS ? MIN_CONTINUING_SPEECH_MS : MIN_SPEECH_MS;
      if (confirmed || voicedMs < minSpeechMs) return began ? { type: 'voice' } : undefined;
      confirmed = true;
      return { type: 'speech_started' };
    },
  };
}
