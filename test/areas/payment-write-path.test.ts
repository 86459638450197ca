import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeApp, STORE, type TestApp } from '../helpers.js';
import { fund, newCustomer, quoteRequest, usdExternal } from '../money-helpers.js';

// Issue 35: the statements of a payment's request (docs/architecture.md "Write path"). A
// payment from an internal account to an external one reads back nothing it wrote: the
// count is exact, so a statement added to the path (or a re-read put back) shows here.
// SQLite counts every statement Kysely runs (begin and commit included); PostgreSQL every
// query of the pool's connections.
const PG_STATEMENTS = 5;
/**
 * PostgreSQL: the round trips those statements take (kernel/db/pg-pipeline.ts, kernel/db/late-move.ts):
 * one, begin to commit (the daily volume armed in front, checked by its trigger at commit).
 */
const PG_ROUND_TRIPS = 1;

describe(`a payment's write path (${STORE})`, () => {
  let t: TestApp;
  let usd: string;
  let dest: string;

  beforeAll(async () => {
    t = await makeApp({ worker: false });
    const c = await newCustomer(t, ['USD']);
    usd = c.accounts.USD!.id;
    dest = await usdExternal(t, c.id, '000000456');
    await fund(t, usd, 10_000_000);
  });
  afterAll(async () => t.close());

  const pay = async () => {
    const before = t.store.statements();
    const trips = t.store.roundTrips?.() ?? 0;
    const res = await t.call('POST', '/quotes', quoteRequest(usd, dest, 1_000, { immediatelyExecute: true }));
    return { res, statements: t.store.statements() - before, roundTrips: (t.store.roundTrips?.() ?? 0) - trips };
  };

  it('answers the executed quote and runs the same statements for every payment', async () => {
    await pay(); // the caches and prepared statements of the first one
    // PostgreSQL's row caches start once the change notifications are confirmed
    // (pg-change-watch.ts): until then a payment also reads its cached rows.
    for (let i = 0; STORE === 'postgres' && i < 20 && (await pay()).statements > PG_STATEMENTS; i++) await new Promise((r) => setTimeout(r, 200));
    const runs = [await pay(), await pay(), await pay()];
    for (const { res } of runs) {
      expect(res.statusCode).toBe(201);
      const quote = res.json() as { id: string; status: string; transactionId: string; createdAt: string };
      expect(quote.status).toBe('PROCESSING');
      // What the answer says is what the database holds (the answer is not read back).
      expect((await t.call('GET', `/quotes/${quote.id}`)).json()).toEqual(res.json());
      const tx = (await t.call('GET', `/transactions/${quote.transactionId}`)).json() as { status: string; createdAt: string };
      expect(tx.status).toBe('PROCESSING');
      expect(tx.createdAt).toBe(quote.createdAt);
    }
    // begin, 8 statements (docs/architecture.md "Write path"), commit; the three events go
    // in one insert on both stores, and the quote and its transaction are each written once,
    // in their started state (no PENDING insert rewritten). PostgreSQL arms the daily limit's
    // check at commit in the statement that reads the day's volume, and sends the inserts of
    // the quote, the transaction, the ledger entry and postings and the job with the
    // statement after them (connect.ts DEFERRED_INSERTS). 20 on SQLite (21 on PostgreSQL)
    // before issue 35, then 15 (16), 13 (8 round trips), 11 (6), now 10 (5): the hold moves
    // the payer's balance row in one statement, its checks included (ledger postOnOneAccount).
    // PostgreSQL: 5 in 2 round trips: `begin` with the day's volume (kernel/db/pg-pipeline.ts);
    // then the inserts as one statement, the balance row's move with the events' insert, and
    // the `commit` (kernel/db/late-move.ts: the move was a round trip of its own, with the
    // quote's insert, and the row stayed locked across the rest).
    expect(runs.map((r) => r.statements)).toEqual(Array(3).fill(STORE === 'postgres' ? PG_STATEMENTS : 10));
    if (STORE === 'postgres') expect(runs.map((r) => r.roundTrips)).toEqual(Array(3).fill(PG_ROUND_TRIPS));
  });
});
