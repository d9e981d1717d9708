/** A knowledge base as a search sees it: its chunk version moves with every change to its chunks. */
export interface BaseRef {
  tenantId: string;
  id: string;
  chunksVersion: number;
}

/** What a search read of a base, and about how much memory it holds. */
export interface Loaded<T> {
  value: T;
  bytes: number;
}

/**
 * What the in-process searches read of a base (its vectors, its words), kept per process until
 * the base's chunk version moves, least recently used first out when over `cacheBytes`. A base
 * too big for the cache is read for each search without being kept. Searches that miss together
 * share one read.
 */
export function baseCache<T>(cacheBytes: number) {
  const kept = new Map<string, { version: number; value: T; bytes: number }>();
  const reading = new Map<string, { version: number; value: Promise<Loaded<T>> }>();
  let keptBytes = 0;
  const forget = (key: string) => {
    const entry = kept.get(key);
    if (!entry) return;
    keptBytes -= entry.bytes;
    kept.delete(key);
  };

  /** The base's value at its version, from `read` unless kept; `variant` tells apart values read differently (a model's vectors). */
  return async (base: BaseRef, variant: string, read: () => Promise<Loaded<T>>): Promise<T> => {
    const key = `${base.tenantId}/${base.id}/${variant}`;
    const hit = kept.get(key);
    if (hit?.version === base.chunksVersion) {
      kept.delete(key);
      kept.set(key, hit);
      return hit.value;
    }
    let pending = reading.get(key);
    if (pending?.version !== base.chunksVersion) {
      pending = { version: base.chunksVersion, value: read() };
      reading.set(key, pending);
      const settled = pending;
      void settled.value
        .then(
          ({ value, bytes }) => {
            // A read of another version may have started meanwhile: only the one started last is kept.
            if (reading.get(key) !== settled) return;
            forget(key);
            if (bytes > cacheBytes) return;
            kept.set(key, { version: settled.version, value, bytes });
            keptBytes += bytes;
            for (const oldest of kept.keys()) {
              if (keptBytes <= cacheBytes) break;
              forget(oldest);
            }
          },
          () => undefined,
        )
        .finally(() => {
          if (reading.get(key) === settled) reading.delete(key);
        });
    }
    return (await pending.value).value;
  };
}
