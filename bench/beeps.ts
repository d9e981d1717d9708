/**
 * The voicemail beep detector (issue 40, item 3) on generated recorded-style cases: a spoken
 * greeting (eSpeak NG), a pause, a tone of 400–2,000 Hz held 150–1,000 ms at -30 to -6 dBFS under
 * white noise 10–35 dB below it, through the line's μ-law; and greetings without a beep.
 *
 *   npm run bench:beeps
 *   BENCH_BEEP_CASES=1000 npm run bench:beeps
 *
 * Goal: a beep found within 300 ms of its end in ≥ 95% of the cases.
 */
import { performance } from 'node:perf_hooks';
import { beepCases, detectIn } from '../test/beep-cases.ts';
import { fixed, intFromEnv, runBench, table } from './harness.ts';

const count = intFromEnv('BENCH_BEEP_CASES', 400, 1);

await runBench(async () => {
  const cases = await beepCases(count);
  const started = performance.now();
  const results = cases.map((each) => ({ each, found: detectIn(each) }));
  const elapsedMs = performance.now() - started;
  const audioMs = cases.reduce((sum, each) => sum + each.audio.length / 8, 0);
  const withBeep = results.filter(({ each }) => each.beep);
  const inTime = withBeep.filter(({ found }) => found.inTime);
  const latencies = inTime.map(({ found }) => found.latencyMs!).sort((a, b) => a - b);
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
  const rows = [
    ['cases with a beep', String(withBeep.length)],
    ['found within 300 ms of its end', `${inTime.length} (${fixed((inTime.length / withBeep.length) * 100, 1)}%; goal ≥ 95%)`],
    ['latency after its end: median, p95, max (ms)', `${at(0.5)}, ${at(0.95)}, ${latencies.at(-1)}`],
    ['false alarms (greeting, or no beep)', `${results.filter(({ found }) => found.falseAlarm).length} of ${results.length}`],
    ['detector CPU per second of audio (ms)', fixed((elapsedMs / audioMs) * 1000, 2)],
  ];
  process.stdout.write(`${table(rows, () => false)}\n`);
  for (const { each } of withBeep.filter(({ found }) => !found.inTime)) process.stdout.write(`missed: ${each.description}\n`);
  return inTime.length / withBeep.length >= 0.95 ? 0 : 1;
});
