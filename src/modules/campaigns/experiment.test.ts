import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { armOf } from './experiment.ts';

const campaignId = '6f1c2a9e-5b7d-4c3e-9a8b-1d2e3f4a5b6c';
const contacts = Array.from({ length: 20_000 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
const shares = (arms: { version: number; weight: number }[], ids = contacts) => {
  const counts = new Map<number, number>();
  for (const id of ids) {
    const version = armOf({ arms }, campaignId, id);
    counts.set(version, (counts.get(version) ?? 0) + 1);
  }
  return counts;
};

describe("an experiment's split", () => {
  it('puts a contact in the same arm every time it is asked, and depends on the campaign too', () => {
    const arms = [
      { version: 1, weight: 1 },
      { version: 2, weight: 1 },
    ];
    for (const id of contacts.slice(0, 200)) expect(armOf({ arms }, campaignId, id)).toBe(armOf({ arms }, campaignId, id));
    // Another campaign draws afresh: not every contact keeps its arm.
    const other = randomUUID();
    const moved = contacts.slice(0, 200).filter((id) => armOf({ arms }, campaignId, id) !== armOf({ arms }, other, id));
    expect(moved.length).toBeGreaterThan(50);
    expect(moved.length).toBeLessThan(150);
  });

  it('gives each arm its weight’s share, within sampling error (20,000 contacts)', () => {
    // Binomial standard deviation at 20,000 draws is at most 71 contacts; 5 of them is 355.
    const even = shares([
      { version: 3, weight: 1 },
      { version: 7, weight: 1 },
    ]);
    expect(Math.abs(even.get(3)! - 10_000)).toBeLessThan(355);
    const uneven = shares([
      { version: 1, weight: 1 },
      { version: 2, weight: 3 },
      { version: 5, weight: 6 },
    ]);
    expect(Math.abs(uneven.get(1)! - 2_000)).toBeLessThan(355);
    expect(Math.abs(uneven.get(2)! - 6_000)).toBeLessThan(355);
    expect(Math.abs(uneven.get(5)! - 12_000)).toBeLessThan(355);
  });

  it('keeps the weights at their edges: 1 against 1,000 still draws the small arm, ten arms all draw', () => {
    const edge = shares([
      { version: 1, weight: 1 },
      { version: 2, weight: 1000 },
    ]);
    // 20,000 / 1,001 ≈ 20 expected; Poisson's 5 sigma around it.
    expect(edge.get(1)).toBeGreaterThan(0);
    expect(edge.get(1)).toBeLessThan(43);
    expect(edge.get(1)! + edge.get(2)!).toBe(20_000);
    const ten = shares(Array.from({ length: 10 }, (_, i) => ({ version: i + 1, weight: 1000 })));
    expect([...ten.keys()].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    for (const count of ten.values()) expect(Math.abs(count - 2_000)).toBeLessThan(225);
  });

  it('reads the arms in their order: swapping two arms of equal weight swaps who is in them', () => {
    const id = contacts[0]!;
    const first = armOf(
      {
        arms: [
          { version: 1, weight: 1 },
          { version: 2, weight: 1 },
        ],
      },
      campaignId,
      id,
    );
    const swapped = armOf(
      {
        arms: [
          { version: 2, weight: 1 },
          { version: 1, weight: 1 },
        ],
      },
      campaignId,
      id,
    );
    expect(first).not.toBe(swapped);
  });
});
