import { iso } from '../../kernel/clock.js';
import type { AppDeps } from '../../app.js';
import { addClockOffset, clockOffset } from './store.js';

export interface ClockView {
  now: string;
  offsetSeconds: number;
}

export async function readClock(deps: Pick<AppDeps, 'store' | 'clock'>, platformId: string): Promise<ClockView> {
  const offset = await clockOffset(deps.store.db, platformId);
  return { now: iso(deps.clock.nowMs() + offset), offsetSeconds: offset / 1000 };
}

/**
 * Move the platform's clock forward, then (before answering) run every job of the platform
 * that became due, in due order, and send its due webhook deliveries (events those jobs
 * emitted included). Everything reads the offset from the database, never the request's
 * platform row, which predates the advance.
 */
export async function advanceClock(deps: Pick<AppDeps, 'store' | 'clock' | 'jobs' | 'webhooks'>, platformId: string, seconds: number): Promise<ClockView> {
  await addClockOffset(deps.store.db, platformId, seconds * 1000);
  await deps.jobs.runDue(platformId);
  await deps.webhooks.runDue(platformId);
  return readClock(deps, platformId);
}
