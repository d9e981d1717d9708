/**
 * Statements that many handlers running at once make one row at a time, made once for all of them:
 * what is asked in one turn of the event loop (the handlers of a fetched batch of jobs, the answers
 * that arrived together) goes to the database as one statement per tenant. Each caller still gets
 * its own answer and its own error: when a shared statement fails, each key is asked again alone,
 * so a key that breaks a statement fails by itself. DataLoader does the
 * collecting; nothing is cached between turns (a claim or a status must be read fresh).
 */
import DataLoader from 'dataloader';

const asError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)));

/** The most keys one statement carries; more wait for the next statement of the same turn. */
const MAX_BATCH = 500;

/**
 * `run(tenantId, keys)` answers a tenant's keys in their order (an Error as an answer rejects that
 * key's caller alone); the result asks for one key at a time and shares the statement with the
 * other keys asked in the same turn.
 */
export function perTurn<K, V>(run: (tenantId: string, keys: K[]) => Promise<V[]>): (tenantId: string, key: K) => Promise<V> {
  const loader = new DataLoader<{ tenantId: string; key: K }, V>(
    async (asked) => {
      const byTenant = new Map<string, number[]>();
      asked.forEach(({ tenantId }, index) => {
        const indexes = byTenant.get(tenantId);
        if (indexes) indexes.push(index);
        else byTenant.set(tenantId, [index]);
      });
      const answers: (V | Error)[] = new Array(asked.length);
      await Promise.all(
        [...byTenant].map(async ([tenantId, indexes]) => {
          try {
            const values = await run(
              tenantId,
              indexes.map((index) => asked[index]!.key),
            );
            indexes.forEach((index, i) => (answers[index] = values[i]!));
          } catch (error) {
            if (indexes.length === 1) answers[indexes[0]!] = asError(error);
            // One key's bad data must not fail the keys asked beside it: each is asked again alone.
            else
              await Promise.all(
                indexes.map(async (index) => {
                  answers[index] = await run(tenantId, [asked[index]!.key]).then((values) => values[0]!, asError);
                }),
              );
          }
        }),
      );
      return answers;
    },
    { cache: false, maxBatchSize: MAX_BATCH, batchScheduleFn: (dispatch) => setImmediate(dispatch) },
  );
  return (tenantId, key) => loader.load({ tenantId, key });
}

/** perTurn for a write that answers nothing per key: each caller waits for its tenant's statement. */
export const perTurnWrite = <K>(run: (tenantId: string, keys: K[]) => Promise<unknown>): ((tenantId: string, key: K) => Promise<void>) =>
  perTurn(async (tenantId, keys: K[]) => {
    await run(tenantId, keys);
    return keys.map((): void => undefined);
  });

/** One value per key object, made on its first use: a module's shared statements per process (its Deps). */
export function oncePer<K extends object, V>(make: (key: K) => V): (key: K) => V {
  const made = new WeakMap<K, V>();
  return (key) => made.get(key) ?? made.set(key, make(key)).get(key)!;
}
