import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { iso } from '../../src/kernel/clock.js';
import { emitEvent } from '../../src/kernel/events.js';
import { DEFAULT_CONCURRENCY, defaultPlatformCap } from '../../src/api/webhooks/service.js';
import { ADMIN_KEY, makeApp, STORE, type TestApp } from '../helpers.js';
import { appWithEndpoint, platformNowMs } from '../webhook-endpoint.js';
import { HoldingReceiver } from '../holding-receiver.js';

// Issue 14: a clock advance answers without waiting for webhook deliveries, and deliveries go
// out in lanes (one per resource: a transaction's events in order, an account's balance
// events in order) with several lanes in flight, so a slow lane holds nobody else.
// No worker runs (makeApp's default): the tests drive the deliverer with runDue().

/** How long to wait for what must eventually arrive (a generous bound for a loaded CI machine, not a timing assertion). */
const WAIT_MS = 20_000;

describe(`webhook lanes and the clock advance (${STORE})`, () => {
  let t: TestApp;
  let rx: HoldingReceiver;
  let platformId: string;

  beforeEach(async () => {
    ({ t, rx, platformId } = await appWithEndpoint(new HoldingReceiver()));
  });
  afterEach(async () => {
    await rx.stop();
    await t.close();
  });

  const platformNow = () => platformNowMs(t, platformId);
  const emit = async (resourceId: string, type: string, v = 0) => {
    const at = iso(await platformNow());
    return t.store.db.transaction().execute((trx) => emitEvent(trx, platformId, at, { type, resourceId, data: { id: resourceId, v } }));
  };
  const attemptsOf = async (eventId: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/admin/platforms/${platformId}/webhook-deliveries?limit=100`, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    const d = (res.json() as { data: Array<{ eventId: string; status: string; attemptLog: Array<{ startedAt: string; statusCode: number | null }> }> }).data.find((x) => x.eventId === eventId)!;
    return d;
  };

  it('an advance answers before the endpoint has answered; the events its jobs emitted go out afterwards, dated on the sandbox clock', async () => {
    // A payment step due in the window emits an event (as the sandbox's payment steps do).
    t.running.jobs.register('test.lanes.step', async ({ trx, nowMs }) => {
      await emitEvent(trx, platformId, iso(nowMs), { type: 'OUTGOING_PAYMENT.COMPLETED', resourceId: 'Transaction:step', data: { id: 'Transaction:step' } });
    });
    const start = await platformNow();
    await t.running.jobs.schedule(t.store.db, { platformId, kind: 'test.lanes.step', payload: {}, runAtMs: start + 60_000, at: iso(start) });
    // An event already due, and an endpoint that keeps every request until released.
    const before = await emit('Transaction:before', 'OUTGOING_PAYMENT.PENDING');
    rx.held = () => true;

    const res = await t.call('POST', '/sandbox/clock/advance', { seconds: 180 });
    // The answer came while the endpoint has answered nothing (it has not even been called).
    expect(rx.answered).toBe(0);
    expect(res.statusCode).toBe(200);
    expect(res.json().offsetSeconds).toBe(180);
    // The job ran inside the advance, at its own time; its event is enqueued, durable.
    const stepEvent = await t.store.db.selectFrom('events').select(['id', 'created_at']).where('resource_id', '=', 'Transaction:step').executeTakeFirstOrThrow();
    expect(stepEvent.created_at).toBe(iso(start + 60_000));
    expect((await attemptsOf(stepEvent.id)).status).toBe('PENDING');

    // The deliverer sends them after the answer: both lanes at once, each dated when it was due.
    const drain = t.running.webhooks.runDue();
    await vi.waitFor(() => expect(rx.holding).toBe(2), { timeout: WAIT_MS, interval: 20 });
    rx.release();
    await drain;
    expect(rx.got.find((g) => g.id === before)!.timestamp).toBe(iso(start));
    expect(rx.got.find((g) => g.id === stepEvent.id)!.timestamp).toBe(iso(start + 60_000));
    expect((await attemptsOf(before)).status).toBe('DELIVERED');
    expect((await attemptsOf(stepEvent.id)).status).toBe('DELIVERED');
  });

  it('retries that fall due inside an advanced window are sent after the answer, promptly, in order, at their scheduled times', async () => {
    let n = 0;
    rx.status = () => (++n <= 2 ? 500 : 200);
    const start = await platformNow();
    const id = await emit('Transaction:retry', 'OUTGOING_PAYMENT.PENDING');
    await t.running.webhooks.runDue();
    expect(rx.got).toHaveLength(1); // attempt 1 failed; attempt 2 is due 30 s later

    const res = await t.call('POST', '/sandbox/clock/advance', { seconds: 180 });
    expect(res.statusCode).toBe(200);
    expect(rx.got).toHaveLength(1); // nothing was sent while answering

    await t.running.webhooks.runDue();
    // 2 at +30 s (500), 3 at +90 s (30 s + 60 s, 200): each at its time on the sandbox clock.
    expect(rx.got.map((g) => [g.id, g.timestamp])).toEqual([
      [id, iso(start)],
      [id, iso(start + 30_000)],
      [id, iso(start + 90_000)],
    ]);
    const d = await attemptsOf(id);
    expect(d.status).toBe('DELIVERED');
    expect(d.attemptLog.map((a) => [a.startedAt, a.statusCode])).toEqual([
      [iso(start), 500],
      [iso(start + 30_000), 500],
      [iso(start + 90_000), 200],
    ]);
  });

  it('a slow lane does not hold the others: a payment’s events arrive, in order, while a busy account’s balance events are blocked', async () => {
    const account = 'InternalAccount:busy';
    const tx = 'Transaction:flow';
    const balance: string[] = [];
    for (let i = 0; i < 20; i++) balance.push(await emit(account, 'INTERNAL_ACCOUNT.BALANCE_UPDATED', i));
    const payment = [await emit(tx, 'OUTGOING_PAYMENT.PENDING'), await emit(tx, 'OUTGOING_PAYMENT.PROCESSING'), await emit(tx, 'OUTGOING_PAYMENT.COMPLETED')];
    // The endpoint keeps the account's deliveries until released.
    rx.held = (g) => g.resource === account;

    const drain = t.running.webhooks.runDue();
    await vi.waitFor(() => expect(rx.got.filter((g) => g.resource === tx)).toHaveLength(3), { timeout: WAIT_MS, interval: 20 });
    // The payment's events went out, in order, while the account's first one is still held;
    // the account's later ones wait behind it (one lane: one at a time, in order).
    expect(rx.got.filter((g) => g.resource === tx).map((g) => g.id)).toEqual(payment);
    expect(rx.got.filter((g) => g.resource === account).map((g) => g.id)).toEqual([balance[0]]);
    expect(rx.holding).toBe(1);

    rx.release();
    await drain;
    expect(rx.got.filter((g) => g.resource === account).map((g) => g.id)).toEqual(balance);
    for (const id of [...balance, ...payment]) expect((await attemptsOf(id)).status).toBe('DELIVERED');
  });

  it('a redelivery of an earlier event waits while a later one of its lane is in flight, then goes out (one at a time per lane)', async () => {
    const tx = 'Transaction:redelivered';
    const first = await emit(tx, 'OUTGOING_PAYMENT.PENDING');
    await t.running.webhooks.runDue();
    expect((await attemptsOf(first)).status).toBe('DELIVERED');

    // The lane's next event is in flight (the endpoint keeps it) when the first is redelivered.
    const second = await emit(tx, 'OUTGOING_PAYMENT.COMPLETED');
    let sentWhileHeld = false;
    rx.held = (g) => {
      if (g.id === first && rx.holding > 0) sentWhileHeld = true;
      return g.id === second;
    };
    const drain = t.running.webhooks.runDue();
    await vi.waitFor(() => expect(rx.holding).toBe(1), { timeout: WAIT_MS, interval: 20 });
    const deliveries = await t.store.db.selectFrom('webhook_deliveries').select(['id', 'event_id']).where('platform_id', '=', platformId).execute();
    const firstDelivery = deliveries.find((d) => d.event_id === first)!.id;
    const res = await t.app.inject({ method: 'POST', url: `/admin/platforms/${platformId}/webhook-deliveries/${firstDelivery}/redeliver`, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    expect(res.statusCode).toBe(200);
    expect(res.json().status).toBe('PENDING');

    // Another process's deliverer (a second app on the same store: its own lanes in flight,
    // none of them this one) looks while the lane is busy: the redelivery is not due there
    // either, the later event being in flight under its lease (store.ts `firstInLane`).
    const other = await makeApp({ testStore: { store: t.store, drop: async () => {} } });
    try {
      expect(await other.running.webhooks.runDue()).toBe(0);
    } finally {
      // Not running.close(): the store is this test's app's.
      await other.app.close();
      await other.running.jobs.stop();
      await other.running.webhooks.stop();
    }
    // Nor in this process, while the drain waits for the event in flight.
    const again = t.running.webhooks.runDue();
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 40));
      expect(rx.got.filter((g) => g.id === first)).toHaveLength(1);
      expect((await attemptsOf(first)).status).toBe('PENDING');
    }

    // Once the later event is answered, the redelivery goes out; nothing was sent two at a time.
    rx.release();
    await drain;
    await again;
    await t.running.webhooks.runDue();
    expect(sentWhileHeld).toBe(false);
    expect(rx.got.map((g) => g.id)).toEqual([first, second, first]);
    expect((await attemptsOf(first)).status).toBe('DELIVERED');
    expect((await attemptsOf(first)).attemptLog).toHaveLength(2);
    expect((await attemptsOf(second)).status).toBe('DELIVERED');
  });

  // One platform holds half the slots at most (issue 33); two platforms fill them all (webhook-fairness.test.ts).
  const CAP = defaultPlatformCap(DEFAULT_CONCURRENCY);
  it(`sends up to ${CAP} lanes of one platform at once (half of ${DEFAULT_CONCURRENCY} slots), never more`, async () => {
    const ids: string[] = [];
    for (let i = 0; i < CAP + 4; i++) ids.push(await emit(`Customer:${i}`, 'CUSTOMER.UPDATE'));
    rx.held = () => true;
    const drain = t.running.webhooks.runDue();
    await vi.waitFor(() => expect(rx.holding).toBe(CAP), { timeout: WAIT_MS, interval: 20 });
    const sending = await t.store.db.selectFrom('webhook_deliveries').select('id').where('platform_id', '=', platformId).where('status', '=', 'SENDING').execute();
    expect(sending).toHaveLength(CAP);
    expect(rx.got).toHaveLength(CAP);
    rx.release();
    await drain;
    expect(rx.got.map((g) => g.id).sort()).toEqual([...ids].sort());
  });
});
