import { iso } from '../../kernel/clock.js';
import type { AppDeps } from '../../app.js';
import { clockOffset, nextDeliveryAttemptAt, nextPendingJobAt, raiseClockOffset } from './store.js';

export interface ClockView {
  now: string;
  offsetSeconds: number;
}

export async function readClock(deps: Pick<AppDeps, 'store' | 'clock'>, platformId: string): Promise<ClockView> {
  const offset = await clockOffset(deps.store.db, platformId);
  return { now: iso(deps.clock.nowMs() + offset), offsetSeconds: offset / 1000 };
}

/**
 * How long (real time) one advance keeps stopping at webhook retry times. A failing endpoint
 * gets every attempt of its schedule at its own time; one that hangs would hold the advance
 * for its timeout per attempt, so past this budget the advance stops only at jobs and the
 * overdue retries go out once at the end (their schedule then continues from there).
 */
export const ADVANCE_RETRY_STOPS_BUDGET_MS = 60_000;

/**
 * Move the platform's clock forward, then (before answering) run every job of the platform
 * that becomes due on the way, in due order, each at its own time: the clock stops at each
 * job's due time and at each webhook retry's, runs the due jobs and sends the due webhook
 * deliveries, then moves on. So a chain of steps (a payout completes, is returned a minute
 * later, refunded a second after) all happens within one advance that covers it, with the
 * times it would have had, and a failing endpoint sees its retries at their scheduled times.
 * Everything reads the offset from the database, never the request's platform row, which
 * predates the advance.
 */
export async function advanceClock(deps: Pick<AppDeps, 'store' | 'clock' | 'jobs' | 'webhooks'>, platformId: string, seconds: number): Promise<ClockView> {
  const db = deps.store.db;
  const target = (await clockOffset(db, platformId)) + seconds * 1000;
  // What is due before the clock moves goes out at its own time first (in tests, where no
  // worker runs, an event just emitted), so a failed attempt's retries fall inside the advance.
  await deps.webhooks.runDue(platformId);
  let last = Number.NaN;
  const started = performance.now();
  for (let guard = 0; guard < 100_000; guard++) {
    const realNow = deps.clock.nowMs();
    const offset = await clockOffset(db, platformId);
    const nextJob = await nextPendingJobAt(db, platformId, realNow + target);
    // Only retries still ahead: an overdue delivery waiting behind an earlier one of its
    // resource is sent when that one settles, not at a time of its own.
    const nextRetry = performance.now() - started < ADVANCE_RETRY_STOPS_BUDGET_MS ? await nextDeliveryAttemptAt(db, platformId, realNow + offset, realNow + target) : undefined;
    const next = nextJob === undefined ? nextRetry : nextRetry === undefined ? nextJob : Math.min(nextJob, nextRetry);
    if (next === undefined) break;
    const wanted = Math.min(target, Math.max(offset, next - realNow));
    await raiseClockOffset(db, platformId, wanted);
    const ran = await deps.jobs.runDue(platformId);
    const sent = await deps.webhooks.runDue(platformId);
    // A due job no handler here runs (another version's) must not stall the advance.
    if (ran === 0 && sent === 0 && next === last) break;
    last = next;
  }
  await raiseClockOffset(db, platformId, target);
  await deps.jobs.runDue(platformId);
  await deps.webhooks.runDue(platformId);
  return readClock(deps, platformId);
}
