import type { Kysely } from 'kysely';
import { type ChangeWatch, storeOf } from './connect.js';
import type { DB } from './schema.js';

// In-memory caches of values read from a few tables, trusted only while those tables have
// not changed: on SQLite the store's ChangeWatch says when a row of them may have changed (a
// write through this store, counted before it runs, so also one inside a transaction that
// is still open or later rolled back; or a commit of any other connection to the file), and
// the store's whole cache is dropped then. On PostgreSQL, where other processes write
// without telling this one, there is no watch and every get() reads. So a cached value is
// what a read of the tables would answer at that moment.

interface PerStore<K, V> {
  watch: ChangeWatch;
  version: number;
  entries: Map<K, V>;
}

export class TableCache<K, V> {
  private readonly stores = new WeakMap<object, PerStore<K, V> | null>();

  constructor(
    private readonly tables: readonly string[],
    private readonly max = 1_000,
  ) {}

  /**
   * The value of `key` on the store `db` belongs to: cached, or `load()`. A loaded value is
   * kept when `keep` allows it and the tables did not change while it was read.
   */
  async get(db: Kysely<DB>, key: K, load: () => Promise<V>, keep: (v: V) => boolean = () => true): Promise<V> {
    const c = this.forStore(db);
    if (!c) return load();
    const version = c.watch.version();
    if (version !== c.version) {
      c.entries.clear();
      c.version = version;
    } else {
      const hit = c.entries.get(key);
      if (hit !== undefined || c.entries.has(key)) return hit as V;
    }
    const value = await load();
    if (keep(value) && c.watch.version() === version && c.version === version) {
      if (c.entries.size >= this.max) c.entries.clear();
      c.entries.set(key, value);
    }
    return value;
  }

  /** The cached value of `key`, without reading: `undefined` when it would have to be read. */
  peek(db: Kysely<DB>, key: K): { value: V } | undefined {
    const c = this.forStore(db);
    if (!c || c.watch.version() !== c.version || !c.entries.has(key)) return undefined;
    return { value: c.entries.get(key) as V };
  }

  private forStore(db: Kysely<DB>): PerStore<K, V> | null {
    const adapter = db.getExecutor().adapter;
    let c = this.stores.get(adapter);
    if (c === undefined) {
      const watch = storeOf(db)?.watch?.(this.tables);
      c = watch ? { watch, version: -1, entries: new Map() } : null;
      this.stores.set(adapter, c);
    }
    return c;
  }
}
