import type { AnyDb } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  // Webhook deliveries go out in lanes (one per resource) with several lanes in flight:
  // a claim checks that no earlier delivery of the lane is still open (PENDING or
  // SENDING), and releasing a lane finds its next open one. With the status before the
  // sequence, both are two short index ranges, however many delivered rows the lane has.
  await db.schema.createIndex('webhook_deliveries_lane_open').on('webhook_deliveries').columns(['platform_id', 'resource_id', 'status', 'event_seq']).execute();
}
