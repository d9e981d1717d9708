/**
 * The two helper threads of bench/media.ts, so their work is not the service's: `providers` serves
 * the zero-delay fakes (Deepgram's live recognition, ElevenLabs' streaming voice, an
 * OpenAI-compatible model and `/audio/transcriptions`), `callers` plays Twilio for every call
 * (signed upgrade, 20 ms μ-law frames at real pace, marks echoed) and times each turn.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { fluxTurn, startFakeDeepgram, utterance, type FakeListenStep } from '../src/providers/deepgram/fake-server.ts';
import { startFakeElevenLabs } from '../src/providers/elevenlabs/fake-server.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { startFakeSpeech, type ReceivedTranscription } from '../src/providers/openai-compatible/fake-speech.ts';
import { mulawToPcm16 } from '../src/platform/audio.ts';
import { openFakeMediaStream, type TwimlStream } from '../src/providers/twilio/fake-media-stream.ts';
import { FLUX_EAGER_S, FLUX_END_OF_TURN_S, FLUX_TURNS } from './flux-turns.ts';

export interface BenchPlan {
  calls: number;
  turns: number;
  /** Seconds between the starts of two caller utterances. */
  turnSeconds: number;
  /** How many times the providers alone are asked for the baseline (each takes one of the model's scripted replies). */
  baselineRequests: number;
  /**
   * `live`: Deepgram hears silence and says, by the fake's script, where the words are.
   * `utterance`: the callers speak (`speech`, eSpeak NG's μ-law) and the service's voice-activity
   * detection cuts it for `/audio/transcriptions`.
   * `flux`: Deepgram Flux hears silence and ends each turn by the fake's script (FLUX_TURNS).
   */
  stt: 'live' | 'utterance' | 'flux';
  /** The model's time to its first words (0: the zero-delay fake). */
  modelFirstTokenMs: number;
  speech?: Uint8Array;
  /**
   * Turn-taking (BENCH_MEDIA_STT=pauses): instead of `speech`, each turn the caller says one of
   * these sentences, some with pauses inside them, and the fake recogniser answers with the words
   * of each piece whose beginning it was sent.
   */
  phrases?: CallerPhrase[];
}

/** A sentence as a caller says it: its pieces (line audio, 8 kHz μ-law, trimmed to the voice) and the silences between them. */
export interface CallerPhrase {
  pieces: { audio: Uint8Array; text: string; pauseAfterMs: number }[];
}

/** One caller sentence as the callers heard the agent take it. */
export interface UtteranceResult {
  /** The sentence, its pieces' words joined. */
  sentence: string;
  /** The agent's end-of-turn detector (the call's label). */
  label: string;
  /** The sentence has a pause inside it. */
  paused: boolean;
  /** From the frame carrying the caller's last sound to the first agent audio after it (null: none came). */
  latencyMs: number | null;
  /** Agent audio came while the caller was still inside the sentence (the agent answered in a pause). */
  cutOff: boolean;
}

const FRAME_BYTES = 160; // 20 ms of 8 kHz μ-law
const SPEECH_START_S = 0.5;
const SPEECH_END_S = 2;
const QUESTION = 'When do you open tomorrow morning?';

/** A turn's Deepgram script: live recognition's utterance, or Flux's turn of the kind the turn's number gives. */
function recognitionOf(plan: BenchPlan, turn: number): FakeListenStep[] {
  const at = (seconds: number) => Math.round((turn * plan.turnSeconds + seconds) * 8000);
  const spoken = { startsAfterBytes: at(SPEECH_START_S), endsAfterBytes: at(SPEECH_END_S) };
  if (plan.stt !== 'flux') return utterance(QUESTION, spoken);
  const { eager, resumed } = FLUX_TURNS[turn % FLUX_TURNS.length]!;
  const pause = (SPEECH_START_S + SPEECH_END_S) / 2;
  return fluxTurn(QUESTION, {
    startsAfterBytes: spoken.startsAfterBytes,
    endsAfterBytes: at(SPEECH_END_S + FLUX_END_OF_TURN_S),
    ...(eager ? { eagerAfterBytes: at((resumed ? pause : SPEECH_END_S) + FLUX_EAGER_S) } : {}),
    ...(resumed
      ? {
          resumedAfterBytes: at(pause + FLUX_EAGER_S + 0.1),
          eagerText: 'When do you open',
          eagerAgainAfterBytes: at(SPEECH_END_S + FLUX_EAGER_S),
        }
      : {}),
  });
}
const now = () => performance.timeOrigin + performance.now();

/**
 * A fake recogniser that hears what it was sent: it finds the callers' pieces in the audio (the
 * service sends the line's own samples, decoded from the same μ-law) and answers with the words of
 * the part of each piece it was sent, in proportion, as a recogniser would: a piece cut in two by a
 * short pause is two fragments, each with a recogniser's full stop.
 */
function phraseRecogniser(phrases: CallerPhrase[]) {
  const KEY_BYTES = 16; // 8 samples
  const STRIDE = 40; // samples between two looks into the audio sent
  const pieces = phrases.flatMap((phrase) => phrase.pieces.map((piece) => ({ ...piece, pcm: mulawToPcm16(piece.audio) })));
  /** Every position of every piece where it is not near silence, by the 8 samples there (null: in two pieces, so neither). */
  const where = new Map<string, { piece: number; sample: number } | null>();
  pieces.forEach((piece, index) => {
    for (let sample = 0; sample + 8 <= piece.pcm.length / 2; sample++) {
      if (Math.abs(piece.pcm.readInt16LE(sample * 2)) < 64) continue;
      const key = piece.pcm.toString('latin1', sample * 2, sample * 2 + KEY_BYTES);
      const known = where.get(key);
      where.set(key, known === undefined || known?.piece === index ? { piece: index, sample } : null);
    }
  });
  return (received: ReceivedTranscription) => {
    const sent = received.wav?.samples ?? Buffer.alloc(0);
    const heard = new Map<number, { from: number; to: number; at: number }>();
    for (let offset = 0; offset + KEY_BYTES <= sent.length; offset += STRIDE * 2) {
      const found = where.get(sent.toString('latin1', offset, offset + KEY_BYTES));
      if (!found) continue;
      const span = heard.get(found.piece) ?? { from: found.sample, to: found.sample, at: offset };
      heard.set(found.piece, { from: Math.min(span.from, found.sample), to: Math.max(span.to, found.sample + STRIDE), at: span.at });
    }
    const text = [...heard.entries()]
      .sort((a, b) => a[1].at - b[1].at)
      .map(([index, span]) => {
        const piece = pieces[index]!;
        const length = piece.pcm.length / 2;
        const words = piece.text.replace(/[.?!]$/, '').split(' ');
        // A word is heard when the middle of its share of the piece is.
        const kept = words.filter((_, word) => {
          const middle = ((word + 0.5) / words.length) * length;
          return middle >= span.from - STRIDE && middle <= span.to + STRIDE;
        });
        const whole = kept.length === words.length;
        return kept.length ? `${kept.join(' ')}${whole ? piece.text.at(-1) : '.'}` : '';
      })
      .filter(Boolean)
      .join(' ');
    return text;
  };
}

async function providers(plan: BenchPlan) {
  const [deepgram, elevenlabs, chat, speech] = await Promise.all([
    startFakeDeepgram({ apiKey: 'dg-bench-key-0123456789' }),
    startFakeElevenLabs({ apiKey: 'el-bench-key-0123456789', gapMs: 0 }),
    startFakeChat(),
    startFakeSpeech(plan.phrases ? { transcribe: phraseRecogniser(plan.phrases) } : {}),
  ]);
  for (let reply = 0; reply < plan.calls * plan.turns; reply++) speech.script({ kind: 'text', text: QUESTION });
  for (let call = 0; call < plan.calls; call++)
    deepgram.script(...Array.from({ length: plan.turns }, (_, turn) => recognitionOf(plan, turn)).flat());
  // The calls' turns (a sentence cut short takes two or three), and the baseline's requests (bench/media.ts asks the model first).
  for (let reply = 0; reply < plan.calls * plan.turns * 4 + plan.baselineRequests; reply++)
    chat.script({
      kind: 'stream',
      text: ['We open ', 'at eight. ', 'Parking is free.'],
      usage: { prompt_tokens: 300, completion_tokens: 10 },
      firstTokenMs: plan.modelFirstTokenMs,
    });
  return {
    deepgram: deepgram.url,
    deepgramKey: deepgram.apiKey,
    elevenlabs: elevenlabs.url,
    elevenlabsKey: elevenlabs.apiKey,
    chat: chat.url,
    speech: speech.url,
  };
}

/** Sends `frames` 20 ms frames at real pace against the wall clock, so a late timer does not stretch the call. */
async function atRealPace(frames: number, send: (frame: number) => Promise<void>): Promise<void> {
  const started = now();
  for (let frame = 0; frame < frames; frame++) {
    const wait = started + frame * 20 - now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    await send(frame);
  }
}

type CallersOptions = { plan: BenchPlan; calls: CallerCall[]; connectTo: string; accountSid: string; authToken: string };

/** Twilio's side of one call's stream, every message from the service to `onMessage`. */
const callerStream = (
  options: CallersOptions,
  call: CallerCall,
  onMessage: NonNullable<Parameters<typeof openFakeMediaStream>[0]['onMessage']>,
) =>
  openFakeMediaStream({
    connectTo: options.connectTo,
    stream: call.stream,
    accountSid: options.accountSid,
    authToken: options.authToken,
    callSid: call.sid,
    onMessage,
  });

interface CallerCall {
  sid: string;
  stream: TwimlStream;
  /** What the results of its turns are filed under (its agent's detector). */
  label: string;
}

/**
 * Each call: connect, then send frames at real pace for `turns × turnSeconds`; the utterance of a
 * turn ends with the frame at SPEECH_END_S. A turn's latency: from sending that frame to the first
 * agent audio after it; `turns` has each latency's turn number (Flux's kind of turn).
 */
async function callers(options: CallersOptions) {
  const { plan } = options;
  const latencies: number[] = [];
  const turns: number[] = [];
  let missing = 0;
  const totalFrames = Math.round((plan.turns * plan.turnSeconds * 1000) / 20);
  const speech = plan.speech ? Buffer.from(plan.speech) : undefined;
  const speechEndS = speech ? SPEECH_START_S + speech.length / 8000 : SPEECH_END_S;
  const endFrames = new Map(
    Array.from({ length: plan.turns }, (_, turn) => [Math.ceil(((turn * plan.turnSeconds + speechEndS) * 8000) / FRAME_BYTES) - 1, turn]),
  );
  const silence = Buffer.alloc(FRAME_BYTES, 0xff);
  /** The caller's frame: silence, or in the utterance mode the sentence from SPEECH_START_S of each turn. */
  const frameAt = (frame: number) => {
    if (!speech) return silence;
    const offset = ((frame * FRAME_BYTES) % (plan.turnSeconds * 8000)) - SPEECH_START_S * 8000;
    if (offset < 0 || offset >= speech.length) return silence;
    const audio = speech.subarray(offset, offset + FRAME_BYTES);
    return audio.length === FRAME_BYTES ? audio : Buffer.concat([audio, silence.subarray(audio.length)]);
  };
  await Promise.all(
    options.calls.map(async (call, index) => {
      // Answers spread over one turn's time, as a campaign's calls are answered one after another:
      // 200 callers do not all stop speaking in the same second.
      await new Promise((resolve) => setTimeout(resolve, (index * plan.turnSeconds * 1000) / options.calls.length));
      let waiting: { since: number; turn: number } | null = null;
      const stream = await callerStream(options, call, (message) => {
        // The first agent audio after the end of the caller's speech.
        if (waiting === null || message.event !== 'media') return;
        latencies.push(now() - waiting.since);
        turns.push(waiting.turn);
        waiting = null;
      });
      await atRealPace(totalFrames, async (frame) => {
        await stream.sendAudio(frameAt(frame));
        const turn = endFrames.get(frame);
        if (turn !== undefined) {
          if (waiting !== null) missing++;
          waiting = { since: now(), turn };
        }
      });
      if (waiting !== null) missing++;
      stream.stop();
      await stream.closed;
    }),
  );
  return { latencies, turns, missing };
}

/**
 * Turn-taking: each call says `turns` sentences, one every `turnSeconds` (the call's index picks
 * which), at real pace. For each sentence: whether agent audio came while the caller was inside it
 * (a cut-off), and the time from the frame carrying its last sound to the first agent audio after.
 */
async function phraseCallers(options: CallersOptions) {
  const { plan } = options;
  const phrases = plan.phrases!;
  const results: UtteranceResult[] = [];
  const totalFrames = Math.round((plan.turns * plan.turnSeconds * 1000) / 20);
  await Promise.all(
    options.calls.map(async (call, index) => {
      await new Promise((resolve) => setTimeout(resolve, (index * plan.turnSeconds * 1000) / options.calls.length));
      // The call's whole line audio, and where each sentence's voice begins and ends (frame numbers).
      const line = Buffer.alloc(totalFrames * FRAME_BYTES, 0xff);
      const sentences = Array.from({ length: plan.turns }, (_, turn) => {
        const phrase = phrases[(index + turn) % phrases.length]!;
        let at = Math.round((turn * plan.turnSeconds + SPEECH_START_S) * 8000);
        const first = Math.floor(at / FRAME_BYTES);
        for (const piece of phrase.pieces) {
          line.set(piece.audio, at);
          at += piece.audio.length + piece.pauseAfterMs * 8;
        }
        const lastSound = at - phrase.pieces.at(-1)!.pauseAfterMs * 8;
        const result: UtteranceResult = {
          sentence: phrase.pieces.map((piece) => piece.text).join(' '),
          label: call.label,
          paused: phrase.pieces.length > 1,
          latencyMs: null,
          cutOff: false,
        };
        results.push(result);
        return { first, last: Math.ceil(lastSound / FRAME_BYTES) - 1, result };
      });
      let inside: UtteranceResult | null = null;
      let waiting: { since: number; result: UtteranceResult } | null = null;
      const stream = await callerStream(options, call, (message) => {
        if (message.event !== 'media') return;
        if (inside) inside.cutOff = true;
        if (!waiting) return;
        waiting.result.latencyMs = now() - waiting.since;
        waiting = null;
      });
      await atRealPace(totalFrames, async (frame) => {
        const sentence = sentences.find((one) => one.first === frame || one.last === frame);
        // Agent audio from here on, until the last sound, answers inside the sentence.
        if (sentence?.first === frame) inside = sentence.result;
        await stream.sendAudio(line.subarray(frame * FRAME_BYTES, (frame + 1) * FRAME_BYTES));
        if (sentence?.last === frame) {
          inside = null;
          waiting = { since: now(), result: sentence.result };
        }
      });
      stream.stop();
      await stream.closed;
    }),
  );
  return results;
}

const port = parentPort!;
const job = workerData as { role: 'providers'; plan: BenchPlan } | { role: 'callers'; options: Parameters<typeof callers>[0] };
port.on('message', async (message: string) => {
  if (message !== 'go' || job.role !== 'callers') return;
  port.postMessage(job.options.plan.phrases ? await phraseCallers(job.options) : await callers(job.options));
});
if (job.role === 'providers') port.postMessage(await providers(job.plan));
else port.postMessage('ready');
