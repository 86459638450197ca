import type { AnyDb } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  const bigint = 'bigint' as const;
  // Exactly once per Idempotency-Key (kernel/idempotency.ts): each claim gets a token
  // (the fence every later write of its request checks) and a lease its process renews
  // while the request runs (real epoch ms); a claim is taken over only once its lease
  // has lapsed and its effect has not committed.
  await db.schema.alterTable('idempotency_keys').addColumn('claim_token', 'text').execute();
  await db.schema.alterTable('idempotency_keys').addColumn('lease_ms', bigint).execute();
}
