/**
 * The two helper threads of bench/media.ts, so their work is not the service's: `providers` serves
 * the zero-delay fakes (Deepgram's live recognition, ElevenLabs' streaming voice, an
 * OpenAI-compatible model and `/audio/transcriptions`), `callers` plays Twilio for every call
 * (signed upgrade, 20 ms μ-law frames at real pace, marks echoed) and times each turn.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { startFakeDeepgram, utterance } from '../src/providers/deepgram/fake-server.ts';
import { startFakeElevenLabs } from '../src/providers/elevenlabs/fake-server.ts';
import { startFakeChat } from '../src/providers/openai-compatible/fake-chat.ts';
import { startFakeSpeech } from '../src/providers/openai-compatible/fake-speech.ts';
import { openFakeMediaStream, type TwimlStream } from '../src/providers/twilio/fake-media-stream.ts';

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
   */
  stt: 'live' | 'utterance';
  speech?: Uint8Array;
}

const FRAME_BYTES = 160; // 20 ms of 8 kHz μ-law
const SPEECH_START_S = 0.5;
const SPEECH_END_S = 2;
const QUESTION = 'When do you open tomorrow morning?';
const now = () => performance.timeOrigin + performance.now();

async function providers(plan: BenchPlan) {
  const [deepgram, elevenlabs, chat, speech] = await Promise.all([
    startFakeDeepgram({ apiKey: 'dg-bench-key-0123456789' }),
    startFakeElevenLabs({ apiKey: 'el-bench-key-0123456789', gapMs: 0 }),
    startFakeChat(),
    startFakeSpeech(),
  ]);
  for (let reply = 0; reply < plan.calls * plan.turns; reply++) speech.script({ kind: 'text', text: QUESTION });
  for (let call = 0; call < plan.calls; call++) {
    const steps = [];
    for (let turn = 0; turn < plan.turns; turn++) {
      const at = (seconds: number) => Math.round((turn * plan.turnSeconds + seconds) * 8000);
      steps.push(...utterance(QUESTION, { startsAfterBytes: at(SPEECH_START_S), endsAfterBytes: at(SPEECH_END_S) }));
    }
    deepgram.script(...steps);
  }
  // The calls' turns, and the baseline's requests (bench/media.ts asks the model first).
  for (let reply = 0; reply < plan.calls * plan.turns + plan.baselineRequests; reply++)
    chat.script({
      kind: 'stream',
      text: ['We open ', 'at eight. ', 'Parking is free.'],
      usage: { prompt_tokens: 300, completion_tokens: 10 },
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

interface CallerCall {
  sid: string;
  stream: TwimlStream;
}

/**
 * Each call: connect, then send frames at real pace for `turns × turnSeconds`; the utterance of a
 * turn ends with the frame at SPEECH_END_S. A turn's latency: from sending that frame to the first
 * agent audio after it.
 */
async function callers(options: { plan: BenchPlan; calls: CallerCall[]; connectTo: string; accountSid: string; authToken: string }) {
  const { plan } = options;
  const latencies: number[] = [];
  let missing = 0;
  const totalFrames = Math.round((plan.turns * plan.turnSeconds * 1000) / 20);
  const speech = plan.speech ? Buffer.from(plan.speech) : undefined;
  const speechEndS = speech ? SPEECH_START_S + speech.length / 8000 : SPEECH_END_S;
  const endFrames = new Set(
    Array.from({ length: plan.turns }, (_, turn) => Math.ceil(((turn * plan.turnSeconds + speechEndS) * 8000) / FRAME_BYTES) - 1),
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
      let waitingSince: number | null = null;
      const stream = await openFakeMediaStream({
        connectTo: options.connectTo,
        stream: call.stream,
        accountSid: options.accountSid,
        authToken: options.authToken,
        callSid: call.sid,
        onMessage(message) {
          // The first agent audio after the end of the caller's speech.
          if (waitingSince === null || message.event !== 'media') return;
          latencies.push(now() - waitingSince);
          waitingSince = null;
        },
      });
      const started = now();
      for (let frame = 0; frame < totalFrames; frame++) {
        // Real pace against the wall clock, so a late timer does not stretch the call.
        const due = started + frame * 20;
        const wait = due - now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        await stream.sendAudio(frameAt(frame));
        if (endFrames.has(frame)) {
          if (waitingSince !== null) missing++;
          waitingSince = now();
        }
      }
      if (waitingSince !== null) missing++;
      stream.stop();
      await stream.closed;
    }),
  );
  return { latencies, missing };
}

const port = parentPort!;
const job = workerData as { role: 'providers'; plan: BenchPlan } | { role: 'callers'; options: Parameters<typeof callers>[0] };
port.on('message', async (message: string) => {
  if (message === 'go' && job.role === 'callers') port.postMessage(await callers(job.options));
});
if (job.role === 'providers') port.postMessage(await providers(job.plan));
else port.postMessage('ready');
