// Statements (and database rows) per request, in process, through the test harness: the
// figures of bench/README.md "Statements per request" (issue 15). Counts every statement the
// store's driver runs (SQLite: every run/get/all/iterate of a better-sqlite3 statement; PostgreSQL: pg Client#query), so it also works on older checkouts.
//
//   npx tsx bench/statements.ts                       # SQLite (in memory)
//   TEST_STORE=postgres TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/statements.ts
//   BY_INDEX=1 npx tsx bench/statements.ts            # bytes per flow by table and by each index apart
import Database from 'better-sqlite3';
import pg from 'pg';
import { sql } from 'kysely';
import { makeApp, sleep } from '../test/helpers.js';
import { fund, newCustomer, quoteRequest, usdExternal } from '../test/money-helpers.js';

let count = 0;
// better-sqlite3: every run of a (cached) statement.
const probe = new Database(':memory:');
const Statement = Object.getPrototypeOf(probe.prepare('select 1')) as Record<string, (...a: unknown[]) => unknown>;
probe.close();
for (const m of ['run', 'get', 'all', 'iterate']) {
  const orig = Statement[m]!;
  Statement[m] = function (this: unknown, ...args: unknown[]) {
    count += 1;
    return orig.apply(this, args);
  };
}
const q = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  count += 1;
  return (q as (...a: unknown[]) => unknown).apply(this, args);
} as typeof q;

async function per(label: string, n: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  await fn(-1); // warm: prepared statements, caches
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
// Database bytes per payment flow (SQLite only: the dbstat table), by table with its indexes
// (BY_INDEX=1: each table and each index on its own line).
async function bytesByTable(): Promise<Map<string, number> | null> {
  if (process.env.TEST_STORE === 'postgres') return null;
  try {
    const rows = await sql<{ tbl: string; bytes: number }>`select ${sql.raw(process.env.BY_INDEX ? "d.name" : "coalesce(m.tbl_name, d.name)")} as tbl, sum(d.pgsize - d.unused) as bytes from dbstat d left join sqlite_master m on m.name = d.name group by 1`.execute(t.store.db);
    return new Map(rows.rows.map((r) => [r.tbl, Number(r.bytes)]));
  } catch {
    return null;
  }
}
const bytesBefore = await bytesByTable();
await per('POST /quotes immediatelyExecute (payment flow)', 50, async () => ok(await t.call('POST', '/quotes', quoteRequest(usd, dest, 1_000, { immediatelyExecute: true }))));
{
  // The flows' later steps (settlement jobs), per flow: 51 flows above (one warm-up).
  const before = count;
  ok(await t.call('POST', '/sandbox/clock/advance', { seconds: 7 * 86_400 }));
  console.log(`${'  + its settlement jobs (clock advance)'.padEnd(44)} ${((count - before) / 51).toFixed(1)} statements/flow`);
  const events = await t.store.db.selectFrom('events').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  const deliveries = await t.store.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  console.log(`rows: events ${events.n}, webhook_deliveries ${deliveries.n} (no webhook endpoint configured)`);
  const bytesAfter = await bytesByTable();
  if (bytesBefore && bytesAfter) {
    const diff = [...bytesAfter].map(([k, v]) => [k, (v - (bytesBefore.get(k) ?? 0)) / 51] as const).filter(([, v]) => Math.abs(v) >= 1).sort((a, b) => b[1] - a[1]);
    const total = diff.reduce((a, [, v]) => a + v, 0);
    console.log(`database bytes per payment flow (settled, rows + indexes, used bytes of pages): ${total.toFixed(0)}`);
    for (const [k, v] of diff) console.log(`  ${k.padEnd(40)} ${v.toFixed(0)}`);
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
