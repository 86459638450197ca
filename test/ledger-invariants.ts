import { expect } from 'vitest';
import { sql } from 'kysely';
import type { Store } from '../src/kernel/db/connect.js';
import { auditBalances } from '../src/areas/ledger/service.js';

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
}
