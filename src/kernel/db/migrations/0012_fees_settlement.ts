import type { AnyDb } from './support.js';

// Outgoing transactions: when the payment is expected to settle, fixed when it starts
// from its sandbox outcome (expectedSettlementAt, settlementTimelineSeconds).
export async function up(db: AnyDb): Promise<void> {
  const bigint = 'bigint' as const;
  await db.schema.alterTable('transactions').addColumn('expected_settlement_at', 'text').execute();
  await db.schema.alterTable('transactions').addColumn('settlement_timeline_seconds', bigint).execute();
}
