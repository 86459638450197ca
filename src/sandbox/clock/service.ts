import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { iso, type Clock } from '../../kernel/clock.js';
import type { DB } from '../../kernel/db/schema.js';
import { claimPlan, effectTransaction, idempotencyFaults, outsideClaim } from '../../kernel/idempotency.js';
import type { AppDeps } from '../../kernel/deps.js';
import { clockOffset, raiseClockOffset } from './store.js';

export interface ClockView {
  now: string;
  offsetSeconds: number;
}

export async function readClock(deps: Pick<AppDeps, 'store' | 'clock'>, platformId: string): Promise<ClockView> {
  return readClockIn(deps.store.db, deps.clock, platformId);
}

/** The first pause while a due job is claimed elsewhere and still running (real time; doubles while it stays). */
const CLAIMED_POLL_MIN_MS = 2;
/** The longest pause between two looks at a due job claimed elsewhere. */
const CLAIMED_POLL_MAX_MS = 50;

/**
 * Move the platform's clock forward, then (before answering) run every job of the platform
 * that becomes due on the way, in due order, each at its own time: the clock stops at each
 * job's due time, runs the due jobs, then moves on. So a chain of steps (a payout completes,
 * is returned a minute later, refunded a second after) all happens within one advance that
 * covers it, with the times it would have had.
 *
 * The answer comes only when no job of the platform (of a kind this process runs) is due at
 * or before the new time: neither unclaimed, nor claimed by a worker (this process's, or
 * another process's on the same database: PostgreSQL's SKIP LOCKED hides it from the
 * advance's own claims) and still running, nor scheduled by a job at the new time while the
 * advance ran. A due job the advance cannot claim is waited for by looking at the table
 * again until it is gone (or due later), with no time limit: it may schedule the next step.
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
  await runDueUpTo(deps, platformId, target);
  const view = await effectTransaction(db, async (trx) => {
    await raiseClockOffset(trx, platformId, target);
    return readClockIn(trx, deps.clock, platformId);
  });
  // Jobs due in the moment between the last look and the final move (real time goes on).
  await runDueUpTo(deps, platformId, target);
  deps.webhooks.kick();
  return view;
}

/**
 * Step the platform's clock (offset) through the due times of its jobs up to `target`,
 * running the due jobs at each, until none is due at or before `target`. A pass that ran
 * nothing while a job is due means a worker claimed that job and has not committed yet:
 * pause (real time, growing to CLAIMED_POLL_MAX_MS) and look again.
 */
async function runDueUpTo(deps: Pick<AppDeps, 'store' | 'clock' | 'jobs'>, platformId: string, target: number): Promise<void> {
  const db = deps.store.db;
  let pauseMs = CLAIMED_POLL_MIN_MS;
  for (;;) {
    const realNow = deps.clock.nowMs();
    const offset = await clockOffset(db, platformId);
    const next = await deps.jobs.nextDueAt(platformId, realNow + target);
    if (next === undefined) return;
    await raiseClockOffset(db, platformId, Math.min(target, Math.max(offset, next - realNow)));
    // The jobs are other requests' effects: they run outside this request's claim.
    const ran = await outsideClaim(() => deps.jobs.runDue(platformId));
    idempotencyFaults.afterEffectStep?.();
    if (ran > 0) {
      pauseMs = CLAIMED_POLL_MIN_MS;
      continue;
    }
    await sleep(pauseMs);
    pauseMs = Math.min(pauseMs * 2, CLAIMED_POLL_MAX_MS);
  }
}

async function readClockIn(db: Kysely<DB>, clock: Clock, platformId: string): Promise<ClockView> {
  const offset = await clockOffset(db, platformId);
  return { now: iso(clock.nowMs() + offset), offsetSeconds: offset / 1000 };
}
