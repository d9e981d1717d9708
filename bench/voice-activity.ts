/**
 * What voice-activity detection costs per call: Silero VAD (ONNX Runtime, native, in its
 * worker thread) listening to N calls at once at real pace, 20 ms frames of 8 kHz audio, half of it
 * speech (eSpeak NG saying a sentence, then as long a silence, over and over).
 *
 *   npm run bench:vad
 *   BENCH_VAD_CALLS=1,25,100 BENCH_VAD_SECONDS=20 npm run bench:vad
 *
 * Per level, after a warm-up (the runtime and V8 settle in the first
 * seconds): the process's CPU per second of a call's audio, split into the main thread's (cutting
 * frames into windows, posting them, reading the answers: what the service's event loop pays) and
 * the other threads' (the detector's thread, with V8's collector), read from /proc (Linux); and the
 * lag from the frame that completes a 32 ms window to that window's probability on the main thread.
 */
import { performance } from 'node:perf_hooks';
import { detectVoiceActivity, VAD_WINDOW_MS } from '../src/modules/media/voice-activity.ts';
import { mulawToPcm16, pcm16Samples } from '../src/platform/audio.ts';
import { callerSaying, detectorStarted, lineSilence } from '../test/caller-speech.ts';
import { fixed, runBench, table } from './harness.ts';
import { statCpuMs } from './process-cpu.ts';

const levels = (process.env.BENCH_VAD_CALLS ?? '1,50,200').split(',').map(Number);
const seconds = Number(process.env.BENCH_VAD_SECONDS ?? 10);
const FRAME = 160; // 20 ms at 8 kHz
const WINDOW = (8000 / 1000) * VAD_WINDOW_MS;

/** The main thread's CPU so far, in ms. */
const mainThreadCpuMs = () => statCpuMs(`/proc/self/task/${process.pid}/stat`);

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;
};

async function level(calls: number, audio: Int16Array, seconds: number) {
  const lags: number[] = [];
  const failures: Error[] = [];
  const streams = Array.from({ length: calls }, (_, index) => {
    const completed: number[] = [];
    const detector = detectVoiceActivity(8000, {
      window: () => lags.push(performance.now() - completed.shift()!),
      failed: (error) => failures.push(error),
    });
    // Calls start at different points of the sentence, as real callers do.
    return { detector, completed, offset: Math.floor((index / calls) * (audio.length / FRAME)) * FRAME, pushed: 0 };
  });
  const cpu = process.cpuUsage();
  const mainCpu = mainThreadCpuMs();
  const started = performance.now();
  const frames = (seconds * 1000) / 20;
  for (let frame = 0; frame < frames; frame++) {
    const wait = started + frame * 20 - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    for (const stream of streams) {
      const at = (stream.offset + frame * FRAME) % audio.length;
      stream.detector.push(audio.subarray(at, at + FRAME));
      stream.pushed += FRAME;
      if (Math.floor(stream.pushed / WINDOW) > Math.floor((stream.pushed - FRAME) / WINDOW)) stream.completed.push(performance.now());
    }
  }
  // The last windows' answers.
  const expected = calls * Math.floor((frames * FRAME) / WINDOW);
  // Every answer is awaited, however late, so the next level does not inherit this one's backlog.
  const deadline = performance.now() + 60_000;
  while (lags.length < expected && failures.length === 0 && performance.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 5));
  const used = process.cpuUsage(cpu);
  const mainMs = mainThreadCpuMs() - mainCpu;
  for (const stream of streams) stream.detector.close();
  if (failures.length) throw failures[0];
  const cpuMs = (used.user + used.system) / 1000;
  return {
    calls,
    cpuPerCallSecond: cpuMs / (calls * seconds),
    mainPerCallSecond: mainMs / (calls * seconds),
    cores: cpuMs / (performance.now() - started),
    lag: [percentile(lags, 50), percentile(lags, 95), percentile(lags, 99)],
    answered: `${lags.length}/${expected}`,
  };
}

async function main(): Promise<number> {
  const sentence = await callerSaying('When do you open tomorrow morning? I would like to book a table.');
  const line = Buffer.concat([sentence, lineSilence(sentence.length / 8)]);
  const audio = pcm16Samples(mulawToPcm16(line.subarray(0, line.length - (line.length % FRAME))));
  // The detector's thread starts with its first call: timed once, outside the levels.
  const coldStart = performance.now();
  await detectorStarted();
  const startMs = performance.now() - coldStart;
  await level(20, audio, 5);
  const rows = [];
  for (const calls of levels) rows.push(await level(calls, audio, seconds));
  process.stdout.write(
    `\n== Silero VAD v6 on ONNX Runtime (native, one worker thread): ${seconds} s of 8 kHz audio per call, half of it speech\n`,
  );
  process.stdout.write(
    table(
      [
        ['calls', 'CPU ms per call-second', 'of which main thread', 'cores busy', 'lag p50/p95/p99 ms', 'windows answered'],
        ...rows.map((row) => [
          String(row.calls),
          fixed(row.cpuPerCallSecond, 1),
          fixed(row.mainPerCallSecond, 1),
          fixed(row.cores, 2),
          row.lag.map((ms) => fixed(ms, 1)).join(' / '),
          row.answered,
        ]),
      ],
      (column) => column > 0,
    ),
  );
  process.stdout.write(`\nthe detector's first answer after a cold start (worker, runtime and model loaded): ${fixed(startMs, 0)} ms\n`);
  return 0;
}

await runBench(main);
