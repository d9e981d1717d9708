import type { Clock } from './clock.ts';
import type { Queryable } from './db.ts';
import { appError, type AppError } from './errors.ts';

export const OWNED_TABLES = ['auth_failures'] as const;

/**
 * Failed attempts counted in fixed windows, in the database so every API process counts the same
 * failures: failed sign-ins per account and per address, requests with an invalid API key per
 * address. A window starts at a key's first failure and lasts `windowSeconds`; once a key has
 * `max` failures in it, the next attempt is refused until the window ends. Only failures (and
 * sign-ins, which are rare and slow anyway) touch the table: a valid API key never does.
 */
export interface FailureKey {
  /** What is counted: "login-account:<hash>", "login-address:<ip>", "api-key-address:<ip>". */
  key: string;
  max: number;
  windowSeconds: number;
}

const secondsLeft = (startedAt: Date, windowSeconds: number, now: Date) =>
  Math.max(1, Math.ceil((startedAt.getTime() + windowSeconds * 1000 - now.getTime()) / 1000));

/** Seconds to wait before `keys` may be tried again (the longest wait of those at their limit), or null. One read. */
export async function failureWait(db: Queryable, clock: Clock, keys: readonly FailureKey[]): Promise<number | null> {
  const now = clock.now();
  const { rows } = await db.query<{ key: string; failures: number; window_started_at: Date }>(
    'SELECT key, failures, window_started_at FROM auth_failures WHERE key = ANY($1::text[])',
    [keys.map((entry) => entry.key)],
  );
  let wait: number | null = null;
  for (const row of rows) {
    const limit = keys.find((entry) => entry.key === row.key)!;
    const ends = row.window_started_at.getTime() + limit.windowSeconds * 1000;
    if (row.failures >= limit.max && ends > now.getTime())
      wait = Math.max(wait ?? 0, secondsLeft(row.window_started_at, limit.windowSeconds, now));
  }
  return wait;
}

/**
 * Counts one failure against each key (a window that has ended starts again at one) and forgets
 * the counters whose windows ended long ago. `wait`: the seconds to wait when a key has now
 * reached its limit (the next attempt is refused), else null; `beyond`: this very failure was
 * past a limit (another process had not yet refused the caller).
 */
export async function countFailure(
  db: Queryable,
  clock: Clock,
  keys: readonly FailureKey[],
): Promise<{ wait: number | null; beyond: boolean }> {
  const now = clock.now();
  let wait: number | null = null;
  let beyond = false;
  for (const entry of keys) {
    const windowStart = new Date(now.getTime() - entry.windowSeconds * 1000);
    const { rows } = await db.query<{ failures: number; window_started_at: Date }>(
      `INSERT INTO auth_failures AS f (key, failures, window_started_at) VALUES ($1, 1, $2)
       ON CONFLICT (key) DO UPDATE SET
         failures = CASE WHEN f.window_started_at <= $3 THEN 1 ELSE f.failures + 1 END,
         window_started_at = CASE WHEN f.window_started_at <= $3 THEN $2 ELSE f.window_started_at END
       RETURNING failures, window_started_at`,
      [entry.key, now, windowStart],
    );
    const row = rows[0]!;
    if (row.failures >= entry.max) wait = Math.max(wait ?? 0, secondsLeft(row.window_started_at, entry.windowSeconds, now));
    if (row.failures > entry.max) beyond = true;
  }
  // No window is longer than a day (AUTH_FAILURE_WINDOW_SECONDS): older counters are over.
  await db.query('DELETE FROM auth_failures WHERE window_started_at < $1', [new Date(now.getTime() - 86_400_000)]);
  return { wait, beyond };
}

/** Forgets a key's failures (a successful sign-in clears its account's counter). */
export async function clearFailures(db: Queryable, key: string): Promise<void> {
  await db.query('DELETE FROM auth_failures WHERE key = $1', [key]);
}

/** "42 seconds", "15 minutes": how long a refused caller waits, in the words of the 429's sentence. */
export function waitInWords(seconds: number): string {
  if (seconds < 120) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  return `${Math.ceil(seconds / 60)} minutes`;
}

/** The 429 for too many failures, its Retry-After set. */
export function tooManyFailures(what: 'login' | 'invalidKey', seconds: number): AppError {
  const error =
    what === 'login'
      ? appError('RATE_LIMITED.login', { after: waitInWords(seconds) })
      : appError('RATE_LIMITED.invalidKey', { after: waitInWords(seconds) });
  error.retryAfterSeconds = seconds;
  return error;
}

/**
 * The addresses this process knows to be over their invalid-key limit, until when: a refused
 * address is answered from memory, so a flood of bad keys costs no database work. Another process
 * learns of the block at its own first failure from that address (its count is the shared one).
 */
export class BlockedAddresses {
  private readonly until = new Map<string, number>();
  constructor(
    private readonly clock: Clock,
    private readonly maxEntries = 10_000,
  ) {}

  /** Seconds this address still waits, or null. */
  wait(address: string): number | null {
    const until = this.until.get(address);
    if (until === undefined) return null;
    const left = Math.ceil((until - this.clock.now().getTime()) / 1000);
    if (left > 0) return left;
    this.until.delete(address);
    return null;
  }

  block(address: string, seconds: number): void {
    if (this.until.size >= this.maxEntries) this.until.delete(this.until.keys().next().value!);
    this.until.set(address, this.clock.now().getTime() + seconds * 1000);
  }
}

/**
 * An API-key check that counts invalid keys per client address: at INVALID_API_KEYS_PER_ADDRESS
 * the address's invalid keys are refused (429) until its window ends. A valid key costs nothing
 * more than before and is never refused; an invalid one costs one upsert until its address is
 * refused, then only its lookup.
 */
export function countingInvalidKeys<Check extends { status: string }>(
  check: (token: string) => Promise<Check>,
  db: Queryable,
  clock: Clock,
  limit: { max: number; windowSeconds: number },
): (token: string, address: string) => Promise<Check | { status: 'throttled'; retryAfterSeconds: number }> {
  const blocked = new BlockedAddresses(clock);
  return async (token, address) => {
    const result = await check(token);
    // A valid key is never refused for what others at its address did (many clients share one
    // address behind a NAT or a proxy); a refused address's invalid keys are not even counted.
    if (result.status !== 'invalid') return result;
    const waiting = blocked.wait(address);
    if (waiting) return { status: 'throttled', retryAfterSeconds: waiting };
    const { wait, beyond } = await countFailure(db, clock, [{ key: `api-key-address:${address}`, ...limit }]);
    if (wait) blocked.block(address, wait);
    if (wait && beyond) return { status: 'throttled', retryAfterSeconds: wait };
    return result;
  };
}
