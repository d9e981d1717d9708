import type { Clock } from './clock.ts';
import type { Db } from './db.ts';
import type { Logger } from './logger.ts';

export const KEY_REVOKED_CHANNEL = 'callforge_api_key_revoked';

export interface CachedKey {
  keyId: string;
  tenantId: string | null;
  agentId: string | null;
  expiresAt: Date | null;
}

/**
 * Keeps valid API keys in memory so a known key costs no database round trip.
 * Revocation is pushed to every process by NOTIFY in the revoking transaction; while the
 * LISTEN connection is down nothing is served from the cache, so a revoked key is never honoured.
 */
export interface ApiKeyCache {
  get(keyHash: string): CachedKey | undefined;
  /** Changes whenever a key may have been revoked; read it before looking a key up in the database. */
  generation(): number;
  /** Caches a key read from the database, unless a revocation arrived since `generation` was read. */
  set(keyHash: string, key: CachedKey, generationAtLookup: number): void;
  evict(keyHash: string): void;
  /** Records use of a key; `last_used_at` is written in batches, not per request. */
  touch(keyId: string): void;
  close(): Promise<void>;
}

const MAX_ENTRIES = 10_000;
const TOUCH_FLUSH_MS = 5_000;
const RELISTEN_MS = 1_000;

export async function startApiKeyCache(
  db: Db,
  clock: Clock,
  log: Logger,
  recordUse: (keyIds: string[], at: Date) => Promise<void>,
): Promise<ApiKeyCache> {
  const entries = new Map<string, CachedKey>();
  const used = new Set<string>();
  let trusted = false;
  let generation = 0;
  let closed = false;
  let unlisten: (() => Promise<void>) | undefined;
  let relistenTimer: NodeJS.Timeout | undefined;

  const evict = (keyHash: string) => {
    generation++;
    entries.delete(keyHash);
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
      unlisten = await db.listen(KEY_REVOKED_CHANNEL, evict, onLost);
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
    evict,
    touch: (keyId) => void used.add(keyId),
    async close() {
      closed = true;
      clearInterval(flushTimer);
      clearTimeout(relistenTimer);
      await flushUsage();
      await unlisten?.();
    },
  };
}
