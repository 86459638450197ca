import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { iso } from '../../src/kernel/clock.js';
import { emitEvent } from '../../src/kernel/events.js';
import { WebhookDeliverer } from '../../src/api/webhooks/service.js';
import { RUN_LENGTH } from '../../src/api/webhooks/store.js';
import { ADMIN_KEY, STORE, type TestApp } from '../helpers.js';
import { appWithEndpoint, platformNowMs } from '../webhook-endpoint.js';
import { HoldingReceiver as Receiver } from '../holding-receiver.js';

// Lane runs (issue 33): when a lane's head is claimed, its next due deliveries are claimed with
// it and POSTed one after another, each as soon as the previous one was acknowledged, their
// records written together. The receiver still never sees a later event of a resource before
// an earlier one was acknowledged; a failure stops the run and gives the rest back untouched;
// a run whose process died comes back, in order, when its lease lapses.
// No worker runs (makeApp's default): the tests drive the deliverer with runDue().

/** How long to wait for what must eventually arrive (a generous bound for a loaded CI machine, not a timing assertion). */
const WAIT_MS = 20_000;

interface View {
  eventId: string;
  status: string;
  attempts: number;
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  attemptLog: Array<{ startedAt: string; statusCode: number | null }>;
}

describe(`webhook lane runs (${STORE})`, () => {
  let t: TestApp;
  let rx: Receiver;
  let platformId: string;

  beforeEach(async () => {
    ({ t, rx, platformId } = await appWithEndpoint(new Receiver()));
  });
  afterEach(async () => {
    await rx.stop();
    await t.close();
  });

  const platformNow = () => platformNowMs(t, platformId);
  /** `n` events of one resource, in order: their event ids. */
  const emitLane = async (resourceId: string, n: number): Promise<string[]> => {
    const ids: string[] = [];
    for (let v = 0; v < n; v++) {
      const at = iso(await platformNow());
      ids.push(await t.store.db.transaction().execute((trx) => emitEvent(trx, platformId, at, { type: 'INTERNAL_ACCOUNT.BALANCE_UPDATED', resourceId, data: { id: resourceId, v } })));
    }
    return ids;
  };
  /** The deliveries as the platform's operator sees them (the admin API), by event id. */
  const deliveries = async (): Promise<Map<string, View>> => {
    const res = await t.app.inject({ method: 'GET', url: `/admin/platforms/${platformId}/webhook-deliveries?limit=100`, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    expect(res.statusCode).toBe(200);
    return new Map((res.json() as { data: View[] }).data.map((d) => [d.eventId, d]));
  };

  it(`claims a lane's next due deliveries with its head (up to ${RUN_LENGTH}) and sends them in order, with far fewer transactions than one per step`, async () => {
    const ids = await emitLane('InternalAccount:run', 20);
    // The first request is kept: the run was claimed before anything was answered.
    rx.held = (_g, n) => n === 1;
    const begin = vi.spyOn(t.store.db, 'transaction');
    const drain = t.running.webhooks.runDue();
    await vi.waitFor(() => expect(rx.holding).toBe(1), { timeout: WAIT_MS, interval: 10 });
    const during = await deliveries();
    // All 20 are claimed (one run: SENDING, one attempt counted), only the first was sent.
    for (const id of ids) expect([id, during.get(id)!.status, during.get(id)!.attempts]).toEqual([id, 'SENDING', 1]);
    expect(rx.got.map((g) => g.id)).toEqual([ids[0]]);
    rx.release();
    expect(await drain).toBe(20);
    begin.mockRestore();
    // In order, each once, each acknowledged before the next went out.
    expect(rx.got.map((g) => g.id)).toEqual(ids);
    const after = await deliveries();
    for (const id of ids) {
      const d = after.get(id)!;
      expect([d.status, d.attempts, d.attemptLog.length, d.attemptLog[0]!.statusCode]).toEqual(['DELIVERED', 1, 1, 200]);
    }
    // One step at a time took a claim and a record transaction per delivery (40 and more);
    // a run is one claim and a few record transactions.
    expect(begin.mock.calls.length).toBeLessThan(10);
  });

  it('a receiver answering 500 to the 3rd event stops the run: the rest go back untouched, and go out in order after the retry is acknowledged', async () => {
    const start = await platformNow();
    const ids = await emitLane('InternalAccount:stop', 20);
    let failedOnce = false;
    rx.status = (g) => {
      if (g.id === ids[2] && !failedOnce) {
        failedOnce = true;
        return 500;
      }
      return 200;
    };
    expect(await t.running.webhooks.runDue()).toBe(3);
    // 1 and 2 acknowledged, 3 answered 500; 4.. never sent.
    expect(rx.got.map((g) => g.id)).toEqual(ids.slice(0, 3));
    const stopped = await deliveries();
    expect(stopped.get(ids[0]!)!.status).toBe('DELIVERED');
    expect(stopped.get(ids[1]!)!.status).toBe('DELIVERED');
    const third = stopped.get(ids[2]!)!;
    expect([third.status, third.attempts, third.lastStatusCode, third.nextAttemptAt]).toEqual(['PENDING', 1, 500, iso(start + 30_000)]);
    for (const id of ids.slice(3)) {
      const d = stopped.get(id)!;
      // As before the claim: PENDING, no attempt counted or logged, due when its event happened.
      expect([d.status, d.attempts, d.attemptLog.length, d.nextAttemptAt]).toEqual(['PENDING', 0, 0, iso(start)]);
    }
    const rows = await t.store.db.selectFrom('webhook_deliveries').select(['event_id', 'lane_head', 'lease_until_ms']).where('event_id', 'in', ids.slice(2)).execute();
    const byEvent = new Map(rows.map((r) => [r.event_id, r]));
    // The retry heads the lane; the rest are not heads and hold no lease.
    expect(Number(byEvent.get(ids[2]!)!.lane_head)).toBe(1);
    for (const id of ids.slice(3)) expect([Number(byEvent.get(id)!.lane_head), byEvent.get(id)!.lease_until_ms]).toEqual([0, null]);
    // Nothing goes out before the retry is due.
    expect(await t.running.webhooks.runDue()).toBe(0);

    const res = await t.call('POST', '/sandbox/clock/advance', { seconds: 30 });
    expect(res.statusCode).toBe(200);
    expect(await t.running.webhooks.runDue()).toBe(18);
    // The retry first, then the rest, in order: the receiver saw each resource's events in order.
    expect(rx.got.map((g) => g.id)).toEqual([...ids.slice(0, 3), ...ids.slice(2)]);
    const done = await deliveries();
    expect(done.get(ids[2]!)!.attemptLog.map((a) => [a.startedAt, a.statusCode])).toEqual([
      [iso(start), 500],
      [iso(start + 30_000), 200],
    ]);
    for (const id of ids.slice(3)) {
      const d = done.get(id)!;
      // A follower is dated when its lane let it go: after the retry, not at its (earlier) due time.
      expect([d.status, d.attempts, d.attemptLog.length]).toEqual(['DELIVERED', 1, 1]);
      expect(d.attemptLog[0]!.startedAt >= iso(start + 30_000)).toBe(true);
    }
  });

  it("a follower's attempt is dated when its lane let it go, never later than now", async () => {
    const start = await platformNow();
    const ids = await emitLane('InternalAccount:dated', 5);
    // An hour passes on the sandbox clock before anything is sent.
    expect((await t.call('POST', '/sandbox/clock/advance', { seconds: 3_600 })).statusCode).toBe(200);
    expect(await t.running.webhooks.runDue()).toBe(5);
    expect(rx.got.map((g) => g.id)).toEqual(ids);
    const d = await deliveries();
    const times = ids.map((id) => Date.parse(d.get(id)!.attemptLog[0]!.startedAt));
    // The head at its event's time; each follower when the previous attempt ended (its start
    // plus its latency): close after it, nowhere near the hour later it was actually sent.
    expect(times[0]).toBe(start);
    for (let i = 1; i < times.length; i++) {
      expect(times[i]!).toBeGreaterThanOrEqual(times[i - 1]!);
      expect(times[i]! - start).toBeLessThan(60_000);
    }
  });

  it('a run whose process died (its lease lapsed mid-run) is taken over in order; nothing stays SENDING', async () => {
    const ids = await emitLane('InternalAccount:lapsed', 10);
    // Process A claims the run and sends its first delivery, which the endpoint keeps.
    const a = new WebhookDeliverer(t.store, t.clock);
    rx.held = (_g, n) => n === 1;
    const aRun = a.runDue();
    await vi.waitFor(() => expect(rx.holding).toBe(1), { timeout: WAIT_MS, interval: 10 });
    const claimed = await t.store.db.selectFrom('webhook_deliveries').select(['event_id', 'status', 'lease_until_ms']).where('event_id', 'in', ids).execute();
    expect(claimed.every((r) => r.status === 'SENDING' && r.lease_until_ms !== null)).toBe(true);
    // Another process finds nothing to take while A's lease holds.
    expect(await t.running.webhooks.runDue()).toBe(0);
    // A dies: its lease lapses (as if its lease time had passed with nothing written).
    await t.store.db.updateTable('webhook_deliveries').set({ lease_until_ms: t.clock.nowMs() - 1 }).where('event_id', 'in', ids).execute();

    // The other process takes the run over from its head, in order.
    expect(await t.running.webhooks.runDue()).toBe(10);
    expect(rx.got.slice(1).map((g) => g.id)).toEqual(ids);
    const d = await deliveries();
    for (const id of ids) expect(d.get(id)!.status).toBe('DELIVERED');
    // A's late answer changes nothing (its lease is gone); stopped, it sends no more of its run.
    const stopping = a.stop();
    rx.release();
    await aRun;
    await stopping;
    expect(rx.got).toHaveLength(11);
    const left = await t.store.db.selectFrom('webhook_deliveries').select('id').where('platform_id', '=', platformId).where('status', 'in', ['SENDING', 'PENDING']).execute();
    expect(left).toHaveLength(0);
    const after = await deliveries();
    // Each sent once by the other process; the first also has A's late attempt in its log.
    for (const id of ids) expect([after.get(id)!.status, after.get(id)!.attemptLog.length]).toEqual(['DELIVERED', id === ids[0] ? 2 : 1]);
  });

  it('a run lapsed after its first deliveries were recorded comes back from the first unrecorded one', async () => {
    const ids = await emitLane('InternalAccount:half', 8);
    const a = new WebhookDeliverer(t.store, t.clock);
    // A's run: the first three acknowledged (their records written), the 4th kept.
    rx.held = (_g, n) => n === 4;
    const aRun = a.runDue();
    await vi.waitFor(() => expect(rx.holding).toBe(1), { timeout: WAIT_MS, interval: 10 });
    // The records of the run's acknowledged attempts reach the store while it goes on (at the latest every 250 ms).
    await vi.waitFor(async () => expect((await deliveries()).get(ids[2]!)!.status).toBe('DELIVERED'), { timeout: WAIT_MS, interval: 50 });
    await t.store.db.updateTable('webhook_deliveries').set({ lease_until_ms: t.clock.nowMs() - 1 }).where('event_id', 'in', ids).where('status', '=', 'SENDING').execute();
    expect(await t.running.webhooks.runDue()).toBe(5);
    expect(rx.got.slice(4).map((g) => g.id)).toEqual(ids.slice(3));
    const stopping = a.stop();
    rx.release();
    await aRun;
    await stopping;
    const d = await deliveries();
    for (const id of ids) expect(d.get(id)!.status).toBe('DELIVERED');
    expect(rx.got).toHaveLength(9);
  });
  it('stopping the deliverer mid-run ends the run after its POST in flight; the rest go back as they were', async () => {
    const start = await platformNow();
    const ids = await emitLane('InternalAccount:stopped', 6);
    // A server process's deliverer (its background loop running) takes the lane as one run.
    const a = new WebhookDeliverer(t.store, t.clock);
    rx.held = (_g, n) => n === 2;
    a.start();
    await vi.waitFor(() => expect(rx.holding).toBe(1), { timeout: WAIT_MS, interval: 10 });
    // The server stops while the run's second POST is in flight.
    const stopping = a.stop();
    rx.release();
    await stopping;
    // The first two were sent (the second was in flight when the stop came), no more.
    expect(rx.got.map((g) => g.id)).toEqual(ids.slice(0, 2));
    const d = await deliveries();
    expect([d.get(ids[0]!)!.status, d.get(ids[1]!)!.status]).toEqual(['DELIVERED', 'DELIVERED']);
    for (const id of ids.slice(2)) expect([d.get(id)!.status, d.get(id)!.attempts, d.get(id)!.nextAttemptAt]).toEqual(['PENDING', 0, iso(start)]);
    // Another process takes the lane from there, in order.
    expect(await t.running.webhooks.runDue()).toBe(4);
    expect(rx.got.map((g) => g.id)).toEqual(ids);
  });
});
