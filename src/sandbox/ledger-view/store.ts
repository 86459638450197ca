import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import type { PostingRow } from '../../api/ledger/store.js';

// The SQL of the ledger-entries read: the entries that touch one account (their postings on
// it), newest first. Rows are the ledger area's (ledger/store.ts); this area only reads them.

type Db = Kysely<DB> | Transaction<DB>;

/** The platform's entries with a posting on `accountId`: the base of a page (no select). */
export function entriesOfAccountQuery(db: Kysely<DB>, platformId: string, accountId: string) {
  return db
    .selectFrom('ledger_entries')
    .where('platform_id', '=', platformId)
    .where('id', 'in', (sub) => sub.selectFrom('ledger_postings').select('entry_id').where('account_id', '=', accountId));
}

/** The postings of these entries (the platform's, from entriesOfAccountQuery) on `accountId`, by entry and line. */
export async function postingsOnAccount(db: Db, accountId: string, entryIds: string[]): Promise<PostingRow[]> {
  if (entryIds.length === 0) return [];
  return db
    .selectFrom('ledger_postings')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('entry_id', 'in', entryIds)
    .orderBy('entry_id')
    .orderBy('line')
    .execute();
}
