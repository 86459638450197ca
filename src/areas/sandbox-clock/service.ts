import type { Kysely } from 'kysely';
import { iso, type Clock } from '../../kernel/clock.js';
import type { DB } from '../../kernel/db/schema.js';
import { claimPlan, effectTransaction, idempotencyFaults, outsideClaim } from '../../kernel/idempotency.js';
import type { AppDeps } from '../../app.js';
import { clockOffset, nextPendingJobAt, raiseClockOffset } from './store.js';

export interface ClockView {
  now: string;
  offsetSeconds: number;
}

export async function readClock(deps: Pick<AppDeps, 'store' | 'clock'>, platformId: string): Promise<ClockView> {
  return readClockIn(deps.store.db, deps.clock, platformId);
}

/**
 * Move the platform's clock forward, then (before answering) run every job of the platform
 * that becomes due on the way, in due order, each at its own time: the clock stops at each
 * job's due time, runs the due jobs, then moves on. So a chain of steps (a payout completes,
 * is returned a minute later, refunded a second after) all happens within one advance that
 * covers it, with the times it would have had.
 *
 * Webhook deliveries never hold the answer: the events the jobs emit are already durable
 * delivery rows, and the deliverer sends them (and every retry that fell due inside the
 * advanced window, dated at its scheduled time) after the answer, in the background. The
 * advance only wakes it. Everything reads the offset from the database, never the request's
 * platform row, which predates the advance.
 */
export async function advanceClock(deps: Pick<AppDeps, 'store' | 'clock' | 'jobs' | 'webhooks'>, platformId: string, seconds: number): Promise<ClockView> {
  const db = deps.store.db;
  // Exactly once per Idempotency-Key: the target is planned once and kept with the claim, so
  // a retry after a crash midway moves the clock to the same target (not `seconds` further),
  // and the final move commits with the stored answer.
  const target = await claimPlan(db, async () => (await clockOffset(db, platformId)) + seconds * 1000);
  // The jobs are other requests' effects: they run outside this request's claim.
  const runDue = () => outsideClaim(() => deps.jobs.runDue(platformId));
  let last = Number.NaN;
  for (let guard = 0; guard < 100_000; guard++) {
    const realNow = deps.clock.nowMs();
    const offset = await clockOffset(db, platformId);
    const next = await nextPendingJobAt(db, platformId, realNow + target);
    if (next === undefined) break;
    await raiseClockOffset(db, platformId, Math.min(target, Math.max(offset, next - realNow)));
    const ran = await runDue();
    idempotencyFaults.afterEffectStep?.();
    // A due job no handler here runs (another version's) must not stall the advance.
    if (ran === 0 && next === last) break;
    last = next;
  }
  const view = await effectTransaction(db, async (trx) => {
    await raiseClockOffset(trx, platformId, target);
    return readClockIn(trx, deps.clock, platformId);
  });
  await runDue();
  deps.webhooks.kick();
  return view;
}

async function readClockIn(db: Kysely<DB>, clock: Clock, platformId: string): Promise<ClockView> {
  const offset = await clockOffset(db, platformId);
  return { now: iso(clock.nowMs() + offset), offsetSeconds: offset / 1000 };
}
