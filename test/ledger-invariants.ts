import { expect } from 'vitest';
import { sql } from 'kysely';
import type { Store } from '../src/kernel/db/connect.js';
import { auditBalances } from '../src/api/ledger/service.js';

// The ledger's invariants over the whole store, checked at the end of every money test:
// every entry sums to zero per currency, no internal account has a bucket below zero, and
// every balance row equals the sum of its postings (auditBalances).

export async function assertLedgerInvariants(store: Store): Promise<void> {
  const unbalanced = await sql<{ entry_id: string; currency: string; total: number | string }>`
    select entry_id, currency, sum(amount) as total from ledger_postings group by entry_id, currency having sum(amount) <> 0
  `.execute(store.db);
  expect(unbalanced.rows, 'entries that do not sum to zero per currency').toEqual([]);

  const negative = await store.db
    .selectFrom('ledger_balances')
    .select(['account_id', 'available', 'pending', 'held'])
    .where('allow_negative', '=', 0)
    .where((eb) => eb.or([eb('available', '<', 0), eb('pending', '<', 0), eb('held', '<', 0)]))
    .execute();
  expect(negative, 'internal accounts below zero').toEqual([]);

  const ids = (await store.db.selectFrom('ledger_balances').select('account_id').execute()).map((r) => r.account_id);
  expect(await auditBalances(store.db, ids), 'balances that differ from their postings').toEqual([]);
  await assertTransactionsAccounted(store);
}

/**
 * Every transaction's money is accounted for, by its status: in flight it is held on the
 * paying account (or pending on the credited one), delivered it has left, refunded it is
 * back, and a refund that failed leaves it held. Read from the postings that name the
 * transaction (ledger_entries.reference_id).
 */
export async function assertTransactionsAccounted(store: Store): Promise<void> {
  const txs = await store.db.selectFrom('transactions').selectAll().execute();
  const problems: string[] = [];
  for (const tx of txs) {
    const rows = await store.db
      .selectFrom('ledger_postings as p')
      .innerJoin('ledger_entries as e', 'e.id', 'p.entry_id')
      .select(['p.account_id', 'p.bucket', 'p.amount'])
      .where('e.reference_id', '=', tx.id)
      .execute();
    const sum = (account: string | null, bucket?: string) =>
      rows.filter((r) => r.account_id === account && (bucket === undefined || r.bucket === bucket)).reduce((s, r) => s + Number(r.amount), 0);
    const refund = tx.refund ? (JSON.parse(tx.refund) as { status: string }).status : null;
    const sent = Number(tx.sent_amount);
    const say = (what: string) => problems.push(`${tx.id} (${tx.type} ${tx.status}${refund ? `, refund ${refund}` : ''}): ${what}`);
    if (tx.type === 'OUTGOING') {
      const hold = tx.hold_account_id;
      const held = sum(hold, 'held');
      // A crypto real-time funded payment's deposit passed through the payer's internal account
      // (DEPOSIT): what it sends came in first, and a refund leaves it there.
      const realtime = (JSON.parse(tx.source) as { sourceType?: string }).sourceType === 'REALTIME_FUNDING';
      const deposited = realtime && hold?.startsWith('InternalAccount:') ? sent : 0;
      const moneyOut = tx.status === 'COMPLETED';
      const stillHeld = tx.status === 'PROCESSING' || (tx.status === 'FAILED' && (refund === 'PENDING' || refund === 'FAILED'));
      if (tx.status === 'FAILED' && refund === null) {
        // A crypto deposit of another amount stays on the payer's account (available), nothing held.
        const kept = deposited > 0 && rows.every((r) => r.bucket === 'available') && sum(hold) > 0;
        if (rows.length > 0 && !kept) say('failed at once but moved money');
      } else if (stillHeld) {
        if (held !== sent) say(`held ${held}, expected the sent ${sent}`);
      } else if (moneyOut) {
        if (held !== 0) say(`still holds ${held} after delivery`);
        if (hold?.startsWith('InternalAccount:') && sum(hold) !== deposited - sent) say(`payer net ${sum(hold)}, expected ${deposited - sent}`);
      } else if (tx.status === 'FAILED' && refund === 'COMPLETED') {
        if (held !== 0 || sum(hold) !== deposited) say(`refunded, but the payer is off by ${sum(hold) - deposited} (held ${held})`);
      }
    } else {
      const credited = tx.destination_account_id?.startsWith('InternalAccount:')
        ? tx.destination_account_id
        : (rows.find((r) => r.account_id.startsWith('InternalAccount:'))?.account_id ?? null);
      const received = Number(tx.received_amount ?? tx.sent_amount);
      const pending = sum(credited, 'pending');
      const available = sum(credited, 'available');
      const waiting = tx.status === 'PENDING' || refund === 'PENDING' || refund === 'FAILED';
      if (tx.status === 'COMPLETED') {
        if (pending !== 0 || available !== received) say(`completed: pending ${pending}, available ${available}, expected 0 and ${received}`);
      } else if (waiting) {
        if (pending !== received || available !== 0) say(`waiting: pending ${pending}, available ${available}, expected ${received} and 0`);
      } else if (pending !== 0 || available !== 0) {
        say(`ended without crediting, but pending ${pending}, available ${available}`);
      }
    }
  }
  expect(problems, 'transactions whose money is not accounted for').toEqual([]);
}
