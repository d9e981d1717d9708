import { describe, expect, it } from 'vitest';
import { oncePer, perTurn, perTurnAcrossTenants, perTurnWrite } from './batches.ts';

describe('perTurn', () => {
  it('asks once per tenant for what is asked in one turn, and again in the next turn', async () => {
    const runs: [string, number[]][] = [];
    const double = perTurn(async (tenantId, keys: number[]) => {
      runs.push([tenantId, keys]);
      return keys.map((key) => key * 2);
    });
    expect(await Promise.all([double('a', 1), double('b', 2), double('a', 3), double('a', 1)])).toEqual([2, 4, 6, 2]);
    expect(runs).toEqual([
      ['a', [1, 3, 1]],
      ['b', [2]],
    ]);
    expect(await double('a', 5)).toBe(10);
    expect(runs).toHaveLength(3);
  });

  it('fails only the callers of the tenant whose statement failed, or the one key answered with an Error', async () => {
    const check = perTurn(async (tenantId, keys: string[]) => {
      if (tenantId === 'down') throw new Error('connection lost');
      return keys.map((key) => (key === 'bad' ? new Error(`no ${key}`) : key.toUpperCase()));
    });
    const settled = await Promise.allSettled([check('up', 'ok'), check('down', 'ok'), check('up', 'bad'), check('up', 'fine')]);
    expect(settled.map((result) => (result.status === 'fulfilled' ? result.value : (result.reason as Error).message))).toEqual([
      'OK',
      'connection lost',
      'no bad',
      'FINE',
    ]);
  });

  it('asks each key alone when a shared statement fails, so one bad key fails by itself', async () => {
    const runs: string[][] = [];
    const insert = perTurn(async (_tenantId, keys: string[]) => {
      runs.push(keys);
      if (keys.includes('bad')) throw new Error('violates a constraint');
      return keys.map((key) => `${key} stored`);
    });
    const settled = await Promise.allSettled([insert('t', 'a'), insert('t', 'bad'), insert('t', 'b')]);
    expect(settled.map((result) => (result.status === 'fulfilled' ? result.value : (result.reason as Error).message))).toEqual([
      'a stored',
      'violates a constraint',
      'b stored',
    ]);
    expect(runs).toEqual([['a', 'bad', 'b'], ['a'], ['bad'], ['b']]);
  });

  it('perTurnWrite writes what a turn asks in one call and lets each caller go once it is written', async () => {
    const written: number[][] = [];
    const write = perTurnWrite(async (_tenantId, rows: number[]) => void written.push(rows));
    expect(await Promise.all([write('t', 1), write('t', 2)])).toEqual([undefined, undefined]);
    expect(written).toEqual([[1, 2]]);
  });

  it('perTurnAcrossTenants asks once for every distinct key of a turn, whatever its tenant, and alone again when that fails', async () => {
    const runs: string[][] = [];
    const profile = perTurnAcrossTenants(
      async (tenants: string[]) => {
        runs.push(tenants);
        if (tenants.includes('broken')) throw new Error('bad row');
        return tenants.map((tenant) => `profile of ${tenant}`);
      },
      (tenant) => tenant,
    );
    // The same key asked twice at once is asked once, and both callers get its answer.
    expect(await Promise.all([profile('a'), profile('b'), profile('a')])).toEqual(['profile of a', 'profile of b', 'profile of a']);
    expect(runs).toEqual([['a', 'b']]);
    const settled = await Promise.allSettled([profile('c'), profile('broken')]);
    expect(settled.map((result) => (result.status === 'fulfilled' ? result.value : (result.reason as Error).message))).toEqual([
      'profile of c',
      'bad row',
    ]);
    expect(runs.slice(1)).toEqual([['c', 'broken'], ['c'], ['broken']]);
  });

  /** A loader whose statements wait until released; `runs` lists each statement's keys as it starts. */
  function heldStatements<L>(make: (run: (keys: string[]) => Promise<string[]>) => L) {
    const runs: string[][] = [];
    const held: (() => void)[] = [];
    let released = false;
    const loader = make(async (keys) => {
      runs.push(keys);
      if (!released) await new Promise<void>((resolve) => held.push(resolve));
      return keys;
    });
    const release = () => {
      released = true;
      held.splice(0).forEach((resolve) => resolve());
    };
    return { runs, loader, release };
  }
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  it('perTurn keeps one statement in flight: keys asked while it runs, in any later turn, go together in the next, in order', async () => {
    const { runs, loader: write, release } = heldStatements((run) => perTurn((_tenantId, keys: string[]) => run(keys)));
    const asked = [write('t', 'a')];
    await nextTurn();
    asked.push(write('t', 'b'));
    await nextTurn();
    asked.push(write('t', 'c'));
    await nextTurn();
    expect(runs).toEqual([['a']]);
    release();
    expect(await Promise.all(asked)).toEqual(['a', 'b', 'c']);
    expect(runs).toEqual([['a'], ['b', 'c']]);
  });

  it('keeps its limit when one turn asks more than a statement carries: a finishing statement hands its slot to the one waiting', async () => {
    let inFlight = 0;
    let most = 0;
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    let statements = 0;
    const write = perTurn(async (_tenantId, keys: number[]) => {
      most = Math.max(most, ++inFlight);
      await (statements++ === 0 ? firstHeld : nextTurn());
      inFlight--;
      return keys;
    });
    // 1,000 keys in one turn: two statements of 500, the second waiting for the first.
    const asked = Array.from({ length: 1000 }, (_, key) => write('t', key));
    await nextTurn();
    releaseFirst();
    // Asked as the first ends, while the second still waits full: a third statement, which must wait its turn too.
    asked.push(write('t', 1000));
    expect(await Promise.all(asked)).toHaveLength(1001);
    expect(statements).toBe(3);
    expect(most).toBe(1);
  });

  it('perTurnAcrossTenants keeps two statements in flight, reads having no order to keep; keys asked meanwhile go together in the next', async () => {
    const { runs, loader: read, release } = heldStatements((run) => perTurnAcrossTenants(run, (key: string) => key));
    const asked = [read('a')];
    await nextTurn();
    asked.push(read('b'));
    await nextTurn();
    asked.push(read('c'));
    await nextTurn();
    asked.push(read('d'));
    await nextTurn();
    expect(runs).toEqual([['a'], ['b']]);
    release();
    expect(await Promise.all(asked)).toEqual(['a', 'b', 'c', 'd']);
    expect(runs).toEqual([['a'], ['b'], ['c', 'd']]);
  });

  it('oncePer makes one value per key object, on its first use', () => {
    let made = 0;
    const counterOf = oncePer((_key: object) => ({ n: ++made }));
    const [a, b] = [{}, {}];
    expect(counterOf(a)).toBe(counterOf(a));
    expect(counterOf(b)).not.toBe(counterOf(a));
    expect(made).toBe(2);
  });
});
