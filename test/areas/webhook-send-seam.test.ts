import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { iso } from '../../src/kernel/clock.js';
import { emitEvent } from '../../src/kernel/events.js';
import { type DeliverySendHook, setDeliverySendHook } from '../../src/kernel/webhook-send.js';
import { ADMIN_KEY, STORE, type TestApp } from '../helpers.js';
import { appWithEndpoint } from '../webhook-endpoint.js';
import { Receiver } from '../webhook-receiver.js';

// Issue 33: a delivery claimed just before the store went away must not hold its lane until
// its claim's lease lapses (timeout + 30 s). The send seam (kernel/webhook-send.ts) may read the
// store before it sends (the sandbox's faults read the platform's rules, not from memory while
// the change watch is cut): when the store cannot answer there, nothing was sent, and the
// deliverer tries the seam again once the store answers. Found by the PostgreSQL outage test
// (test/foundation/pg-outage.test.ts), where it happened now and then; here the seam fails on
// purpose, with the error a refused connection gives.

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

describe(`webhook delivery: the store unavailable at the send seam (${STORE})`, () => {
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

  const emit = (resourceId: string) => t.store.db.transaction().execute((trx) => emitEvent(trx, platformId, iso(t.clock.nowMs()), { type: 'CUSTOMER.UPDATE', resourceId, data: { id: resourceId } }));
  const deliveries = async () => {
    const res = await t.app.inject({ method: 'GET', url: `/admin/platforms/${platformId}/webhook-deliveries?limit=100`, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    return (res.json() as { data: Array<{ eventId: string; status: string; attempts: number }> }).data;
  };

  it('the seam failing before it sends is tried again once the store answers: the delivery goes out once, then its lane goes on', async () => {
    let calls = 0;
    const failing: DeliverySendHook = async (_d, send) => {
      calls += 1;
      if (calls <= 2) throw refused();
      return send();
    };
    setDeliverySendHook(t.store, failing);
    const first = await emit('Customer:seam');
    const second = await emit('Customer:seam');
    await t.running.webhooks.runDue();
    expect(calls).toBe(4); // two refused, then the two deliveries
    expect(rx.got.map((r) => r.json.id)).toEqual([first, second]);
    const byEvent = new Map((await deliveries()).map((d) => [d.eventId, d]));
    for (const id of [first, second]) expect(byEvent.get(id), id).toMatchObject({ status: 'DELIVERED', attempts: 1 });
  });

  it('an error once the POST has started is not a reason to send again: the receiver gets it once', async () => {
    let calls = 0;
    setDeliverySendHook(t.store, async (d, send) => {
      calls += 1;
      await send();
      throw refused();
    });
    const id = await emit('Customer:seam-after');
    await t.running.webhooks.runDue();
    expect(calls).toBe(1);
    expect(rx.got.map((r) => r.json.id)).toEqual([id]);
  });

  it('in a lane run, an attempt that fails once its POST started is not sent again at once, and the run’s rest go back unsent', async () => {
    let calls = 0;
    setDeliverySendHook(t.store, async (_d, send) => {
      calls += 1;
      const outcome = await send();
      if (calls === 2) throw refused();
      return outcome;
    });
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await emit('Customer:seam-run'));
    await t.running.webhooks.runDue();
    expect(calls).toBe(2);
    expect(rx.got.map((r) => r.json.id)).toEqual(ids.slice(0, 2));
    const byEvent = new Map((await deliveries()).map((d) => [d.eventId, d]));
    expect(byEvent.get(ids[0]!)).toMatchObject({ status: 'DELIVERED', attempts: 1 });
    // Its outcome is unknown: left to its claim's lease (sent again when that lapses).
    expect(byEvent.get(ids[1]!)).toMatchObject({ status: 'SENDING', attempts: 1 });
    for (const id of ids.slice(2)) expect(byEvent.get(id), id).toMatchObject({ status: 'PENDING', attempts: 0 });
  });
});
