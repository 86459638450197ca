import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/kernel/db/connect.js';
import { hasPoolPriority, PoolWaitTimeout, PriorityPool, withPoolPriority } from '../../src/kernel/db/priority-pool.js';
import { isStoreUnavailable } from '../../src/kernel/db/unavailable.js';
import { PollingLoop } from '../../src/kernel/polling.js';
import { freshStore, STORE, type TestStore } from '../helpers.js';

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
    const prio1 = withPoolPriority(() => pool.connect()).then((c) => (order.push('priority 1'), c));
    const prio2 = withPoolPriority(() => pool.connect()).then((c) => (order.push('priority 2'), c));
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

describe('who has the priority', () => {
  it('a background loop started or kicked from priority work does not inherit it', async () => {
    // The priority is kept once the process has a PriorityPool (a PostgreSQL store).
    new PriorityPool(fakePool(1), 1);
    const seen: boolean[] = [];
    let passes = 0;
    const loop = new PollingLoop(
      async () => {
        seen.push(hasPoolPriority());
        passes += 1;
        return false;
      },
      { pollMs: () => 5, maxPerPass: 1, onError: (err) => { throw err; } },
    );
    withPoolPriority(() => {
      expect(hasPoolPriority()).toBe(true);
      loop.start();
    });
    while (passes < 3) await new Promise((r) => setTimeout(r, 5));
    withPoolPriority(() => loop.kick());
    const before = passes;
    while (passes < before + 2) await new Promise((r) => setTimeout(r, 5));
    await loop.stop();
    expect(seen.length).toBeGreaterThanOrEqual(5);
    expect(seen.every((p) => p === false)).toBe(true);
    expect(hasPoolPriority()).toBe(false);
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

  it('a transaction started under withPoolPriority runs before requests that were waiting', async () => {
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
    const job = withPoolPriority(() => one.db.transaction().execute(async (trx) => void (await sql`select 0`.execute(trx), order.push('job'))));
    await tick();
    release();
    await Promise.all([holder, job, ...waiting]);
    expect(order).toEqual(['job', 'request 1', 'request 2', 'request 3']);
  });
});
