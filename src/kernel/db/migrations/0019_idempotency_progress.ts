import type { AnyDb } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  // An effect that commits in steps (the sandbox clock advance) keeps its plan with the
  // Idempotency-Key claim, so a retry after a crash midway finishes that plan (kernel/idempotency.ts claimPlan).
  await db.schema.alterTable('idempotency_keys').addColumn('progress', 'text').execute();
}
