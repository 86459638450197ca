import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';

// The tables a reset empties, found at run time so an area that lands later is covered
// without edits: every table with a `platform_id` column, except those that hold the
// platform itself, its credentials and its configuration (KEPT_ON_RESET), plus every table
// without `platform_id` that references one of them by a foreign key (a child reached
// through its parent). Deleted children first, in the order the foreign keys require.

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Tables a reset keeps: the platform, its tokens and its configuration. An area whose table
 * holds configuration (not data) adds its name here; every other platform-scoped table is
 * emptied by a reset.
 */
export const KEPT_ON_RESET = new Set<string>(['platforms', 'platform_configs', 'fee_configs', 'api_tokens', 'data_keys', 'sandbox_snapshots']);

/**
 * Children that reach their parent without a foreign key (the column names the parent's id,
 * but the schema declares no reference): found like the others, by this list.
 */
export const CHILDREN_WITHOUT_KEYS: readonly Fk[] = [
  { child: 'bulk_import_rows', column: 'import_id', parent: 'bulk_imports', parentColumn: 'id' },
  { child: 'bulk_import_errors', column: 'import_id', parent: 'bulk_imports', parentColumn: 'id' },
];

export interface ResetTable {
  name: string;
  /** Has a platform_id column (else a child: `via` names how it reaches its parent). */
  scoped: boolean;
  via?: { column: string; parent: string; parentColumn: string };
  /** Its columns, generated ones left out (what a snapshot reads and writes back). */
  columns: string[];
}

export interface Fk {
  child: string;
  column: string;
  parent: string;
  parentColumn: string;
}

interface Discovered {
  columns: Map<string, Set<string>>;
  fks: Fk[];
}

/** The last discovery of each store, with the schema's fingerprint it was read under. */
const discovered = new WeakMap<Store, { fingerprint: string; found: Discovered }>();

/**
 * A text that changes whenever a table, a column or a foreign key is added, changed or
 * dropped (by this process or another): SQLite's schema_version; on PostgreSQL the
 * schema's pg_class rows (their number and newest version) and its constraints.
 */
async function schemaFingerprint(store: Store): Promise<string> {
  const db = store.db as unknown as AnyDb;
  if (store.kind === 'sqlite') return String((await sql<{ v: number }>`select schema_version as v from pragma_schema_version`.execute(db)).rows[0]?.v);
  const r = (
    await sql<{ c: string; k: string; x: string }>`
      select count(*) as c, max(xmin::text::bigint) as x,
        (select count(*) from pg_constraint where connamespace = current_schema()::regnamespace) as k
      from pg_class where relnamespace = current_schema()::regnamespace`.execute(db)
  ).rows[0];
  // A column added or dropped rewrites its table's pg_class row (relnatts): a newer xmin.
  return `${r?.c}/${r?.k}/${r?.x}`;
}

/** The tables, their columns and foreign keys: read again only when the schema changed (a read costs a statement or two per table). */
async function tablesAndKeys(store: Store): Promise<Discovered> {
  const fingerprint = await schemaFingerprint(store);
  const hit = discovered.get(store);
  if (hit?.fingerprint === fingerprint) return hit.found;
  const found = await discover(store);
  discovered.set(store, { fingerprint, found });
  return found;
}

async function discover(store: Store): Promise<Discovered> {
  const db = store.db as unknown as AnyDb;
  const columns = new Map<string, Set<string>>();
  const fks: Fk[] = [];
  if (store.kind === 'sqlite') {
    const tables = (await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`.execute(db)).rows;
    for (const { name } of tables) {
      const cols = (await sql<{ name: string }>`select name from pragma_table_info(${name})`.execute(db)).rows;
      columns.set(name, new Set(cols.map((c) => c.name)));
      const keys = (await sql<{ table: string; from: string; to: string | null }>`select "table", "from", "to" from pragma_foreign_key_list(${name})`.execute(db)).rows;
      for (const k of keys) fks.push({ child: name, column: k.from, parent: k.table, parentColumn: k.to ?? 'id' });
    }
  } else {
    const cols = (
      await sql<{ table_name: string; column_name: string }>`select table_name, column_name from information_schema.columns
        where table_schema = current_schema() and is_generated = 'NEVER' order by table_name, ordinal_position`.execute(db)
    ).rows;
    for (const c of cols) {
      let set = columns.get(c.table_name);
      if (!set) columns.set(c.table_name, (set = new Set()));
      set.add(c.column_name);
    }
    const keys = (
      await sql<{ child: string; column: string; parent: string; parent_column: string }>`
        select cl.relname as child, a.attname as "column", pl.relname as parent, pa.attname as parent_column
        from pg_constraint con
        join pg_class cl on cl.oid = con.conrelid
        join pg_class pl on pl.oid = con.confrelid
        join pg_attribute a on a.attrelid = con.conrelid and a.attnum = con.conkey[1]
        join pg_attribute pa on pa.attrelid = con.confrelid and pa.attnum = con.confkey[1]
        where con.contype = 'f' and con.connamespace = current_schema()::regnamespace`.execute(db)
    ).rows;
    for (const k of keys) fks.push({ child: k.child, column: k.column, parent: k.parent, parentColumn: k.parent_column });
  }
  for (const k of CHILDREN_WITHOUT_KEYS) if (columns.has(k.child) && columns.has(k.parent)) fks.push(k);
  return { columns, fks };
}

/** The tables a reset empties, in a safe delete order (a table before any table it references). */
export async function resetTables(store: Store): Promise<ResetTable[]> {
  return platformTables(store, KEPT_ON_RESET);
}

/**
 * The tables that hold one platform's rows, in a safe delete order (a table before any table
 * it references): every table with a `platform_id` column but those of `kept` and those kept
 * by triggers, plus every table without `platform_id` that references one of them (a child
 * reached through its parent). A reset keeps KEPT_ON_RESET; a snapshot (sandbox/snapshots)
 * also covers the configuration.
 */
export async function platformTables(store: Store, kept: ReadonlySet<string>): Promise<ResetTable[]> {
  const { columns, fks } = await tablesAndKeys(store);
  const chosen = new Map<string, ResetTable>();
  for (const [name, cols] of columns) {
    if (name.startsWith('kysely_') || kept.has(name) || KEPT_BY_TRIGGERS.has(name)) continue;
    if (cols.has('platform_id')) chosen.set(name, { name, scoped: true, columns: [...cols] });
  }
  // Children without platform_id, reached through a foreign key to an emptied table.
  for (const fk of fks) {
    if (chosen.has(fk.child) || kept.has(fk.child) || fk.child.startsWith('kysely_')) continue;
    const parent = chosen.get(fk.parent);
    if (parent?.scoped) chosen.set(fk.child, { name: fk.child, scoped: false, via: { column: fk.column, parent: fk.parent, parentColumn: fk.parentColumn }, columns: [...(columns.get(fk.child) ?? [])] });
  }
  return deleteOrder(chosen, fks);
}

/**
 * Every table of the store but the migrator's, SQLite's own and those of `excluded`, in a
 * safe delete order: what the operator's whole-store snapshot saves and restores. A table
 * with `platform_id` is `scoped`; the others are whole (deleteRows with platformId null
 * empties only rows that have a platform, so a whole-store restore deletes with deleteAll).
 */
export async function storeTables(store: Store, excluded: ReadonlySet<string>): Promise<ResetTable[]> {
  const { columns, fks } = await tablesAndKeys(store);
  const chosen = new Map<string, ResetTable>();
  for (const [name, cols] of columns) {
    if (name.startsWith('kysely_') || name.startsWith('sqlite_') || excluded.has(name) || KEPT_BY_TRIGGERS.has(name)) continue;
    chosen.set(name, { name, scoped: cols.has('platform_id'), columns: [...cols] });
  }
  return deleteOrder(chosen, fks);
}

/** Order: a table goes once no other remaining chosen table references it. */
function deleteOrder(chosen: Map<string, ResetTable>, fks: Fk[]): ResetTable[] {
  const remaining = new Set(chosen.keys());
  const order: ResetTable[] = [];
  while (remaining.size > 0) {
    const next = [...remaining].filter((t) => !fks.some((fk) => fk.parent === t && fk.child !== t && remaining.has(fk.child)));
    const batch = next.length > 0 ? next : [...remaining]; // a cycle: delete in any order
    for (const t of batch.sort()) {
      order.push(chosen.get(t)!);
      remaining.delete(t);
    }
  }
  return order;
}

/**
 * Never deleted by a reset: written by triggers on the tables a reset empties
 * (kernel/db/list-counts.ts), so the deletes themselves bring them to zero: at once on
 * SQLite, at commit on PostgreSQL (deferred triggers). Deleting them would leave the
 * decrements alone (a customers totalCount of -5 after a reset).
 */
export const KEPT_BY_TRIGGERS = new Set<string>(['list_counts']);

/**
 * Emptied by a reset like the others, but written by triggers from other tables' rows
 * (transaction_volumes: each corridor's day of OUTGOING volume, from transactions): a
 * snapshot never copies them, the triggers write them again as the rows they count are
 * inserted back.
 */
export const REBUILT_BY_TRIGGERS = new Set<string>(['transaction_volumes']);

/** The rows of `t` that belong to one platform (every platform's when platformId is null; every row with `all`). */
function rowsOf(t: ResetTable, platformId: string | null, all = false) {
  if (all) return sql``;
  if (t.scoped) return platformId === null ? sql`where platform_id is not null` : sql`where platform_id = ${platformId}`;
  const v = t.via!;
  return platformId === null
    ? sql`where ${sql.ref(v.column)} in (select ${sql.ref(v.parentColumn)} from ${sql.table(v.parent)} where platform_id is not null)`
    : sql`where ${sql.ref(v.column)} in (select ${sql.ref(v.parentColumn)} from ${sql.table(v.parent)} where platform_id = ${platformId})`;
}

/** Empty the tables of one platform (or of every platform when platformId is null). Returns rows deleted per table. */
export async function deleteRows(db: AnyDb, tables: ResetTable[], platformId: string | null): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const t of tables) {
    const res = await sql`delete from ${sql.table(t.name)} ${rowsOf(t, platformId)}`.execute(db);
    counts[t.name] = Number(res.numAffectedRows ?? 0n);
  }
  return counts;
}

/**
 * The names of the tables that hold a row of the platform, in one statement (one round trip
 * instead of a delete per table: a small platform has rows in few of them).
 */
export async function tablesWithRows(db: AnyDb, tables: ResetTable[], platformId: string): Promise<Set<string>> {
  if (tables.length === 0) return new Set();
  const parts = tables.map((t) => sql`select ${t.name} as name where exists (select 1 from ${sql.table(t.name)} ${rowsOf(t, platformId)})`);
  const res = await sql<{ name: string }>`${sql.join(parts, sql` union all `)}`.execute(db);
  return new Set(res.rows.map((r) => r.name));
}

/** Empty the tables entirely (every row, with a platform or not): the whole-store restore. Returns the rows deleted. */
export async function deleteAll(db: AnyDb, tables: ResetTable[]): Promise<number> {
  let n = 0;
  for (const t of tables) n += Number((await sql`delete from ${sql.table(t.name)}`.execute(db)).numAffectedRows ?? 0n);
  return n;
}

/**
 * The rows of one table that belong to a platform (or every row of it with platformId null
 * and `all`), as arrays of the values of `t.columns` in that order: what a snapshot keeps.
 */
export async function selectRows(db: AnyDb, t: ResetTable, platformId: string | null, all = false): Promise<unknown[][]> {
  const cols = sql.join(t.columns.map((c) => sql.ref(c)));
  const res = await sql<Record<string, unknown>>`select ${cols} from ${sql.table(t.name)} ${rowsOf(t, platformId, all)}`.execute(db);
  return res.rows.map((r) => t.columns.map((c) => r[c] ?? null));
}
