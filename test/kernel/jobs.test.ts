import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { iso, ManualClock } from '../../src/kernel/clock.js';
import { openStore, type Store } from '../../src/kernel/db/connect.js';
import { emitEvent, listEvents } from '../../src/kernel/events.js';
import { type JobContext, JobQueue, type JobRecord } from '../../src/kernel/jobs.js';
import { freshStore, makeApp, openSameSchema, sleep, STORE, type TestApp, type TestStore, waitFor } from '../helpers.js';

// The kernel's durable jobs, driven by hand (runOne/runDue with a ManualClock) and through
// the worker loop (start/stop with real timers).

/** The job's row, or undefined once it ran (a job that ran is deleted with its handler's commit). */
async function findJob(store: Store, id: string) {
  return store.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
}

async function jobRow(store: Store, id: string) {
  const row = await store.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  return { ...row, attempts: Number(row.attempts), run_at_ms: Number(row.run_at_ms), max_attempts: Number(row.max_attempts) };
}

describe(`durable jobs (${STORE})`, () => {
  let t: TestApp;
  let jobs: JobQueue;
  let platformId: string;

  beforeEach(async () => {
    t = await makeApp();
    jobs = t.running.jobs;
    platformId = t.running.bootstrap.platform.id;
  });
  afterEach(async () => t.close());

  const schedule = (kind: string, runAtMs: number, payload: unknown = null, extra: { platformId?: string | null; maxAttempts?: number } = {}) =>
    jobs.schedule(t.store.db, {
      platformId: extra.platformId === undefined ? platformId : extra.platformId,
      kind,
      payload,
      runAtMs,
      at: iso(t.clock.nowMs()),
      ...(extra.maxAttempts !== undefined ? { maxAttempts: extra.maxAttempts } : {}),
    });

  it('runs a job that is due now exactly once, with its payload', async () => {
    const seen: JobContext[] = [];
    jobs.register('test.echo', async (ctx) => {
      seen.push(ctx);
    });
    const payload = { a: 1, nested: { b: [1, 2, 'three'] }, s: 'ünïcødé' };
    const id = await schedule('test.echo', t.clock.nowMs(), payload);

    expect(await jobs.runDue()).toBe(1);
    expect(await jobs.runDue()).toBe(0);
    expect(await jobs.runOne()).toBe(false);

    expect(seen).toHaveLength(1);
    const ctx = seen[0]!;
    expect(ctx.job).toEqual<JobRecord>({ id, platformId, kind: 'test.echo', payload, runAtMs: t.clock.nowMs(), attempts: 1 });
    expect(ctx.nowMs).toBe(t.clock.nowMs());
    // It ran once: its row went with that commit.
    expect(await findJob(t.store, id)).toBeUndefined();
  });

  it('a batch handler completes the leading jobs it takes; the next runs alone, then the rest goes back to it: claim order kept', async () => {
    const sizes: number[] = [];
    jobs.register(
      'test.batched',
      async (ctx) => {
        await emitEvent(ctx.trx, platformId, iso(ctx.nowMs), { type: 'TEST.ONE', resourceId: 'r', data: ctx.job.payload });
      },
      {
        batch: async (ctx) => {
          sizes.push(ctx.jobs.length);
          let n = 0;
          for (const job of ctx.jobs) {
            if (!(job.payload as { batchable: boolean }).batchable) break;
            await emitEvent(ctx.trx, platformId, iso(ctx.nowMs), { type: 'TEST.BATCH', resourceId: 'r', data: job.payload });
            n += 1;
          }
          return n;
        },
      },
    );
    const plan = [true, true, false, true, true];
    const ids: string[] = [];
    for (const [n, batchable] of plan.entries()) ids.push(await schedule('test.batched', t.clock.nowMs(), { n, batchable }));
    expect(await jobs.runDue()).toBe(5);
    const events = await listEvents(t.store.db, platformId, { resourceId: 'r' });
    expect(events.map((e) => [e.type, (e.payload.data as { n: number }).n])).toEqual([
      ['TEST.BATCH', 0],
      ['TEST.BATCH', 1],
      ['TEST.ONE', 2],
      ['TEST.BATCH', 3],
      ['TEST.BATCH', 4],
    ]);
    // SQLite claims the five at once: the batch gets them all, then the two after the one that ran alone.
    // PostgreSQL the same, one transaction each: the batch's two, then the job it left alone
    // (after the batch of three completed none), then the last two.
    expect(sizes).toEqual([5, 3, 2]);
    for (const id of ids) expect(await findJob(t.store, id)).toBeUndefined();
  });

  it('a batch handler that throws is rolled back and its jobs run one at a time', async () => {
    jobs.register(
      'test.batch-throws',
      async (ctx) => {
        await emitEvent(ctx.trx, platformId, iso(ctx.nowMs), { type: 'TEST.ONE', resourceId: 'q', data: ctx.job.payload });
      },
      {
        batch: async (ctx) => {
          for (const job of ctx.jobs) await emitEvent(ctx.trx, platformId, iso(ctx.nowMs), { type: 'TEST.BATCH', resourceId: 'q', data: job.payload });
          throw new Error('refused');
        },
      },
    );
    for (let n = 0; n < 3; n++) await schedule('test.batch-throws', t.clock.nowMs(), { n });
    expect(await jobs.runDue()).toBe(3);
    const events = await listEvents(t.store.db, platformId, { resourceId: 'q' });
    expect(events.map((e) => [e.type, (e.payload.data as { n: number }).n])).toEqual([
      ['TEST.ONE', 0],
      ['TEST.ONE', 1],
      ['TEST.ONE', 2],
    ]);
    expect(await t.store.db.selectFrom('jobs').select('id').where('kind', '=', 'test.batch-throws').execute()).toEqual([]);
  });

  it('does not run a job before its due time on the clock', async () => {
    let runs = 0;
    jobs.register('test.later', async () => {
      runs += 1;
    });
    const id = await schedule('test.later', t.clock.nowMs() + 30_000);

    expect(await jobs.runDue()).toBe(0);
    t.clock.advance(29_999);
    expect(await jobs.runDue()).toBe(0);
    expect(runs).toBe(0);
    expect((await jobRow(t.store, id)).status).toBe('pending');

    t.clock.advance(1);
    expect(await jobs.runDue()).toBe(1);
    expect(runs).toBe(1);
    expect(await findJob(t.store, id)).toBeUndefined();
  });

  it("measures due time on the job's platform clock (sandbox offset)", async () => {
    const ran: Array<{ id: string; nowMs: number }> = [];
    jobs.register('test.offset', async ({ job, nowMs }) => {
      ran.push({ id: job.id, nowMs });
    });
    const sixMinutes = 6 * 60_000;
    const onPlatform = await schedule('test.offset', t.clock.nowMs() + sixMinutes);
    // A job of no platform runs on real time: the platform's offset does not move it.
    const noPlatform = await schedule('test.offset', t.clock.nowMs() + sixMinutes, null, { platformId: null });
    expect(await jobs.runDue()).toBe(0);

    await t.store.db.updateTable('platforms').set({ clock_offset_ms: sixMinutes }).where('id', '=', platformId).execute();
    expect(await jobs.runDue()).toBe(1);
    expect(ran).toEqual([{ id: onPlatform, nowMs: t.clock.nowMs() + sixMinutes }]);
    expect((await jobRow(t.store, noPlatform)).status).toBe('pending');
  });

  it('runs due jobs in due-time order, not in scheduling order', async () => {
    const order: number[] = [];
    jobs.register('test.order', async ({ job }) => {
      order.push((job.payload as { n: number }).n);
    });
    const now = t.clock.nowMs();
    for (const n of [3, 1, 4, 2]) await schedule('test.order', now + n * 1_000, { n });
    t.clock.advance(10_000);

    expect(await jobs.runDue()).toBe(4);
    expect(order).toEqual([1, 2, 3, 4]);
  });

  it("runDue(platformId) runs only that platform's jobs", async () => {
    const ran: string[] = [];
    jobs.register('test.scoped', async ({ job }) => {
      ran.push(job.platformId ?? 'none');
    });
    await schedule('test.scoped', t.clock.nowMs(), null, { platformId: 'Platform:someone-else' });
    await schedule('test.scoped', t.clock.nowMs());

    expect(await jobs.runDue(platformId)).toBe(1);
    expect(ran).toEqual([platformId]);
    expect(await jobs.runDue()).toBe(1);
    expect(ran).toEqual([platformId, 'Platform:someone-else']);
  });

  it("commits a handler's writes together with the job", async () => {
    jobs.register('test.emit', async ({ trx, job, nowMs }) => {
      await emitEvent(trx, job.platformId!, iso(nowMs), { type: 'TEST.EMITTED', resourceId: job.id, data: job.payload });
    });
    const id = await schedule('test.emit', t.clock.nowMs(), { hello: 'world' });
    expect(await jobs.runDue()).toBe(1);

    const events = await listEvents(t.store.db, platformId, { type: 'TEST.EMITTED' });
    expect(events).toHaveLength(1);
    expect(events[0]!.resourceId).toBe(id);
    expect(events[0]!.payload.data).toEqual({ hello: 'world' });
    expect(await findJob(t.store, id)).toBeUndefined();
  });

  it('rolls back a failing handler, records the error and retries with exponential backoff', async () => {
    let calls = 0;
    jobs.register(
      'test.flaky',
      async ({ trx, job, nowMs }) => {
        calls += 1;
        await emitEvent(trx, job.platformId!, iso(nowMs), { type: 'TEST.FLAKY', resourceId: job.id, data: { attempt: job.attempts } });
        if (job.attempts < 3) throw new Error(`boom ${job.attempts}`);
      },
      { backoffBaseMs: 1_000, maxAttempts: 5 },
    );
    const id = await schedule('test.flaky', t.clock.nowMs());

    // Attempt 1 fails: its event is rolled back, the job is pushed back by 1 s (+ up to 20 % jitter).
    const t1 = t.clock.nowMs();
    expect(await jobs.runDue()).toBe(1);
    let row = await jobRow(t.store, id);
    expect(row).toMatchObject({ status: 'pending', attempts: 1, last_error: 'boom 1' });
    expect(row.run_at_ms).toBeGreaterThanOrEqual(t1 + 1_000);
    expect(row.run_at_ms).toBeLessThanOrEqual(t1 + 1_200);
    expect(await listEvents(t.store.db, platformId, { type: 'TEST.FLAKY' })).toEqual([]);
    expect(await jobs.runDue()).toBe(0); // not due again yet

    // Attempt 2 fails: the delay doubles.
    t.clock.set(row.run_at_ms);
    const t2 = t.clock.nowMs();
    expect(await jobs.runDue()).toBe(1);
    row = await jobRow(t.store, id);
    expect(row).toMatchObject({ status: 'pending', attempts: 2, last_error: 'boom 2' });
    expect(row.run_at_ms).toBeGreaterThanOrEqual(t2 + 2_000);
    expect(row.run_at_ms).toBeLessThanOrEqual(t2 + 2_400);
    expect(await listEvents(t.store.db, platformId, { type: 'TEST.FLAKY' })).toEqual([]);

    // Attempt 3 succeeds: only its own write is there.
    t.clock.set(row.run_at_ms);
    expect(await jobs.runDue()).toBe(1);
    expect(await findJob(t.store, id)).toBeUndefined();
    const events = await listEvents(t.store.db, platformId, { type: 'TEST.FLAKY' });
    expect(events.map((e) => e.payload.data)).toEqual([{ attempt: 3 }]);
    expect(calls).toBe(3);
  });

  it('marks a job failed after its last attempt and never runs it again', async () => {
    let calls = 0;
    jobs.register(
      'test.broken',
      async () => {
        calls += 1;
        throw new Error('always broken');
      },
      { maxAttempts: 3, backoffBaseMs: 10 },
    );
    const id = await schedule('test.broken', t.clock.nowMs());
    for (let i = 0; i < 6; i += 1) {
      await jobs.runDue();
      t.clock.advance(60 * 60_000);
    }
    expect(calls).toBe(3);
    const row = await jobRow(t.store, id);
    expect(row).toMatchObject({ status: 'failed', attempts: 3, max_attempts: 3, last_error: 'always broken' });

    t.clock.advance(30 * 24 * 60 * 60_000);
    expect(await jobs.runDue()).toBe(0);
    expect(calls).toBe(3);
  });

  it('honours maxAttempts given when scheduling', async () => {
    let calls = 0;
    jobs.register('test.once', async () => {
      calls += 1;
      throw new Error('no');
    });
    const id = await schedule('test.once', t.clock.nowMs(), null, { maxAttempts: 1 });
    expect(await jobs.runDue()).toBe(1);
    t.clock.advance(60 * 60_000);
    expect(await jobs.runDue()).toBe(0);
    expect(calls).toBe(1);
    expect(await jobRow(t.store, id)).toMatchObject({ status: 'failed', attempts: 1, max_attempts: 1, last_error: 'no' });
  });

  it('leaves a job of an unknown kind alone without blocking the jobs behind it', async () => {
    const ran: string[] = [];
    jobs.register('test.known', async ({ job }) => {
      ran.push(job.id);
    });
    const unknown = await schedule('test.unknown', t.clock.nowMs() - 1_000);
    const known = await schedule('test.known', t.clock.nowMs());

    expect(await jobs.runDue()).toBe(1);
    expect(ran).toEqual([known]);
    // Nobody here can run it, so it is not burned: it waits for a process that can.
    expect(await jobRow(t.store, unknown)).toMatchObject({ status: 'pending', attempts: 0, last_error: null });

    let late = 0;
    jobs.register('test.unknown', async () => {
      late += 1;
    });
    expect(await jobs.runDue()).toBe(1);
    expect(late).toBe(1);
    expect(await findJob(t.store, unknown)).toBeUndefined();
  });

  it('the worker loop keeps going past an unknown kind and runs a job scheduled while it runs', async () => {
    const ran: string[] = [];
    jobs.register('test.live', async ({ job }) => {
      ran.push(job.id);
    });
    await schedule('test.nobody-knows', t.clock.nowMs());
    jobs.start();
    await sleep(50);
    const id = await schedule('test.live', t.clock.nowMs());
    await waitFor(() => ran.length === 1);
    expect(ran).toEqual([id]);

    // And another one, later on, after the loop has gone idle.
    await sleep(250);
    const id2 = await schedule('test.live', t.clock.nowMs());
    await waitFor(() => ran.length === 2);
    expect(ran).toEqual([id, id2]);
    await jobs.stop();
  });

  it('schedule() wakes an idle worker at once, without waiting for its next poll', async () => {
    const slow = new JobQueue(t.store, t.clock, undefined, 60_000); // polls once a minute
    const ran: string[] = [];
    slow.register('test.kicked', async ({ job }) => {
      ran.push(job.id);
    });
    slow.start();
    try {
      await sleep(100); // first pass done: the loop is idle until its next poll
      const id = await slow.schedule(t.store.db, { platformId, kind: 'test.kicked', payload: null, runAtMs: t.clock.nowMs(), at: iso(t.clock.nowMs()) });
      await waitFor(() => ran.length === 1, 3_000);
      expect(ran).toEqual([id]);
    } finally {
      await slow.stop();
    }
  });

  it('runs due jobs whose handler is registered after the worker started', async () => {
    const slow = new JobQueue(t.store, t.clock, undefined, 60_000); // polls once a minute
    const id = await schedule('test.late-handler', t.clock.nowMs());
    slow.start();
    try {
      await sleep(300); // the loop has looked at the queue already
      let runs = 0;
      slow.register('test.late-handler', async () => {
        runs += 1;
      });
      await waitFor(() => runs === 1, 3_000);
      await waitFor(async () => (await findJob(t.store, id)) === undefined);
    } finally {
      await slow.stop();
    }
  });

  it.skipIf(STORE !== 'postgres')('on PostgreSQL claims due jobs side by side, each once, each in its own transaction', async () => {
    let running = 0;
    let most = 0;
    const ran: string[] = [];
    jobs.register('test.side', async ({ job }) => {
      running += 1;
      most = Math.max(most, running);
      await sleep(200);
      running -= 1;
      ran.push(job.id);
    });
    const ids: string[] = [];
    for (let i = 0; i < 8; i += 1) ids.push(await schedule('test.side', t.clock.nowMs()));
    jobs.start();
    await waitFor(() => ran.length === 8, 5_000);
    await jobs.stop();
    expect(most).toBe(4);
    expect([...ran].sort()).toEqual([...ids].sort());
  });

  it('stop() waits for the jobs in progress and starts no other', async () => {
    // SQLite runs one job at a time here (a batch stops when the loop stops); PostgreSQL
    // claims up to 4 side by side, each in its own transaction.
    const sideBySide = STORE === 'postgres' ? 4 : 1;
    let started = 0;
    let finished = 0;
    jobs.register('test.slow', async ({ trx, job, nowMs }) => {
      started += 1;
      await sleep(150);
      await emitEvent(trx, job.platformId!, iso(nowMs), { type: 'TEST.SLOW', resourceId: job.id, data: null });
      finished += 1;
    });
    const total = 6;
    for (let i = 0; i < total; i += 1) await schedule('test.slow', t.clock.nowMs());
    jobs.start();
    await waitFor(() => started >= 1);
    await jobs.stop();

    expect(started).toBeGreaterThanOrEqual(1);
    expect(started).toBeLessThanOrEqual(sideBySide);
    expect(finished).toBe(started);
    expect(await listEvents(t.store.db, platformId, { type: 'TEST.SLOW' })).toHaveLength(started);
    const pending = await t.store.db.selectFrom('jobs').select('id').where('kind', '=', 'test.slow').where('status', '=', 'pending').execute();
    expect(pending).toHaveLength(total - started);

    // Stopped means stopped: scheduling does not wake it.
    const before = started;
    await schedule('test.slow', t.clock.nowMs());
    await sleep(300);
    expect(started).toBe(before);
  });
});

describe(`durable jobs across a restart (${STORE})`, () => {
  it('a job that came due while the server was down runs when it starts again', async () => {
    let first: TestStore;
    let reopen: () => Promise<TestStore>;
    if (STORE === 'sqlite') {
      const dir = mkdtempSync(join(tmpdir(), 'payments-jobs-'));
      const file = join(dir, 'store.sqlite');
      first = { store: await openStore({ kind: 'sqlite', location: file }), drop: async () => {} };
      reopen = async () => ({ store: await openStore({ kind: 'sqlite', location: file }), drop: async () => rmSync(dir, { recursive: true, force: true }) });
    } else {
      const ts = await freshStore();
      first = { store: ts.store, drop: async () => {} };
      reopen = async () => ({ store: await openSameSchema(ts.schema!), drop: ts.drop });
    }

    const clock = new ManualClock(Date.now());
    const a = await makeApp({ clock, testStore: first });
    const platformId = a.running.bootstrap.platform.id;
    const id = await a.running.jobs.schedule(a.store.db, {
      platformId,
      kind: 'test.restart',
      payload: { survive: true },
      runAtMs: clock.nowMs() + 60_000,
      at: iso(clock.nowMs()),
    });
    await a.close();

    clock.advance(5 * 60_000); // down for five minutes; the job came due meanwhile
    const b = await makeApp({ clock, worker: true, testStore: await reopen() });
    try {
      const seen: unknown[] = [];
      b.running.jobs.register('test.restart', async ({ job }) => {
        seen.push(job.payload);
      });
      await waitFor(() => seen.length === 1);
      await waitFor(async () => (await findJob(b.store, id)) === undefined);
      expect(seen).toEqual([{ survive: true }]);
    } finally {
      await b.close();
    }
  });
});

if (STORE === 'postgres') {
  describe('durable jobs with two workers on one PostgreSQL database', () => {
    it('runs every job exactly once, shared between both workers', async () => {
      const ts = await freshStore();
      const t = await makeApp({ testStore: ts });
      const otherStore = await openSameSchema(ts.schema!);
      try {
        const a = t.running.jobs;
        const b = new JobQueue(otherStore, t.clock);
        const ran: Array<{ worker: string; id: string }> = [];
        for (const [name, q] of [['a', a], ['b', b]] as const) {
          q.register('test.shared', async ({ job }) => {
            ran.push({ worker: name, id: job.id });
            await sleep(3);
          });
        }
        const ids = await t.store.db.transaction().execute(async (trx) => {
          const out: string[] = [];
          for (let i = 0; i < 60; i += 1) {
            out.push(await a.schedule(trx, { platformId: null, kind: 'test.shared', payload: { i }, runAtMs: t.clock.nowMs(), at: iso(t.clock.nowMs()) }));
          }
          return out;
        });

        const [na, nb] = await Promise.all([a.runDue(), b.runDue()]);
        expect(na + nb).toBe(60);
        expect(ran).toHaveLength(60);
        expect(new Set(ran.map((r) => r.id))).toEqual(new Set(ids));
        expect(ran.filter((r) => r.worker === 'a').length).toBe(na);
        expect(na).toBeGreaterThan(0);
        expect(nb).toBeGreaterThan(0);
        const statuses = await t.store.db.selectFrom('jobs').select(['status', 'attempts']).where('kind', '=', 'test.shared').execute();
        expect(statuses).toEqual([]); // each ran once and was deleted with its commit
      } finally {
        await otherStore.close();
        await t.close();
      }
    });
  });
}

describe.runIf(STORE === 'postgres')('durable jobs on PostgreSQL: first in line for the pool (db/priority-pool.ts)', () => {
  it('a job’s transaction takes the connection before the HTTP requests that were waiting for it', async () => {
    // Settlement must keep pace under load: a job does not queue behind every waiting request.
    const ts = await freshStore();
    await ts.store.close();
    // Two connections (the server's start needs both at once); the test holds one throughout.
    const one = await openStore({ kind: 'postgres', location: process.env.TEST_DATABASE_URL! }, { schema: ts.schema!, poolSize: 2 });
    const t = await makeApp({ testStore: { store: one, drop: () => ts.drop() } });
    try {
      const jobs = t.running.jobs;
      const platformId = t.running.bootstrap.platform.id;
      // Statements the store ran from the job's start (or from the connection's release) to its handler.
      let from = 0;
      const seen: number[] = [];
      jobs.register('test.priority', async () => void seen.push(t.store.statements() - from));
      const schedule = () => jobs.schedule(t.store.db, { platformId, kind: 'test.priority', payload: null, runAtMs: t.clock.nowMs(), at: iso(t.clock.nowMs()) });
      expect((await t.call('GET', '/customers')).statusCode).toBe(200);

      // Alone: the job's own statements before its handler.
      await schedule();
      from = t.store.statements();
      expect(await jobs.runDue()).toBe(1);
      const alone = seen[0]!;

      // Behind three requests waiting for a connection; then one connection comes free.
      await schedule();
      const hold = () => {
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        const done = t.store.db.transaction().execute(async (trx) => {
          await sql`select 1`.execute(trx);
          await gate;
        });
        return { release, done };
      };
      const holders = [hold(), hold()];
      await sleep(20);
      const answered: number[] = [];
      const requests = [1, 2, 3].map((i) => t.call('GET', '/customers').then((res) => (answered.push(i), res.statusCode)));
      await sleep(50);
      const ran = jobs.runDue();
      await sleep(20);
      expect(answered).toEqual([]);
      from = t.store.statements();
      holders[0]!.release();
      expect(await ran).toBe(1);
      holders[1]!.release();
      expect(await Promise.all(requests)).toEqual([200, 200, 200]);
      await Promise.all(holders.map((h) => h.done));
      // The holder's commit, then the job's transaction: no request's statement in between.
      expect(seen[1]).toBe(alone + 1);
    } finally {
      await t.close();
    }
  });
});
