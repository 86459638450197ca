import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { StoreKind } from '../../kernel/db/connect.js';

// The snapshots' own table (migration 0033_sandbox_snapshots) and the one write a restore
// adds to what the reset area's store does: a table's saved rows inserted back in one
// statement, whatever their number (one SQL text per table, so neither store's statement
// cache nor PostgreSQL's named statements fill with one text per batch size).

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export interface SnapshotRow {
  platform_id: string;
  name: string;
  created_at: string;
  sandbox_now_ms: number;
  /** JSON: rows per table. */
  tables: string;
  row_count: number;
  size_bytes: number;
}

const HEAD = ['platform_id', 'name', 'created_at', 'sandbox_now_ms', 'tables', 'row_count', 'size_bytes'] as const;

export async function listSnapshotRows(db: AnyDb, owner: string): Promise<SnapshotRow[]> {
  const rows = await db.selectFrom('sandbox_snapshots').select([...HEAD]).where('platform_id', '=', owner).orderBy('name').execute();
  return rows.map(numeric);
}

export async function findSnapshotRow(db: AnyDb, owner: string, name: string): Promise<SnapshotRow | undefined> {
  const row = await db.selectFrom('sandbox_snapshots').select([...HEAD]).where('platform_id', '=', owner).where('name', '=', name).executeTakeFirst();
  return row ? numeric(row) : undefined;
}

export async function snapshotData(db: AnyDb, owner: string, name: string): Promise<{ row: SnapshotRow; data: Uint8Array } | undefined> {
  const row = await db.selectFrom('sandbox_snapshots').select([...HEAD, 'data']).where('platform_id', '=', owner).where('name', '=', name).executeTakeFirst();
  return row ? { row: numeric(row), data: row.data as Uint8Array } : undefined;
}

export async function insertSnapshotRow(db: AnyDb, row: SnapshotRow & { data: Uint8Array }): Promise<void> {
  await db.insertInto('sandbox_snapshots').values(row).execute();
}

export async function deleteSnapshotRow(db: AnyDb, owner: string, name: string): Promise<boolean> {
  const res = await db.deleteFrom('sandbox_snapshots').where('platform_id', '=', owner).where('name', '=', name).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function numeric(r: any): SnapshotRow {
  return { platform_id: r.platform_id, name: r.name, created_at: r.created_at, sandbox_now_ms: Number(r.sandbox_now_ms), tables: r.tables, row_count: Number(r.row_count), size_bytes: Number(r.size_bytes) };
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Insert `rows` (objects keyed by column; a binary value as hex text) into `table`, in one
 * statement: the rows travel as one JSON parameter, which the database unpacks
 * (PostgreSQL json_populate_recordset, typed by the table itself; SQLite json_each, with
 * unhex() for the `binary` columns). Triggers run as for any insert (the kept counts, the
 * change notifications).
 */
export async function insertJsonRows(db: AnyDb, kind: StoreKind, table: string, columns: string[], binary: ReadonlySet<string>, rows: Record<string, unknown>[]): Promise<void> {
  if (rows.length === 0 || columns.length === 0) return;
  for (const c of [table, ...columns]) if (!IDENTIFIER.test(c)) throw new Error(`snapshot: unexpected identifier ${c}`);
  const cols = sql.join(columns.map((c) => sql.ref(c)));
  const json = JSON.stringify(rows);
  if (kind === 'postgres') {
    await sql`insert into ${sql.table(table)} (${cols}) select ${cols} from json_populate_recordset(null::${sql.table(table)}, ${json}::json)`.execute(db);
  } else {
    const values = sql.join(columns.map((c) => (binary.has(c) ? sql.raw(`unhex(value ->> '$.${c}')`) : sql.raw(`value ->> '$.${c}'`))));
    await sql`insert into ${sql.table(table)} (${cols}) select ${values} from json_each(${json})`.execute(db);
  }
}
