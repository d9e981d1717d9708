/**
 * Interruptions that are meant (issue 40, item 2): what the caller says over the agent, run through
 * turn detection and the interruption stage as a streaming recogniser reports it (interim words one
 * by one), with the agent's second sentence playing. Per kind of utterance: how many stopped the
 * agent, and for those that did, after how many of the caller's words.
 *
 *   npm run bench:interruptions
 *
 * Goals: backchannels that stop the agent ≤ 5%; real interruptions that stop it 100%.
 */
import { BACKCHANNELS, ECHOES, INTERRUPTIONS, SOUNDS, stopRate } from '../test/interruption-cases.ts';
import { fixed, runBench, table } from './harness.ts';

await runBench(() => {
  const kinds = [
    ['backchannels', BACKCHANNELS, '≤ 5%'],
    ['real interruptions', INTERRUPTIONS, '100%'],
    ['echo of the agent', ECHOES, '0%'],
    ['coughs, sounds', SOUNDS, '0%'],
  ] as const;
  const rows = [['said over the agent', 'cases', 'stopped it', 'rate', 'goal', 'words heard before the stop (mean)']];
  let missed = 0;
  for (const [name, cases, goal] of kinds) {
    const result = stopRate([...cases]);
    rows.push([
      name,
      String(result.cases),
      String(result.stopped),
      `${fixed(result.rate * 100, 1)}%`,
      goal,
      fixed(result.meanWordsBeforeStop, 2),
    ]);
    if (name === 'backchannels' && result.rate > 0.05) missed += 1;
    if (name === 'real interruptions' && result.rate < 1) missed += 1;
  }
  process.stdout.write(`${table(rows, (column) => column > 0 && column < 5)}\n`);
  return Promise.resolve(missed ? 1 : 0);
});
