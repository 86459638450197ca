import { expect } from 'vitest';
import type { Store } from '../../src/kernel/db/connect.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import type { CrashReport } from './crash-run.js';

const TERMINAL = ['COMPLETED', 'FAILED', 'REFUNDED', 'REJECTED', 'EXPIRED'];

/**
 * After a crash run: every key has a final answer; each moved money at most once (exactly
 * once when it answered 2xx), found by its unique amount; the ledger invariants hold; every
 * transaction reaches a terminal status once the sandbox clock has moved past its outcome.
 */
export async function checkCrashRun(store: Store, report: CrashReport, advance: () => Promise<void>): Promise<void> {
  const failed = report.sent.filter((s) => s.lost || (s.status ?? 500) >= 300);
  expect(failed.map((s) => `${s.kind} ${s.key}: ${s.status} ${s.answer}`), 'requests without a 2xx answer in the end').toEqual([]);

  const db = store.db;
  const twice: string[] = [];
  for (const s of report.sent) {
    let n: number;
    if (s.kind === 'fund' || s.kind === 'umaReceive') {
      const flow = s.kind === 'fund' ? 'SANDBOX_FUNDING' : 'UMA_INCOMING';
      const q = db.selectFrom('transactions').select((eb) => eb.fn.countAll().as('n')).where('type', '=', 'INCOMING').where('flow', '=', flow).where('received_amount', '=', s.amount);
      n = Number((await q.executeTakeFirstOrThrow()).n);
    } else {
      // A second execution of a keyed quote or transfer would price and execute another quote.
      n = Number((await db.selectFrom('quotes').select((eb) => eb.fn.countAll().as('n')).where('locked_amount', '=', s.amount).where('status', '<>', 'PENDING').executeTakeFirstOrThrow()).n);
    }
    if (n !== 1) twice.push(`${s.kind} ${s.key} (amount ${s.amount}): ${n} effects`);
  }
  expect(twice, 'keys whose money moved other than once').toEqual([]);

  let open: { id: string; status: string }[] = [];
  const deadline = Date.now() + 30_000;
  for (;;) {
    open = await db.selectFrom('transactions').select(['id', 'status']).where('status', 'not in', TERMINAL).execute();
    if (open.length === 0 || Date.now() > deadline) break;
    await advance();
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(open, 'transactions not terminal').toEqual([]);
  await assertLedgerInvariants(store);
}

/** What a webhook receiver got: each event's type and its resource's id. */
export interface ReceivedEvents {
  has(type: string, id: string): boolean;
}

/**
 * Every transaction's final event reached the platform's endpoint (at least once: a kill
 * during a delivery may repeat one): `OUTGOING_PAYMENT.<status>` or
 * `INCOMING_PAYMENT.<status>` with the transaction as its data. Waits for the deliverer of
 * the running server, advancing the sandbox clock so due retries run.
 */
export async function checkFinalWebhooks(store: Store, received: ReceivedEvents, advance: () => Promise<void>, timeoutMs = 60_000): Promise<void> {
  const rows = await store.db.selectFrom('transactions').select(['id', 'type', 'status']).execute();
  const expected = rows.map((r) => ({ id: r.id, type: `${r.type === 'INCOMING' ? 'INCOMING_PAYMENT' : 'OUTGOING_PAYMENT'}.${r.status}` }));
  let missing = expected;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    missing = expected.filter((e) => !received.has(e.type, e.id));
    if (missing.length === 0 || Date.now() > deadline) break;
    await advance();
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(missing.map((m) => `${m.type} ${m.id}`), 'final webhooks not delivered').toEqual([]);
}
