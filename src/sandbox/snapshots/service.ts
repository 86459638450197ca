import { gunzipSync, gzipSync } from 'node:zlib';
import type { Kysely } from 'kysely';
import type { AppDeps } from '../../kernel/deps.js';
import { iso } from '../../kernel/clock.js';
import { apiError } from '../../kernel/errors.js';
import { isUniqueViolation } from '../../kernel/db/connect.js';
import { findPlatform, listPlatforms, updatePlatform } from '../../operator/platforms/store.js';
import { requestLogOf } from '../request-log/service.js';
import { deleteAll, deleteRows, platformTables, REBUILT_BY_TRIGGERS, type ResetTable, selectRows, storeTables, tablesWithRows } from '../reset/store.js';
import { deleteSnapshotRow, findSnapshotRow, insertJsonRows, insertSnapshotRow, listSnapshotRows, snapshotData, type SnapshotRow } from './store.js';

// Sandbox snapshots (issue 36): a platform's state saved under a name and put back exactly,
// or (the operator's) the whole store's. What a snapshot holds is found at run time by the
// reset area's discovery (sandbox/reset/store.ts): every platform-scoped table and its
// children, plus the configuration a reset keeps (platform_configs, fee_configs) and the
// platform's sandbox options and clock; never its credentials (api_tokens), the store's data
// keys, or the counts triggers keep (list_counts, transaction_volumes: the inserted rows
// write them again). A restore deletes the platform's rows as a reset does and inserts the
// saved ones, parents first, in one transaction. Caches follow by themselves: every write
// goes through the store, whose change watch drops the row caches of this process, and on
// PostgreSQL the tables' triggers notify the other processes (kernel/db/table-cache.ts).

type AnyDb = Kysely<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Deps = Pick<AppDeps, 'store' | 'clock'>;

/** The owner of the operator's whole-store snapshots (no platform id looks like it). */
export const WHOLE_STORE = '*';

/** Never in a platform's snapshot: the platform row itself (its options and clock are, below), its credentials, the keys, the snapshots. */
export const NOT_IN_PLATFORM_SNAPSHOT = new Set<string>(['platforms', 'api_tokens', 'data_keys', 'sandbox_snapshots']);
/** Never in a whole-store snapshot: the snapshots themselves and the store's data keys (the migrations are never either). */
export const NOT_IN_STORE_SNAPSHOT = new Set<string>(['data_keys', 'sandbox_snapshots']);

export interface SnapshotView {
  name: string;
  createdAt: string;
  sandboxTime: string;
  rows: number;
  tables: Record<string, number>;
  sizeBytes: number;
}

export interface RestoreView {
  name: string;
  sandboxTime: string;
  rows: number;
  tables: Record<string, number>;
  deleted: number;
  durationMs: number;
}

/** What `data` holds, gzip-compressed JSON. A binary value is `{"$hex": "…"}`. */
interface SnapshotData {
  v: 1;
  /** A platform's snapshot: its sandbox options (platforms.options). */
  options?: string;
  tables: Record<string, { columns: string[]; rows: unknown[][] }>;
}

function viewOf(row: SnapshotRow): SnapshotView {
  return {
    name: row.name,
    createdAt: row.created_at,
    sandboxTime: iso(row.sandbox_now_ms),
    rows: row.row_count,
    tables: JSON.parse(row.tables) as Record<string, number>,
    sizeBytes: row.size_bytes,
  };
}

function notFound(name: string): never {
  throw apiError(404, 'REFERENCE_NOT_FOUND', `Snapshot ${name} not found`);
}

async function tablesOf(deps: Deps, owner: string): Promise<ResetTable[]> {
  return owner === WHOLE_STORE ? storeTables(deps.store, NOT_IN_STORE_SNAPSHOT) : platformTables(deps.store, NOT_IN_PLATFORM_SNAPSHOT);
}

function encode(v: unknown): unknown {
  if (v instanceof Uint8Array) return { $hex: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex') };
  if (typeof v === 'bigint') return Number(v);
  return v;
}

/**
 * Save the state of a platform (`owner` its id) or of the whole store (`owner` WHOLE_STORE)
 * under `name`. Read in one transaction (repeatable read on PostgreSQL: one consistent view
 * of every table). A name already taken is 409 CONFLICT unless `replace`.
 */
export async function saveSnapshot(deps: Deps, owner: string, name: string, replace: boolean): Promise<SnapshotView> {
  const tables = await tablesOf(deps, owner);
  const row = await deps.store.db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const db = trx as unknown as AnyDb;
      const realNow = deps.clock.nowMs();
      let sandboxNow = realNow;
      const data: SnapshotData = { v: 1, tables: {} };
      if (owner !== WHOLE_STORE) {
        const p = await findPlatform(trx, owner);
        if (!p) notFound(name);
        sandboxNow = realNow + Number(p.clock_offset_ms);
        data.options = p.options;
      }
      const counts: Record<string, number> = {};
      let total = 0;
      for (const t of tables) {
        if (REBUILT_BY_TRIGGERS.has(t.name)) continue;
        const rows = await selectRows(db, t, owner === WHOLE_STORE ? null : owner, owner === WHOLE_STORE);
        if (rows.length === 0) continue;
        data.tables[t.name] = { columns: t.columns, rows: rows.map((r) => r.map(encode)) };
        counts[t.name] = rows.length;
        total += rows.length;
      }
      const bytes = gzipSync(JSON.stringify(data));
      const head: SnapshotRow = {
        platform_id: owner,
        name,
        created_at: iso(realNow),
        sandbox_now_ms: sandboxNow,
        tables: JSON.stringify(counts),
        row_count: total,
        size_bytes: bytes.byteLength,
      };
      if (replace) await deleteSnapshotRow(db, owner, name);
      try {
        await insertSnapshotRow(db, { ...head, data: bytes });
      } catch (err) {
        if (isUniqueViolation(err)) throw apiError(409, 'CONFLICT', `A snapshot named ${name} exists already; delete it or save with ?replace=true`);
        throw err;
      }
      return head;
    });
  return viewOf(row);
}

export async function listSnapshots(deps: Deps, owner: string): Promise<{ data: SnapshotView[] }> {
  return { data: (await listSnapshotRows(deps.store.db as unknown as AnyDb, owner)).map(viewOf) };
}

export async function getSnapshot(deps: Deps, owner: string, name: string): Promise<SnapshotView> {
  const row = await findSnapshotRow(deps.store.db as unknown as AnyDb, owner, name);
  if (!row) notFound(name);
  return viewOf(row);
}

export async function deleteSnapshot(deps: Deps, owner: string, name: string): Promise<void> {
  if (!(await deleteSnapshotRow(deps.store.db as unknown as AnyDb, owner, name))) notFound(name);
}

/**
 * Put a platform (or the whole store) back as the snapshot saved it, in one transaction:
 * its rows deleted as a reset deletes them, the saved rows inserted, parents first; the
 * platform's sandbox options back, and its sandbox clock back to the time of the save (the
 * offset becomes that time minus the server clock now, so every pending job and webhook
 * retry is again as far ahead as it was). The whole store: every table emptied and filled
 * again (platforms made after the save are gone), every platform's clock back to its time
 * at the save. The request log of the platform (every one) is cleared, as a reset does.
 */
export async function restoreSnapshot(deps: Deps, owner: string, name: string): Promise<RestoreView> {
  const started = performance.now();
  const db0 = deps.store.db as unknown as AnyDb;
  const found = await snapshotData(db0, owner, name);
  if (!found) notFound(name);
  const data = JSON.parse(gunzipSync(found.data).toString('utf8')) as SnapshotData;
  const tables = await tablesOf(deps, owner);
  const whole = owner === WHOLE_STORE;
  const result = await deps.store.db.transaction().execute(async (trx) => {
    const db = trx as unknown as AnyDb;
    let deleted = 0;
    if (whole) {
      deleted = await deleteAll(db, tables);
    } else {
      if (!(await findPlatform(trx, owner))) notFound(name);
      // Only the tables that hold rows of the platform now (one statement finds them), in the delete order.
      const holding = await tablesWithRows(db, tables, owner);
      for (const n of Object.values(await deleteRows(db, tables.filter((t) => holding.has(t.name)), owner))) deleted += n;
    }
    const counts: Record<string, number> = {};
    let total = 0;
    for (const t of [...tables].reverse()) {
      const saved = data.tables[t.name];
      if (!saved || saved.rows.length === 0) continue;
      const present = new Set(t.columns);
      const columns = saved.columns.filter((c) => present.has(c));
      const binary = new Set<string>();
      const rows = saved.rows.map((r) => {
        const o: Record<string, unknown> = {};
        saved.columns.forEach((c, i) => {
          if (!present.has(c)) return;
          let v = r[i];
          if (v !== null && typeof v === 'object' && '$hex' in v) {
            binary.add(c);
            const hex = (v as { $hex: string }).$hex;
            v = deps.store.kind === 'postgres' ? `\\x${hex}` : hex;
          }
          o[c] = v;
        });
        return o;
      });
      try {
        await insertJsonRows(db, deps.store.kind, t.name, columns, binary, rows);
      } catch (err) {
        throw apiError(409, 'CONFLICT', `Snapshot ${name} no longer fits the store's tables (${t.name}: ${err instanceof Error ? err.message : String(err)}); save it again`);
      }
      counts[t.name] = saved.rows.length;
      total += saved.rows.length;
    }
    const realNow = deps.clock.nowMs();
    const at = iso(realNow);
    if (whole) {
      // Every platform's sandbox clock back to what it read at the save.
      const shift = found.row.sandbox_now_ms - realNow;
      for (const p of await listPlatforms(trx)) await updatePlatform(trx, p.id, { clock_offset_ms: Number(p.clock_offset_ms) + shift });
    } else {
      await updatePlatform(trx, owner, { clock_offset_ms: found.row.sandbox_now_ms - realNow, ...(data.options !== undefined ? { options: data.options, updated_at: at } : {}) });
    }
    return { counts, total, deleted };
  });
  const log = requestLogOf(deps.store);
  if (whole) log.clearAll();
  else log.clear(owner);
  return {
    name,
    sandboxTime: iso(found.row.sandbox_now_ms),
    rows: result.total,
    tables: result.counts,
    deleted: result.deleted,
    durationMs: Math.round((performance.now() - started) * 100) / 100,
  };
}
