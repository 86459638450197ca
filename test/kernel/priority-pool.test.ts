import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/kernel/db/connect.js';
import { PoolWaitTimeout, PriorityPool } from '../../src/kernel/db/priority-pool.js';
import { isStoreUnavailable } from '../../src/kernel/db/unavailable.js';
import { PollingLoop } from '../../src/kernel/polling.js';
import { freshStore, STORE, type TestStore, waitFor } from '../helpers.js';

// PostgreSQL hands its pool's connections to the job worker's claims before waiting requests
// (kernel/db/priority-pool.ts): settlement keeps pace with the payments it settles.

interface FakeClient {
  id: number;
  release: (err?: unknown) => void;
}

/** A pool of `size` fake connections that counts how many are out. */
function fakePool(size: number, failNext?: { fail: boolean }) {
  let out = 0;
  let next = 0;
  const pool = {
    maxOut: 0,
    get out() {
      return out;
    },
    async connect(): Promise<FakeClient> {
      await Promise.resolve();
      if (failNext?.fail) {
        failNext.fail = false;
        throw new Error('connection refused');
      }
      if (out >= size) throw new Error('the fake pool is over its size');
      out += 1;
      pool.maxOut = Math.max(pool.maxOut, out);
      const client: FakeClient = {
        id: (next += 1),
        release: () => {
          out -= 1;
          client.release = () => {
            throw new Error('released twice');
          };
        },
      };
      return client;
    },
    async end() {},
  };
  return pool;
}

const tick = () => new Promise((r) => setImmediate(r));

describe('PriorityPool', () => {
  it('lends at most its size, and serves priority waiters first, each queue in arrival order', async () => {
    const inner = fakePool(1);
    const pool = new PriorityPool(inner, 1);
    const held = await pool.connect();
    const order: string[] = [];
    const normal1 = pool.connect().then((c) => (order.push('normal 1'), c));
    const normal2 = pool.connect().then((c) => (order.push('normal 2'), c));
    const prio1 = pool.first.connect().then((c) => (order.push('priority 1'), c));
    const prio2 = pool.first.connect().then((c) => (order.push('priority 2'), c));
    await tick();
    expect(pool.state).toEqual({ lent: 1, priorityWaiting: 2, waiting: 2 });
    expect(order).toEqual([]);

    held.release();
    (await prio1).release();
    (await prio2).release();
    (await normal1).release();
    (await normal2).release();
    expect(order).toEqual(['priority 1', 'priority 2', 'normal 1', 'normal 2']);
    expect(pool.state).toEqual({ lent: 0, priorityWaiting: 0, waiting: 0 });
    expect(inner.maxOut).toBe(1);
    expect(inner.out).toBe(0);
  });

  it('a second release is the pool’s own error; the slot is handed over once', async () => {
    const inner = fakePool(2);
    const pool = new PriorityPool(inner, 2);
    const a = await pool.connect();
    a.release();
    expect(() => a.release()).toThrow('released twice');
    expect(pool.state.lent).toBe(0);
    const b = await pool.connect();
    const c = await pool.connect();
    expect(pool.state.lent).toBe(2);
    b.release();
    c.release();
    expect(pool.state.lent).toBe(0);
  });

  it('a failed connect gives its slot to the next waiter', async () => {
    const failNext = { fail: false };
    const inner = fakePool(1, failNext);
    const pool = new PriorityPool(inner, 1);
    const held = await pool.connect();
    failNext.fail = true;
    const failing = pool.connect();
    const after = pool.connect();
    await tick();
    held.release();
    await expect(failing).rejects.toThrow('connection refused');
    const c = await after;
    expect(pool.state.lent).toBe(1);
    c.release();
    expect(pool.state).toEqual({ lent: 0, priorityWaiting: 0, waiting: 0 });
  });

  it('a waiter gives up after the acquire timeout (a 503 error), leaves the queue, and the slot goes to the next caller', async () => {
    const fake = fakePool(1);
    const pool = new PriorityPool(fake, 1, 50);
    const held = await pool.connect();
    const t0 = Date.now();
    const err = await pool.connect().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PoolWaitTimeout);
    expect(isStoreUnavailable(err)).toBe(true);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(45);
    expect(pool.state).toEqual({ lent: 1, priorityWaiting: 0, waiting: 0 });
    const next = pool.connect();
    held.release();
    (await next).release();
    expect(pool.state).toEqual({ lent: 0, priorityWaiting: 0, waiting: 0 });
  });
});

describe.runIf(STORE === 'postgres')('the PostgreSQL store lends connections to priority work first', () => {
  let ts: TestStore;
  let one: Store;
  beforeEach(async () => {
    ts = await freshStore();
    one = await openStore({ kind: 'postgres', location: process.env.TEST_DATABASE_URL! }, { schema: ts.schema!, poolSize: 1 });
  });
  afterEach(async () => {
    await one.close();
    await ts.store.close();
    await ts.drop();
  });

  it('a transaction of the priority handle runs before requests that were waiting', async () => {
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // Holds the only connection until the gate opens.
    const holder = one.db.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx);
      await gate;
    });
    await tick();
    const waiting = [1, 2, 3].map((i) => one.db.transaction().execute(async (trx) => void (await sql`select ${i}`.execute(trx), order.push(`request ${i}`))));
    const job = one.priorityDb!.transaction().execute(async (trx) => void (await sql`select 0`.execute(trx), order.push('job')));
    await tick();
    release();
    await Promise.all([holder, job, ...waiting]);
    expect(order).toEqual(['job', 'request 1', 'request 2', 'request 3']);
  });

  it('a background loop started or kicked from priority work does not get its turn', async () => {
    // A webhook delivery kicked by an event a job emitted, say: its passes use the store's own
    // handle and wait behind the requests that were waiting before them.
    const order: string[] = [];
    let passes = 0;
    const loop = new PollingLoop(
      async () => {
        const n = (passes += 1);
        await one.db.transaction().execute(async (trx) => void (await sql`select ${n}`.execute(trx), order.push(`loop ${n}`)));
        return false;
      },
      { pollMs: () => 60_000, maxPerPass: 1, onError: (err) => { throw err; } },
    );
    const waiting: Promise<void>[] = [];
    // Work of the priority handle holds the only connection while a request waits for it and
    // the loop starts (later: is kicked).
    await one.priorityDb!.transaction().execute(async (trx) => {
      await sql`select 0`.execute(trx);
      waiting.push(one.db.transaction().execute(async (t) => void (await sql`select 1`.execute(t), order.push('request 1'))));
      await tick();
      loop.start();
      await tick();
    });
    await Promise.all(waiting);
    await waitFor(() => order.length === 2);
    await tick(); // the loop sleeps (pollMs) after its pass
    // Kicked from inside a priority transaction while a request waits: the request goes first.
    await one.priorityDb!.transaction().execute(async (trx) => {
      await sql`select 0`.execute(trx);
      waiting.push(one.db.transaction().execute(async (t) => void (await sql`select 2`.execute(t), order.push('request 2'))));
      await tick();
      loop.kick();
      await tick();
    });
    await Promise.all(waiting);
    await waitFor(() => order.length === 4);
    await loop.stop();
    expect(order).toEqual(['request 1', 'loop 1', 'request 2', 'loop 2']);
  });
});
