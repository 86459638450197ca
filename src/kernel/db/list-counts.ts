import type { Kysely, Transaction } from 'kysely';
import { prepared } from './prepared.js';
import type { DB } from './schema.js';

// The totalCount of a list's common pages in O(1) (issue 15): the row counts that migration
// 0020_list_counts keeps by triggers, per platform, so they are exact (they change in the
// transaction that changes the rows, at its commit on PostgreSQL) and include rows written
// around the services. A count is the sum of a few stripes. Lists with other filters count
// their rows (count(*) over an index range of the filter).

type Db = Kysely<DB> | Transaction<DB>;

/** The lists and scopes that have a kept count. */
export type CountedList = { list: 'customers'; scope: 'all' | 'live' } | { list: 'transactions'; scope: 'all' };

const sumOf = prepared<{ platformId: string; list: string; scope: string }, { n: number | string | null }>((db, p) =>
  db
    .selectFrom('list_counts')
    .select((eb) => eb.fn.sum<number | string | null>('n').as('n'))
    .where('platform_id', '=', p('platformId'))
    .where('list', '=', p('list'))
    .where('scope', '=', p('scope')),
);

/** The kept count of a platform's list. */
export async function keptCount(db: Db, platformId: string, which: CountedList): Promise<number> {
  const row = await sumOf.first(db, { platformId, list: which.list, scope: which.scope });
  return Number(row?.n ?? 0);
}
