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
export const KEPT_ON_RESET = new Set<string>(['platforms', 'platform_configs', 'fee_configs', 'api_tokens', 'data_keys']);

export interface ResetTable {
  name: string;
  /** Has a platform_id column (else a child: `via` names how it reaches its parent). */
  scoped: boolean;
  via?: { column: string; parent: string; parentColumn: string };
}

interface Fk {
  child: string;
  column: string;
  parent: string;
  parentColumn: string;
}

async function tablesAndKeys(store: Store): Promise<{ columns: Map<string, Set<string>>; fks: Fk[] }> {
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
      await sql<{ table_name: string; column_name: string }>`select table_name, column_name from information_schema.columns where table_schema = current_schema()`.execute(db)
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
  return { columns, fks };
}

/** The tables a reset empties, in a safe delete order (a table before any table it references). */
export async function resetTables(store: Store): Promise<ResetTable[]> {
  const { columns, fks } = await tablesAndKeys(store);
  const chosen = new Map<string, ResetTable>();
  for (const [name, cols] of columns) {
    if (name.startsWith('kysely_') || KEPT_ON_RESET.has(name) || KEPT_BY_TRIGGERS.has(name)) continue;
    if (cols.has('platform_id')) chosen.set(name, { name, scoped: true });
  }
  // Children without platform_id, reached through a foreign key to an emptied table.
  for (const fk of fks) {
    if (chosen.has(fk.child) || KEPT_ON_RESET.has(fk.child) || fk.child.startsWith('kysely_')) continue;
    const parent = chosen.get(fk.parent);
    if (parent?.scoped) chosen.set(fk.child, { name: fk.child, scoped: false, via: { column: fk.column, parent: fk.parent, parentColumn: fk.parentColumn } });
  }
  // Order: a table goes once no other remaining chosen table references it.
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

/** Empty the tables of one platform (or of every platform when platformId is null). Returns rows deleted per table. */
export async function deleteRows(db: AnyDb, tables: ResetTable[], platformId: string | null): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const t of tables) {
    let q;
    if (t.scoped) {
      q = platformId === null ? sql`delete from ${sql.table(t.name)} where platform_id is not null` : sql`delete from ${sql.table(t.name)} where platform_id = ${platformId}`;
    } else {
      const v = t.via!;
      q =
        platformId === null
          ? sql`delete from ${sql.table(t.name)} where ${sql.ref(v.column)} in (select ${sql.ref(v.parentColumn)} from ${sql.table(v.parent)} where platform_id is not null)`
          : sql`delete from ${sql.table(t.name)} where ${sql.ref(v.column)} in (select ${sql.ref(v.parentColumn)} from ${sql.table(v.parent)} where platform_id = ${platformId})`;
    }
    const res = await q.execute(db);
    counts[t.name] = Number(res.numAffectedRows ?? 0n);
  }
  return counts;
}
