import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { iso } from '../../src/kernel/clock.js';
import { emitEvent } from '../../src/kernel/events.js';
import { DEFAULT_CONCURRENCY, defaultPlatformCap, UNRESPONSIVE_CAP } from '../../src/api/webhooks/service.js';
import { ADMIN_KEY, basic, makeApp, STORE, type TestApp } from '../helpers.js';

// Issue 33: a receiver that hangs stalls only its own platform's deliveries, and only for the
// attempts' timeouts. Two platforms, each with its own real local receiver; platform A's hangs.
// No worker runs (makeApp's default): the tests drive the deliverer with runDue().

/** The attempt timeout in this test: A's first attempts end this long after they start. */
const TIMEOUT_MS = 5_000;
/** How long to wait for what must eventually arrive (generous for a loaded machine, not a timing assertion). */
const WAIT_MS = 30_000;
const CAP = defaultPlatformCap(DEFAULT_CONCURRENCY);

interface Got {
  id: string;
  resource: string;
  /** What it was answered: a status, or 'hang' (no answer; the deliverer's timeout ends it). */
  answer: number | 'hang';
}

/** A receiver that answers 200 at once, or hangs while `hang` is set; counts the requests it holds. */
class Receiver {
  readonly got: Got[] = [];
  hang = false;
  /** Requests held right now, and the most held at once since `resetMax()`. */
  holding = 0;
  maxHolding = 0;
  private server: Server | undefined;
  private held: ServerResponse[] = [];
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; type: string; data: { id?: string } };
        if (body.type === 'TEST') return void res.writeHead(200).end();
        const g: Got = { id: body.id, resource: body.data.id ?? '', answer: this.hang ? 'hang' : 200 };
        this.got.push(g);
        if (g.answer === 'hang') {
          this.holding += 1;
          this.maxHolding = Math.max(this.maxHolding, this.holding);
          this.held.push(res);
          res.on('close', () => (this.holding -= 1));
          return;
        }
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/hooks`;
    return this;
  }

  resetMax(): void {
    this.maxHolding = this.holding;
  }

  async stop(): Promise<void> {
    for (const r of this.held) r.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

describe(`webhook delivery: a hanging receiver stalls only its own platform (${STORE})`, () => {
  let t: TestApp;
  let rxA: Receiver;
  let rxB: Receiver;
  let platformA: string;
  let platformB: string;
  let authB: string;

  beforeEach(async () => {
    t = await makeApp();
    t.running.webhooks.timeoutMs = TIMEOUT_MS;
    rxA = await new Receiver().start();
    rxB = await new Receiver().start();
    platformA = t.running.bootstrap.platform.id;
    const created = await t.app.inject({ method: 'POST', url: '/admin/platforms', headers: { authorization: `Bearer ${ADMIN_KEY}` }, payload: { name: 'B', skipVerificationPaperwork: true } });
    expect(created.statusCode, created.body).toBe(201);
    platformB = created.json().platform.id as string;
    authB = basic(created.json().credentials.clientId as string, created.json().credentials.clientSecret as string);
    expect((await t.call('PATCH', '/config', { webhookEndpoint: rxA.url })).statusCode).toBe(200);
    expect((await t.call('PATCH', '/config', { webhookEndpoint: rxB.url }, { authorization: authB })).statusCode).toBe(200);
    await t.running.webhooks.runDue(); // the new endpoints' TEST webhooks
  });
  afterEach(async () => {
    await rxA.stop();
    await rxB.stop();
    await t.close();
  });

  const emit = async (platformId: string, resourceId: string, type = 'CUSTOMER.UPDATE') => {
    const offset = Number((await t.store.db.selectFrom('platforms').select('clock_offset_ms').where('id', '=', platformId).executeTakeFirstOrThrow()).clock_offset_ms);
    return t.store.db.transaction().execute((trx) => emitEvent(trx, platformId, iso(t.clock.nowMs() + offset), { type, resourceId, data: { id: resourceId } }));
  };
  const attemptsRecorded = async (platformId: string) => (await t.store.db.selectFrom('webhook_attempts').select('id').where('platform_id', '=', platformId).execute()).length;
  const sending = async (platformId: string) => (await t.store.db.selectFrom('webhook_deliveries').select('id').where('platform_id', '=', platformId).where('status', '=', 'SENDING').execute()).length;
  const statuses = async (platformId: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/admin/platforms/${platformId}/webhook-deliveries?limit=100`, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    return new Map((res.json() as { data: Array<{ eventId: string; status: string }> }).data.map((d) => [d.eventId, d.status]));
  };

  it('the other platform’s deliveries all arrive before the hanging endpoint’s first timeout; the hanging platform then holds one slot; recovered, its deliveries arrive in order per resource', async () => {
    // A: as many lanes as today's deliverer has slots (8), two events each, due first.
    const lanesA: string[][] = [];
    for (let i = 0; i < 8; i++) {
      const r = `Customer:a${i}`;
      lanesA.push([await emit(platformA, r), await emit(platformA, r)]);
    }
    // B: 24 events, each its own lane.
    const idsB: string[] = [];
    for (let i = 0; i < 24; i++) idsB.push(await emit(platformB, `Customer:b${i}`));
    rxA.hang = true;
    const before = await attemptsRecorded(platformA); // the TEST webhook's

    const drain = t.running.webhooks.runDue();
    // Every one of B's arrives while none of A's attempts has ended yet (they end at the timeout).
    await vi.waitFor(() => expect(rxB.got.length).toBeGreaterThanOrEqual(idsB.length), { timeout: WAIT_MS, interval: 10 });
    expect(await attemptsRecorded(platformA)).toBe(before);
    expect(rxB.got.map((g) => g.id).sort()).toEqual([...idsB].sort());
    // A holds its share of the slots: its 8 lane heads, hanging (8 = half of 16).
    expect(rxA.holding).toBe(Math.min(CAP, lanesA.length));
    await drain; // A's attempts time out; each is retried 30 s later (sandbox clock)
    expect(await attemptsRecorded(platformA)).toBe(before + lanesA.length);
    const afterFirst = await statuses(platformA);
    for (const [first, second] of lanesA) {
      expect(afterFirst.get(first!)).toBe('PENDING');
      expect(afterFirst.get(second!)).toBe('PENDING');
    }

    // A's endpoint gave no answer: A now holds one slot until it answers. New lanes of A go one
    // at a time, and B's new events go on meanwhile.
    rxA.resetMax();
    const moreA = [await emit(platformA, 'Customer:a8'), await emit(platformA, 'Customer:a9'), await emit(platformA, 'Customer:a10')];
    const moreB: string[] = [];
    for (let i = 0; i < 6; i++) moreB.push(await emit(platformB, `Customer:b-more-${i}`));
    const drain2 = t.running.webhooks.runDue();
    await vi.waitFor(() => expect(rxB.got.length).toBe(idsB.length + moreB.length), { timeout: WAIT_MS, interval: 10 });
    expect(rxA.holding).toBe(UNRESPONSIVE_CAP);
    expect(await sending(platformA)).toBe(UNRESPONSIVE_CAP);
    // The endpoint answers again: its held request still times out, the next one is answered
    // and A goes back to its share.
    rxA.hang = false;
    await drain2;
    expect(rxA.maxHolding).toBe(UNRESPONSIVE_CAP);
    const now = await statuses(platformA);
    expect(moreA.filter((id) => now.get(id) === 'DELIVERED').length).toBe(moreA.length - 1);

    // A's retries come due (30 s on A's sandbox clock): everything of A arrives, in order per resource.
    expect((await t.call('POST', '/sandbox/clock/advance', { seconds: 30 })).statusCode).toBe(200);
    await t.running.webhooks.runDue();
    const final = await statuses(platformA);
    for (const id of [...lanesA.flat(), ...moreA.slice(0, 1)]) expect(final.get(id), id).toBe('DELIVERED');
    for (const [first, second] of lanesA) {
      const answered = rxA.got.findIndex((g) => g.id === first && g.answer === 200);
      const secondFirstSeen = rxA.got.findIndex((g) => g.id === second);
      expect(answered).toBeGreaterThanOrEqual(0);
      // The lane's second event went out only after its first was answered.
      expect(secondFirstSeen).toBeGreaterThan(answered);
    }
    // B was never held back: everything of B delivered.
    const finalB = await statuses(platformB);
    for (const id of [...idsB, ...moreB]) expect(finalB.get(id)).toBe('DELIVERED');
  }, 120_000);
});
