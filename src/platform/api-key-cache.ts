import { randomBytes } from 'node:crypto';
import type { Clock } from './clock.ts';
import type { Db } from './db.ts';
import type { Logger } from './logger.ts';

export const KEY_REVOKED_CHANNEL = 'callforge_api_key_revoked';
const KEY_EVICTED_CHANNEL = 'callforge_api_key_evicted';
const LISTENER_APP_PREFIX = 'callforge-keys:';

export interface CachedKey {
  keyId: string;
  tenantId: string | null;
  agentId: string | null;
  expiresAt: Date | null;
}

/**
 * Keeps valid API keys in memory so a known key costs no database round trip.
 *
 * Revocation is pushed to every API process by NOTIFY from the revoking transaction. Each process
 * evicts the key and acknowledges; the revoking request waits for the acknowledgements of every
 * listening process (found in pg_stat_activity) before it answers, so once the revocation has been
 * answered no process honours the key. While a process's LISTEN connection is down it serves
 * nothing from its cache.
 */
export interface ApiKeyCache {
  get(keyHash: string): CachedKey | undefined;
  /** Changes whenever a key may have been revoked; read it before looking a key up in the database. */
  generation(): number;
  /** Caches a key read from the database, unless a revocation arrived since `generation` was read. */
  set(keyHash: string, key: CachedKey, generationAtLookup: number): void;
  /** Runs `revoke` (which commits the revocation of `keyHash`) and waits until every API process dropped the key. */
  revokeEverywhere(keyHash: string, revoke: () => Promise<boolean>): Promise<boolean>;
  /** Records use of a key; `last_used_at` is written in batches, not per request. */
  touch(keyId: string): void;
  close(): Promise<void>;
}

const MAX_ENTRIES = 10_000;
const TOUCH_FLUSH_MS = 5_000;
const RELISTEN_MS = 1_000;
const ACK_TIMEOUT_MS = 3_000;

export async function startApiKeyCache(
  db: Db,
  clock: Clock,
  log: Logger,
  recordUse: (keyIds: string[], at: Date) => Promise<void>,
): Promise<ApiKeyCache> {
  const processId = randomBytes(8).toString('hex');
  const entries = new Map<string, CachedKey>();
  const used = new Set<string>();
  const awaitingAcks = new Map<string, { acked: Set<string>; changed: () => void }>();
  let trusted = false;
  let generation = 0;
  let closed = false;
  const unlisteners: (() => Promise<void>)[] = [];
  let relistenTimer: NodeJS.Timeout | undefined;

  const evict = (keyHash: string) => {
    generation++;
    entries.delete(keyHash);
  };

  const onRevoked = (keyHash: string) => {
    evict(keyHash);
    if (db.engine === 'postgres') {
      db.query('SELECT pg_notify($1, $2)', [KEY_EVICTED_CHANNEL, `${processId}:${keyHash}`]).catch((error: unknown) =>
        log.warn({ err: error }, 'could not acknowledge a key revocation'),
      );
    }
  };

  const onEvicted = (payload: string) => {
    const [from, keyHash] = payload.split(':');
    const waiting = keyHash ? awaitingAcks.get(keyHash) : undefined;
    if (!waiting || !from) return;
    waiting.acked.add(from);
    waiting.changed();
  };

  const onLost = () => {
    if (!trusted) return;
    trusted = false;
    generation++;
    entries.clear();
    log.warn('API key revocation feed lost; authenticating from the database until it is back');
    scheduleListen();
  };

  const listen = async () => {
    try {
      await Promise.all(unlisteners.splice(0).map((unlisten) => unlisten()));
      unlisteners.push(await db.listen(KEY_REVOKED_CHANNEL, onRevoked, { onLost, applicationName: LISTENER_APP_PREFIX + processId }));
      unlisteners.push(await db.listen(KEY_EVICTED_CHANNEL, onEvicted, { onLost }));
      generation++;
      entries.clear();
      trusted = true;
    } catch (error) {
      log.warn({ err: error }, 'could not listen for API key revocations');
      scheduleListen();
    }
  };

  function scheduleListen() {
    if (closed) return;
    relistenTimer = setTimeout(() => void listen(), RELISTEN_MS);
    relistenTimer.unref();
  }

  await listen();

  /** The API processes whose revocation listener is connected right now. */
  const listeningProcesses = async () => {
    const { rows } = await db.query<{ name: string }>(
      'SELECT application_name AS name FROM pg_stat_activity WHERE application_name LIKE $1',
      [LISTENER_APP_PREFIX + '%'],
    );
    return rows.map((row) => row.name.slice(LISTENER_APP_PREFIX.length));
  };

  const waitForAcks = async (waiting: { acked: Set<string> }, wake: () => Promise<void>) => {
    const expected = await listeningProcesses();
    const deadline = Date.now() + ACK_TIMEOUT_MS;
    while (!expected.every((id) => waiting.acked.has(id))) {
      const left = deadline - Date.now();
      if (left <= 0) {
        log.warn(
          { missing: expected.filter((id) => !waiting.acked.has(id)) },
          'some API processes did not confirm a key revocation in time',
        );
        return;
      }
      await Promise.race([wake(), new Promise((resolve) => setTimeout(resolve, Math.min(left, 100)))]);
    }
  };

  const flushUsage = async () => {
    if (used.size === 0) return;
    const ids = [...used];
    used.clear();
    await recordUse(ids, clock.now()).catch((error: unknown) => log.warn({ err: error }, 'could not record API key use'));
  };
  const flushTimer = setInterval(() => void flushUsage(), TOUCH_FLUSH_MS);
  flushTimer.unref();

  return {
    get: (keyHash) => (trusted ? entries.get(keyHash) : undefined),
    generation: () => generation,
    set(keyHash, key, generationAtLookup) {
      if (!trusted || generationAtLookup !== generation) return;
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
      entries.set(keyHash, key);
    },
    async revokeEverywhere(keyHash, revoke) {
      // Acks are collected from before the commit, so a fast one is never missed.
      const waiting = { acked: new Set<string>(), changed: () => undefined as void };
      let wake = Promise.resolve();
      const renew = () => {
        wake = new Promise<void>((resolve) => (waiting.changed = () => (resolve(), renew())));
      };
      renew();
      awaitingAcks.set(keyHash, waiting);
      try {
        if (!(await revoke())) return false;
        evict(keyHash);
        if (db.engine === 'postgres') await waitForAcks(waiting, () => wake);
        return true;
      } finally {
        awaitingAcks.delete(keyHash);
      }
    },
    touch: (keyId) => void used.add(keyId),
    async close() {
      closed = true;
      clearInterval(flushTimer);
      clearTimeout(relistenTimer);
      await flushUsage();
      await Promise.all(unlisteners.splice(0).map((unlisten) => unlisten()));
    },
  };
}
