/**
 * Whether two arms' success rates differ more than chance would make them: a two-sided test of two
 * proportions. The two-proportion z-test (pooled) when every cell of the 2×2 table is expected to
 * hold at least 5 (the usual condition for its normal approximation), Fisher's exact test otherwise.
 * The normal distribution's tail and the log-gamma function are simple-statistics'
 * (docs/decisions/0058-agent-versions.md).
 */
import { erf, gammaln } from 'simple-statistics';

export interface Proportion {
  successes: number;
  trials: number;
}

export type TestName = 'two-proportion-z' | 'fisher-exact';

/** Expected count below which the z-test's normal approximation is not trusted. */
const MIN_EXPECTED = 5;

/** The two-sided p-value, and the test that gave it; null when an arm has no trials (nothing to compare). */
export function compareProportions(a: Proportion, b: Proportion): { pValue: number; test: TestName } | null {
  if (a.trials === 0 || b.trials === 0) return null;
  const n = a.trials + b.trials;
  const successes = a.successes + b.successes;
  const expected = [a.trials, b.trials].flatMap((trials) => [(trials * successes) / n, (trials * (n - successes)) / n]);
  if (Math.min(...expected) < MIN_EXPECTED) return { pValue: fisherExact(a, b), test: 'fisher-exact' };
  return { pValue: twoProportionZ(a, b), test: 'two-proportion-z' };
}

/** Two-sided p of the pooled z statistic: P(|Z| ≥ |z|) = 1 − erf(|z|/√2). */
export function twoProportionZ(a: Proportion, b: Proportion): number {
  const pooled = (a.successes + b.successes) / (a.trials + b.trials);
  const standardError = Math.sqrt(pooled * (1 - pooled) * (1 / a.trials + 1 / b.trials));
  // Every contact succeeded, or none did: the arms cannot differ.
  if (standardError === 0) return 1;
  const z = (a.successes / a.trials - b.successes / b.trials) / standardError;
  return clamp(1 - erf(Math.abs(z) / Math.SQRT2));
}

/**
 * Fisher's exact test, two-sided: with the table's margins fixed, the probability (hypergeometric)
 * of every table at most as likely as the one observed.
 */
export function fisherExact(a: Proportion, b: Proportion): number {
  const successes = a.successes + b.successes;
  const n = a.trials + b.trials;
  const logChoose = (k: number, r: number) => gammaln(k + 1) - gammaln(r + 1) - gammaln(k - r + 1);
  const logTotal = logChoose(n, successes);
  const probability = (x: number) => Math.exp(logChoose(a.trials, x) + logChoose(b.trials, successes - x) - logTotal);
  const observed = probability(a.successes);
  let p = 0;
  for (let x = Math.max(0, successes - b.trials); x <= Math.min(a.trials, successes); x++) {
    const each = probability(x);
    // A relative tolerance, as R's fisher.test has, so tables as likely as the observed one count despite rounding.
    if (each <= observed * (1 + 1e-7)) p += each;
  }
  return clamp(p);
}

const clamp = (p: number) => Math.min(1, Math.max(0, p));
