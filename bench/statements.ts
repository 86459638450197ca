// Statements (and database rows) per request, in process, through the test harness: the
// figures of bench/README.md "Statements per request" (issue 15). Counts every statement the
// store's driver runs (SQLite: every run/get/all/iterate of a better-sqlite3 statement; PostgreSQL: pg Client#query), so it also works on older checkouts.
//
//   npx tsx bench/statements.ts                       # SQLite (in memory)
//   TEST_STORE=postgres TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/statements.ts
//   FLOWS=200 npx tsx bench/statements.ts             # payment flows measured (default 50; more smooths PostgreSQL's 8 KB pages)
//
// After the per-request counts it prints, per settled payment flow (the request and its
// settlement job), the statements by the table each one names first (`insert into`,
// `update`, `delete from`, or a select's first `from`; `begin`/`commit`/savepoints apart)
// and the database bytes by table and by each of its indexes (issue 35):
//   SQLite      dbstat: used bytes (page size − unused) of each table's and each index's pages;
//   PostgreSQL  pg_relation_size of each table (main fork: live and dead row versions, no
//               vacuum runs in between), of each index, and of its TOAST table with its
//               index; differences in whole 8 KB pages, so use FLOWS=200 or more there.
//   TRACE=1 npx tsx bench/statements.ts               # also print the SQL of one payment flow, in order
//   TIME=1 FLOWS=1000 npx tsx bench/statements.ts      # also the SQLite time of each statement per payment flow
import { sql } from 'kysely';
import { onSqliteStatementTime, onStatement } from './statement-probe.js';
import { makeApp, sleep } from '../test/helpers.js';
import { fund, newCustomer, quoteRequest, usdExternal } from '../test/money-helpers.js';

let count = 0;
/** With `byTable` set, every statement's SQL is also counted under the table it names first. */
let byTable: Map<string, number> | null = null;
function tableOf(text: string): string {
  const s = text.trim().replace(/^\s*with\s[\s\S]*?\)\s*(?=select|insert|update|delete)/i, '');
  const head = /^(\w+)/.exec(s)?.[1]?.toLowerCase() ?? '?';
  if (['begin', 'commit', 'rollback', 'savepoint', 'release', 'start'].includes(head)) return '(transaction control)';
  const m = head === 'insert' ? /\binto\s+"?(\w+)"?/i.exec(s) : head === 'update' ? /^update\s+"?(\w+)"?/i.exec(s) : /\bfrom\s+"?(\w+)"?/i.exec(s);
  return m ? m[1]! : `(${head})`;
}
/** TRACE=1: the SQL of every statement run while `tracing` is set. */
let tracing = false;
function note(text: unknown): void {
  count += 1;
  if (tracing) console.log(`    ${String(text).replace(/\s+/g, ' ').slice(0, 220)}`);
  if (byTable && typeof text === 'string') {
    const k = tableOf(text);
    byTable.set(k, (byTable.get(k) ?? 0) + 1);
  }
}
// Every statement, at the drivers (better-sqlite3's runs, node-postgres's queries).
onStatement(note);
/** TIME=1 (SQLite): nanoseconds and runs per statement text, while `timing` is set. */
let timing: Map<string, { ns: number; runs: number }> | null = null;
if (process.env.TIME) {
  onSqliteStatementTime((text, ns) => {
    if (!timing) return;
    const k = String(text).replace(/\s+/g, ' ').slice(0, 72);
    const e = timing.get(k) ?? { ns: 0, runs: 0 };
    e.ns += ns;
    e.runs += 1;
    timing.set(k, e);
  });
}

async function per(label: string, n: number, fn: (i: number) => Promise<unknown>, track?: Map<string, number>, timeTrack?: Map<string, { ns: number; runs: number }>): Promise<void> {
  await fn(-1); // warm: prepared statements, caches
  if (track) byTable = track; // by table: the measured requests only
  if (timeTrack) timing = timeTrack; // TIME=1: the same requests
  const before = count;
  for (let i = 0; i < n; i++) await fn(i);
  console.log(`${label.padEnd(44)} ${((count - before) / n).toFixed(1)} statements/request`);
}

const t = await makeApp({ worker: false });
const c = await newCustomer(t, ['USD']);
const usd = c.accounts.USD!.id;
const dest = await usdExternal(t, c.id, '000000456');
await fund(t, usd, 100_000_000);
const ok = (r: { statusCode: number; body: string }) => {
  if (r.statusCode >= 300) throw new Error(r.body);
};
await per('POST /customers', 50, async (i) => ok(await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: `Stat ${i}` })));
await per('GET /customers/{id}', 50, async () => ok(await t.call('GET', `/customers/${c.id}`)));
await per('GET /customers (first page of 20)', 20, async () => ok(await t.call('GET', '/customers')));
await per('GET /transactions (first page of 20)', 20, async () => ok(await t.call('GET', '/transactions')));
// Database bytes per payment flow, by table and by each of its indexes (see the top).
const PG = process.env.TEST_STORE === 'postgres';
const FLOWS = Number(process.env.FLOWS ?? 50);
type Part = { table: string; part: string; bytes: number };
async function bytesByPart(): Promise<Part[]> {
  if (!PG) {
    const rows = await sql<{ tbl: string; name: string; type: string; bytes: number }>`select coalesce(m.tbl_name, d.name) as tbl, d.name as name, coalesce(m.type, 'table') as type, sum(d.pgsize - d.unused) as bytes from dbstat d left join sqlite_master m on m.name = d.name group by d.name`.execute(t.store.db);
    return rows.rows.map((r) => ({ table: r.tbl, part: r.type === 'index' ? r.name : '(rows)', bytes: Number(r.bytes) }));
  }
  const rows = await sql<{ tbl: string; part: string; bytes: string }>`
    select c.relname as tbl, '(rows)' as part, pg_relation_size(c.oid) as bytes from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = current_schema() and c.relkind in ('r', 'p')
    union all
    select c.relname, i.relname, pg_relation_size(i.oid) from pg_index x join pg_class c on c.oid = x.indrelid join pg_class i on i.oid = x.indexrelid join pg_namespace n on n.oid = c.relnamespace where n.nspname = current_schema()
    union all
    select c.relname, '(TOAST)', pg_total_relation_size(c.reltoastrelid) from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = current_schema() and c.relkind in ('r', 'p') and c.reltoastrelid <> 0`.execute(t.store.db);
  return rows.rows.map((r) => ({ table: r.tbl, part: r.part, bytes: Number(r.bytes) }));
}
function printTable(head: string[], rows: string[][]): void {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const f = (r: string[]) => r.map((c, i) => (i < 2 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ').trimEnd();
  console.log([f(head), w.map((x) => '-'.repeat(x)).join('  '), ...rows.map(f)].join('\n'));
}
const n0 = (v: number) => Math.round(v).toLocaleString('en-US');
const bytesBefore = await bytesByPart();
if (process.env.TRACE) {
  await t.call('POST', '/quotes', quoteRequest(usd, dest, 1_000, { immediatelyExecute: true })); // warm
  console.log('one payment flow (POST /quotes immediatelyExecute), statement by statement:');
  tracing = true;
  ok(await t.call('POST', '/quotes', quoteRequest(usd, dest, 1_000, { immediatelyExecute: true })));
  tracing = false;
}
const byTableRequest = new Map<string, number>();
const timeRequest = new Map<string, { ns: number; runs: number }>();
await per(`POST /quotes immediatelyExecute (payment flow)`, FLOWS, async () => ok(await t.call('POST', '/quotes', quoteRequest(usd, dest, 1_000, { immediatelyExecute: true }))), byTableRequest, timeRequest);
byTable = null;
timing = null;
{
  // The flows' later steps (settlement jobs), per flow: FLOWS + 1 flows above (one warm-up).
  const flows = FLOWS + 1 + (process.env.TRACE ? 2 : 0);
  const byTableSettle = new Map<string, number>();
  byTable = byTableSettle;
  const timeSettle = new Map<string, { ns: number; runs: number }>();
  timing = timeSettle;
  const before = count;
  ok(await t.call('POST', '/sandbox/clock/advance', { seconds: 7 * 86_400 }));
  byTable = null;
  timing = null;
  console.log(`${'  + its settlement jobs (clock advance)'.padEnd(44)} ${((count - before) / flows).toFixed(1)} statements/flow`);
  const events = await t.store.db.selectFrom('events').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  const deliveries = await t.store.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  console.log(`rows: events ${events.n}, webhook_deliveries ${deliveries.n} (no webhook endpoint configured)`);

  // Statements per flow by table: the request (FLOWS measured; the warm-up flow is not counted) and the settlement (all FLOWS + 1).
  console.log(`\nstatements per payment flow by table (${PG ? 'PostgreSQL' : 'SQLite'}; the table each statement names first)`);
  const tables = [...new Set([...byTableRequest.keys(), ...byTableSettle.keys()])];
  const st = tables
    .map((k) => ({ k, req: (byTableRequest.get(k) ?? 0) / FLOWS, set: (byTableSettle.get(k) ?? 0) / flows }))
    .sort((a, b) => b.req + b.set - (a.req + a.set));
  const sum = (f: (x: (typeof st)[number]) => number) => st.reduce((a, x) => a + f(x), 0);
  printTable(
    ['table', '', 'request', 'settlement', 'flow'],
    [...st.map((x) => [x.k, '', x.req.toFixed(1), x.set.toFixed(1), (x.req + x.set).toFixed(1)]), ['total', '', sum((x) => x.req).toFixed(1), sum((x) => x.set).toFixed(1), sum((x) => x.req + x.set).toFixed(1)]],
  );

  // Bytes per settled flow by table and by index.
  const bytesAfter = await bytesByPart();
  const key = (p: Part) => `${p.table}\u0000${p.part}`;
  const was = new Map(bytesBefore.map((p) => [key(p), p.bytes]));
  const diff = bytesAfter.map((p) => ({ ...p, perFlow: (p.bytes - (was.get(key(p)) ?? 0)) / flows })).filter((p) => Math.abs(p.perFlow) >= 0.5);
  const perTable = new Map<string, number>();
  for (const p of diff) perTable.set(p.table, (perTable.get(p.table) ?? 0) + p.perFlow);
  const total = diff.reduce((a, p) => a + p.perFlow, 0);
  console.log(
    `\ndatabase bytes per settled payment flow: ${n0(total)} (${flows} flows; ${PG ? 'PostgreSQL pg_relation_size of tables, indexes and TOAST: pages allocated, dead row versions included' : 'SQLite dbstat: used bytes of pages'})`,
  );
  const rows: string[][] = [];
  for (const [table, bytes] of [...perTable].sort((a, b) => b[1] - a[1])) {
    rows.push([table, '', n0(bytes)]);
    for (const p of diff.filter((d) => d.table === table).sort((a, b) => b.perFlow - a.perFlow)) rows.push(['', p.part, n0(p.perFlow)]);
  }
  rows.push(['total', '', n0(total)]);
  printTable(['table', 'rows / index', 'bytes/flow'], rows);
  console.log('');

  if (process.env.TIME && !PG) {
    // The request's statements (the warm-up's excluded) and the settlement's, per flow.
    // In process and one request at a time: no group commit, so every request commits alone.
    const parts = [
      ...[...timeRequest].map(([k, e]) => ({ k, where: 'request', ns: e.ns / FLOWS, runs: e.runs / FLOWS })),
      ...[...timeSettle].map(([k, e]) => ({ k, where: 'settlement', ns: e.ns / flows, runs: e.runs / flows })),
    ].sort((a, b) => b.ns - a.ns);
    const all = parts.reduce((a, p) => a + p.ns, 0);
    console.log(`SQLite time per payment flow by statement (TIME=1; ${FLOWS} flows, each request committed alone): ${(all / 1000).toFixed(0)} µs`);
    printTable(
      ['statement', 'part', 'µs/flow', 'runs/flow', 'µs/run'],
      parts.filter((p) => p.ns >= 500).map((p) => [p.k, p.where, (p.ns / 1000).toFixed(1), p.runs.toFixed(2), (p.ns / p.runs / 1000).toFixed(1)]),
    );
    console.log('');
  }
}
await t.close();

// Idle: a server with its worker loops and nothing to do.
const idle = await makeApp({ worker: true });
await sleep(3_500);
const b = count;
await sleep(5_000);
console.log(`${'idle server'.padEnd(44)} ${((count - b) / 5).toFixed(1)} statements/s`);
await idle.close();
