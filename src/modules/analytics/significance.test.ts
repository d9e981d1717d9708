import { describe, expect, it } from 'vitest';
import { compareProportions, fisherExact, twoProportionZ } from './significance.ts';

// Reference values from R 4.x: prop.test(..., correct = FALSE) and fisher.test(...).
describe('two proportions', () => {
  it('gives the z-test p of R’s prop.test without continuity correction', () => {
    // 45/100 against 30/100: X-squared = 4.8, p-value = 0.02846.
    expect(twoProportionZ({ successes: 45, trials: 100 }, { successes: 30, trials: 100 })).toBeCloseTo(0.028459, 5);
    // Symmetric in the arms, 1 when the rates are equal.
    expect(twoProportionZ({ successes: 30, trials: 100 }, { successes: 45, trials: 100 })).toBeCloseTo(0.028459, 5);
    expect(twoProportionZ({ successes: 20, trials: 80 }, { successes: 5, trials: 20 })).toBeCloseTo(1, 10);
    // 120/1000 against 100/1000: p = 0.1529.
    expect(twoProportionZ({ successes: 120, trials: 1000 }, { successes: 100, trials: 1000 })).toBeCloseTo(0.152918, 5);
    // All succeeded in both: no difference to find.
    expect(twoProportionZ({ successes: 50, trials: 50 }, { successes: 60, trials: 60 })).toBe(1);
  });

  it("gives Fisher's exact two-sided p of R's fisher.test", () => {
    // The lady tasting tea: matrix(c(3,1,1,3)) gives p = 0.4857.
    expect(fisherExact({ successes: 3, trials: 4 }, { successes: 1, trials: 4 })).toBeCloseTo(0.485714, 5);
    // matrix(c(1,9,11,3)): p = 0.002759.
    expect(fisherExact({ successes: 1, trials: 10 }, { successes: 11, trials: 14 })).toBeCloseTo(0.0027594, 6);
    expect(fisherExact({ successes: 0, trials: 5 }, { successes: 0, trials: 5 })).toBe(1);
    expect(fisherExact({ successes: 0, trials: 10 }, { successes: 10, trials: 10 })).toBeCloseTo(1.0825088e-5, 10);
  });

  it('takes the exact test when a cell is expected below 5, the z-test otherwise, and nothing without trials', () => {
    expect(compareProportions({ successes: 3, trials: 4 }, { successes: 1, trials: 4 })).toEqual({
      pValue: expect.any(Number),
      test: 'fisher-exact',
    });
    // Expected successes per arm: 20 × 6/40 = 3 < 5.
    expect(compareProportions({ successes: 4, trials: 20 }, { successes: 2, trials: 20 })?.test).toBe('fisher-exact');
    // Expected 5 in every cell exactly: the z-test; one fewer success, 4.5 expected: exact.
    expect(compareProportions({ successes: 6, trials: 10 }, { successes: 4, trials: 10 })?.test).toBe('two-proportion-z');
    expect(compareProportions({ successes: 5, trials: 10 }, { successes: 4, trials: 10 })?.test).toBe('fisher-exact');
    expect(compareProportions({ successes: 0, trials: 0 }, { successes: 3, trials: 10 })).toBeNull();
  });
});
