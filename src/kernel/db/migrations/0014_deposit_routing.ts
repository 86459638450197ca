import { sql } from 'kysely';
import type { AnyDb } from './support.js';

// At most one default UMA deposit account per customer (incoming UMA payments are paid
// on to it): the create path moved the flag, but two concurrent creates could both keep
// it. Duplicates are settled first (the newest live one keeps it), then an index holds it.
export async function up(db: AnyDb): Promise<void> {
  await sql`update external_accounts set default_uma_deposit_account = 0
    where default_uma_deposit_account = 1 and (is_deleted = 1 or customer_id is null or id <> (
      select max(e.id) from external_accounts e
      where e.platform_id = external_accounts.platform_id and e.customer_id = external_accounts.customer_id
        and e.default_uma_deposit_account = 1 and e.is_deleted = 0))`.execute(db);
  await sql`create unique index external_accounts_one_default_uma on external_accounts (platform_id, customer_id)
    where default_uma_deposit_account = 1 and is_deleted = 0`.execute(db);
}
