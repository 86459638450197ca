// What a payment flow's rows and indexes would take with narrower values (issue 35: bytes per
// flow ≤ 4 KB). Reads a SQLite database the bench kept (`npm run bench -- --scenarios
// bare,payment --keep`, then the printed temp dir's payments.sqlite) and copies the payment
// flow's tables, their indexes included, into in-memory databases with the same schema, each
// copy with the values stored another way; then prints `dbstat`'s used bytes per flow of each,
// and the CPU its inserts took (every row of the tables inserted into empty tables with
// their indexes, one prepared single-row insert each, in one transaction per table: a
// measure of encoding and indexing the values, not of the service's statements):
//
//   kept file    the source file itself, as the bench left it
//   as is        the values unchanged (the copy packs pages as fresh inserts do)
//   ids 17 B     every `<Type>:<uuid>` value as 17 bytes: a type byte and the uuid's 16
//   + platform   also the platform's id as a small integer key
//   16 B, times  ids as the uuid's 16 bytes (the column names the type; a column holding
//                ids of several types, as events.resource_id, would need its type byte back:
//                a few bytes a flow), the platform as a small integer, and ISO timestamps as
//                integer milliseconds
//
//   npx tsx bench/binary-ids-bytes.ts /tmp/payments-bench-XXXX/payments.sqlite
//
// Nothing else changes: JSON text columns and the events' packed bodies keep the ids they
// hold as text, triggers and foreign keys are left out (they write or check other tables).
// A measure of what a schema change would save, not a design of it.
import Database from 'better-sqlite3';

type Database = InstanceType<typeof Database>;
interface Mode {
  label: string;
  ids: 'text' | 'typed17' | 'raw16';
  platformKey?: boolean;
  times?: boolean;
}

const MODES: Mode[] = [
  { label: 'as is', ids: 'text' },
  { label: 'ids 17 B', ids: 'typed17' },
  { label: '+ platform', ids: 'typed17', platformKey: true },
  { label: '16 B, times', ids: 'raw16', platformKey: true, times: true },
];
const TABLES = ['events', 'transactions', 'quotes', 'ledger_postings', 'ledger_entries', 'ledger_balances', 'jobs', 'transaction_volumes'];
const ID = /^([A-Za-z]+):([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})$/;
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

const file = process.argv[2];
if (!file) {
  console.error('usage: npx tsx bench/binary-ids-bytes.ts <payments.sqlite kept by the bench>');
  process.exit(2);
}
const source = new Database(file, { readonly: true, fileMustExist: true });
const flows = (source.prepare('select count(*) as n from transactions').get() as { n: number }).n;
if (flows === 0) {
  console.error('no transactions in this database: run the payment scenario with --keep first');
  process.exit(2);
}

/** Used bytes (page size less unused) of each table's pages and its indexes' together. */
function bytesByTable(db: Database): Map<string, number> {
  const out = new Map<string, number>();
  for (const table of TABLES) {
    const names = [table, ...(db.prepare("select name from sqlite_master where type = 'index' and tbl_name = ?").all(table) as Array<{ name: string }>).map((r) => r.name)];
    let sum = 0;
    for (const name of names) sum += (db.prepare('select coalesce(sum(pgsize - unused), 0) as s from dbstat where name = ?').get(name) as { s: number }).s;
    out.set(table, sum);
  }
  return out;
}

function converter(mode: Mode): (v: unknown) => unknown {
  const platforms = new Map<string, number>();
  return (v) => {
    if (typeof v !== 'string' || mode.ids === 'text') return v;
    const m = ID.exec(v);
    if (!m) return mode.times && TIME.test(v) ? Date.parse(v) : v;
    if (mode.platformKey && m[1] === 'Platform') {
      let key = platforms.get(v);
      if (key === undefined) platforms.set(v, (key = platforms.size + 1));
      return key;
    }
    const uuid = Buffer.from(m.slice(2).join(''), 'hex');
    return mode.ids === 'typed17' ? Buffer.concat([Buffer.from([m[1]!.length]), uuid]) : uuid;
  };
}

function copyWith(mode: Mode): Database {
  const db = new Database(':memory:');
  const convert = converter(mode);
  for (const table of TABLES) {
    const ddl = (source.prepare("select sql from sqlite_master where type = 'table' and name = ?").get(table) as { sql: string }).sql;
    db.exec(ddl.replace(/references\s+"?\w+"?\s*\("?\w+"?\)(\s+on delete cascade)?/gi, ''));
    for (const { sql } of source.prepare("select sql from sqlite_master where type = 'index' and tbl_name = ? and sql is not null").all(table) as Array<{ sql: string }>) db.exec(sql);
    // Generated columns (hidden 2 or 3) are computed again by the copy.
    const columns = (source.prepare(`select name from pragma_table_xinfo('${table}') where hidden = 0`).all() as Array<{ name: string }>).map((c) => `"${c.name}"`);
    const rows = source.prepare(`select ${columns.join(', ')} from "${table}"`).raw().all() as unknown[][];
    const insert = db.prepare(`insert into "${table}" (${columns.join(', ')}) values (${columns.map(() => '?').join(', ')})`);
    const values = rows.map((row) => row.map(convert));
    const started = process.cpuUsage();
    db.transaction(() => {
      for (const row of values) insert.run(row);
    })();
    const used = process.cpuUsage(started);
    insertMicros.set(mode.label, (insertMicros.get(mode.label) ?? 0) + used.user + used.system);
  }
  return db;
}

/** CPU of the copy's inserts (rows and indexes, one transaction per table), by mode. */
const insertMicros = new Map<string, number>();
// Each mode twice, the first as a warm-up of the same work: the second's insert CPU is printed.
const results = MODES.map((mode) => {
  copyWith(mode).close();
  insertMicros.delete(mode.label);
  return bytesByTable(copyWith(mode));
});
const kept = bytesByTable(source);
const width = 13;
console.log(`${flows} flows (transactions) in ${file}; database bytes per flow (dbstat used bytes, rows and indexes)`);
console.log(['table'.padEnd(20), 'kept file'.padStart(width), ...MODES.map((m) => m.label.padStart(width))].join(''));
const totals = new Array<number>(MODES.length + 1).fill(0);
for (const table of TABLES) {
  const values = [kept.get(table)!, ...results.map((r) => r.get(table)!)].map((b) => b / flows);
  values.forEach((v, i) => (totals[i]! += v));
  console.log([table.padEnd(20), ...values.map((v) => v.toFixed(0).padStart(width))].join(''));
}
console.log(['total'.padEnd(20), ...totals.map((v) => v.toFixed(0).padStart(width))].join(''));
console.log(['insert CPU µs/flow'.padEnd(20), '–'.padStart(width), ...MODES.map((m) => (insertMicros.get(m.label)! / flows).toFixed(1).padStart(width))].join(''));
