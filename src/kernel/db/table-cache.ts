import type { Kysely } from 'kysely';
import type { ChangeWatch } from './change-watch.js';
import { storeOf } from './connect.js';
import type { DB } from './schema.js';

// In-memory caches of values read from a few tables, trusted only while those tables have
// not changed: on SQLite the store's ChangeWatch says when a row of them may have changed (a
// write through this store, counted before it runs, so also one inside a transaction that
// is still open or later rolled back; or a commit of any other connection to the file), and
// the store's whole cache is dropped then. So a cached value is what a read of the tables
// would answer at that moment.
//
// On PostgreSQL the store's watch counts this process's writes (again when their transaction
// ends) and the commits other connections announce with NOTIFY (pg-change-watch.ts): values
// are kept across requests as on SQLite. A transaction reads through them too, except while
// some open transaction of this process has written the tables (perhaps this one, which
// must read its own uncommitted rows and must not show them to anyone else), or the tables
// are not notified: then a value is kept for that transaction only, while no write to the
// tables went through this process (Store.localWatch): a payment reads its customer once,
// not four times (issue 15: each read is a round trip). Reads that must see other
// transactions' commits lock their rows (`for update`) and do not go through a TableCache.

interface PerStore<K, V> {
  watch: ChangeWatch;
  kind?: 'sqlite' | 'postgres';
  version: number;
  entries: Map<K, V>;
}

export class TableCache<K, V> {
  private readonly stores = new WeakMap<object, PerStore<K, V> | null>();
  /** PostgreSQL: per open transaction (the Transaction object), its values. */
  private readonly transactions = new WeakMap<object, PerStore<K, V>>();

  /** Every table some TableCache reads (each must be in pg-change-watch's CHANGE_NOTIFIED_TABLES: tested). */
  static readonly tables = new Set<string>();

  constructor(
    private readonly tables: readonly string[],
    private readonly max = 1_000,
  ) {
    for (const t of tables) TableCache.tables.add(t);
  }

  /**
   * The value of `key` on the store `db` belongs to: cached, or `load()`. A loaded value is
   * kept when `keep` allows it and the tables did not change while it was read.
   */
  async get(db: Kysely<DB>, key: K, load: () => Promise<V>, keep: (v: V) => boolean = () => true): Promise<V> {
    const c = this.forStore(db) ?? this.forTransaction(db);
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
    if (keep(value) && c.watch.version() === version && c.version === version && (c.kind !== 'postgres' || !db.isTransaction || c.watch.sharedInTransaction?.() === true)) {
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

  private forTransaction(db: Kysely<DB>): PerStore<K, V> | null {
    if (!db.isTransaction) return null;
    let c = this.transactions.get(db);
    if (c === undefined) {
      const watch = storeOf(db)?.localWatch?.(this.tables);
      if (!watch) return null;
      c = { watch, version: -1, entries: new Map() };
      this.transactions.set(db, c);
    }
    return c;
  }

  private forStore(db: Kysely<DB>): PerStore<K, V> | null {
    const adapter = db.getExecutor().adapter;
    let c = this.stores.get(adapter);
    if (c === undefined) {
      const store = storeOf(db);
      const watch = store?.watch?.(this.tables);
      c = watch ? { watch, version: -1, entries: new Map(), kind: store!.kind } : null;
      this.stores.set(adapter, c);
    }
    // A PostgreSQL transaction reads what it wrote before it commits, which nobody else may
    // see: while some open transaction of this process has written the tables (this one
    // perhaps), a transaction keeps its own values (forTransaction). Otherwise what the
    // process's cache holds is what the transaction's statement would read (read committed).
    if (c?.kind === 'postgres' && db.isTransaction && !c.watch.sharedInTransaction?.()) return null;
    return c;
  }
}
