import type { AnyDb } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  // A sandbox clock advance stops at each pending retry of the platform's deliveries
  // (the 7-day schedule has 340 of them): the next one is found by platform and due time.
  await db.schema.createIndex('webhook_deliveries_platform_due').on('webhook_deliveries').columns(['platform_id', 'status', 'next_attempt_ms']).execute();
}
