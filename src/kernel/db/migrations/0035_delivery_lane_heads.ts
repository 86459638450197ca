import { sql } from 'kysely';
import type { AnyDb } from './support.js';

/**
 * The conditions of the partial indexes below: a query that searches them repeats them word
 * for word (api/webhooks/store.ts), so both planners (PostgreSQL's generic plans included)
 * match them to the index.
 */
export const LANE_HEAD = 'lane_head = 1';
export const LANE_UNCLASSIFIED = 'lane_head is null';

// Issue 33: finding the due deliveries read every due row to keep the lane heads (those with
// no earlier open delivery of their resource): O(backlog) per look-up. A delivery now carries
// whether it heads its lane: null while not looked at yet (a new delivery; the event's
// insert is unchanged), 1 for the earliest open delivery of its lane, 0 otherwise. The
// deliverer classifies the new ones in a batch, marks a lane's next delivery when one
// settles, and looks up due heads in the partial index of heads: as many rows as it claims,
// however long the backlog. The index of unclassified rows holds only the new ones.
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('webhook_deliveries').addColumn('lane_head', 'integer').execute();
  // Settled deliveries head nothing; open ones are classified by the deliverer's next look-up.
  await sql`update webhook_deliveries set lane_head = 0 where status not in ('PENDING', 'SENDING')`.execute(db);
  await sql.raw(`create index webhook_deliveries_heads on webhook_deliveries (next_attempt_ms, event_seq) where ${LANE_HEAD}`).execute(db);
  await sql.raw(`create index webhook_deliveries_unclassified on webhook_deliveries (event_seq) where ${LANE_UNCLASSIFIED}`).execute(db);
}
