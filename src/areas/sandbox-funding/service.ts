import type { Kysely } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { emitBalanceUpdates, getInternalAccount, requireInternalAccount } from '../internal-accounts/service.js';
import type { InternalAccount } from '../internal-accounts/schemas.js';
import { ensureWorldAccount, postEntry } from '../ledger/service.js';

// Sandbox funding: money arrives from the outside world into an internal account at once.
// One FUNDING ledger entry (WORLD.available −x, account.available +x) and the account's
// INTERNAL_ACCOUNT.BALANCE_UPDATED event, in one transaction.

export async function fundInternalAccount(store: Store, platformId: string, at: string, accountId: string, amount: number): Promise<InternalAccount> {
  const db: Kysely<DB> = store.db;
  return db.transaction().execute(async (trx) => {
    const account = await requireInternalAccount(trx, platformId, accountId);
    const world = await ensureWorldAccount(trx, platformId, account.currency, at);
    await postEntry(trx, store, {
      platformId,
      kind: 'FUNDING',
      at,
      referenceId: account.id,
      memo: 'sandbox fund',
      postings: [
        { accountId: world, currency: account.currency, amount: -amount },
        { accountId: account.id, currency: account.currency, amount },
      ],
    });
    await emitBalanceUpdates(trx, platformId, [account.id], at);
    return getInternalAccount(trx, platformId, account.id);
  });
}
