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

/** What the in-process searches keep of the bases they search, under one memory budget. */
export interface BaseCache {
  /**
   * The base's `kind` of value (its vectors of a model, its words) at its version or a later one,
   * from `read` unless kept; searches that miss it together share one read.
   */
  get<T>(base: BaseRef, kind: string, read: () => Promise<Loaded<T>>): Promise<T>;
}

/**
 * Kept per process until the base's chunk version moves, least recently used first out when over
 * `cacheBytes` (vectors and words alike). A value too big for the whole budget is read for each
 * search without being kept. Versions only grow, so a search that read an older version (it
 * started before a change committed) is served what a newer one keeps, and never displaces it.
 */
export function baseCache(cacheBytes: number): BaseCache {
  const kept = new Map<string, { version: number; value: unknown; bytes: number }>();
  const reading = new Map<string, { version: number; value: Promise<Loaded<unknown>> }>();
  let keptBytes = 0;
  const forget = (key: string) => {
    const entry = kept.get(key);
    if (!entry) return;
    keptBytes -= entry.bytes;
    kept.delete(key);
  };
  const keep = (key: string, version: number, { value, bytes }: Loaded<unknown>) => {
    if ((kept.get(key)?.version ?? -Infinity) > version) return;
    forget(key);
    if (bytes > cacheBytes) return;
    kept.set(key, { version, value, bytes });
    keptBytes += bytes;
    for (const oldest of kept.keys()) {
      if (keptBytes <= cacheBytes) break;
      forget(oldest);
    }
  };

  return {
    async get<T>(base: BaseRef, kind: string, read: () => Promise<Loaded<T>>): Promise<T> {
      const key = `${base.tenantId}/${base.id}/${kind}`;
      const hit = kept.get(key);
      if (hit && hit.version >= base.chunksVersion) {
        kept.delete(key);
        kept.set(key, hit);
        return hit.value as T;
      }
      let pending = reading.get(key);
      if (!pending || pending.version < base.chunksVersion) {
        const started = { version: base.chunksVersion, value: read() as Promise<Loaded<unknown>> };
        pending = started;
        reading.set(key, started);
        void started.value
          .then(
            (loaded) => keep(key, started.version, loaded),
            () => undefined,
          )
          .finally(() => {
            if (reading.get(key) === started) reading.delete(key);
          });
      }
      return (await pending.value).value as T;
    },
  };
}
