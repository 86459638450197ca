import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { iso } from '../../src/kernel/clock.js';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// The sandbox clock: GET /sandbox/clock and POST /sandbox/clock/advance.

describe(`sandbox clock (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  it('reads real time plus the platform offset', async () => {
    const res = await t.call('GET', '/sandbox/clock');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ now: iso(t.clock.nowMs()), offsetSeconds: 0 });
  });

  it('advance moves GET /sandbox/clock and the admin view', async () => {
    const res = await t.call('POST', '/sandbox/clock/advance', { seconds: 3600 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ now: iso(t.clock.nowMs() + 3_600_000), offsetSeconds: 3600 });
    await t.call('POST', '/sandbox/clock/advance', { seconds: 60 });
    const read = await t.call('GET', '/sandbox/clock');
    expect(read.json()).toEqual({ now: iso(t.clock.nowMs() + 3_660_000), offsetSeconds: 3660 });
    const admin = await t.app.inject({ method: 'GET', url: `/admin/platforms/${t.running.bootstrap.platform.id}`, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    expect(admin.json().sandboxClockOffsetMs).toBe(3_660_000);
  });

  it('runs a job that became due during the advance, before answering, at its own due time', async () => {
    const platformId = t.running.bootstrap.platform.id;
    const ran: Array<{ nowMs: number; payload: unknown }> = [];
    t.running.jobs.register('test.clock', async ({ trx, job, nowMs }) => {
      ran.push({ nowMs, payload: job.payload });
      await trx.updateTable('platforms').set({ name: 'touched by the job' }).where('id', '=', platformId).execute();
    });
    const start = t.clock.nowMs();
    await t.running.jobs.schedule(t.store.db, { platformId, kind: 'test.clock', payload: { n: 1 }, runAtMs: start + 6 * 60_000, at: iso(start) });
    // Not due yet: 5 minutes is not enough.
    await t.call('POST', '/sandbox/clock/advance', { seconds: 300 });
    expect(ran).toHaveLength(0);
    const res = await t.call('POST', '/sandbox/clock/advance', { seconds: 61 });
    expect(res.statusCode).toBe(200);
    // It ran inside the advance call (no worker in tests), the clock stopped at its due time
    // (plus the real milliseconds the test took); the advance then went on to the end.
    expect(ran).toHaveLength(1);
    expect(ran[0]!.payload).toEqual({ n: 1 });
    expect(ran[0]!.nowMs).toBeGreaterThanOrEqual(start + 360_000);
    expect(ran[0]!.nowMs).toBeLessThan(start + 361_000);
    expect((await t.call('GET', '/sandbox/clock')).json().offsetSeconds).toBe(361);
    // It ran: its row went with the commit of what it wrote.
    expect(await t.store.db.selectFrom('jobs').select(['status']).where('kind', '=', 'test.clock').execute()).toEqual([]);
    const admin = await t.app.inject({ method: 'GET', url: `/admin/platforms/${platformId}`, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    expect(admin.json().name).toBe('touched by the job');
  });

  it.each([[0], [-5], [1.5], ['10'], [null]])('400 for seconds = %j', async (seconds) => {
    const res = await t.call('POST', '/sandbox/clock/advance', { seconds });
    envelope(res, 400);
    expect((await t.call('GET', '/sandbox/clock')).json().offsetSeconds).toBe(0);
  });

  it('400 without seconds', async () => {
    envelope(await t.call('POST', '/sandbox/clock/advance', {}), 400);
  });

  it('needs MANAGE to advance; VIEW reads', async () => {
    const created = await t.call('POST', '/tokens', { name: 'viewer', permissions: ['VIEW'] });
    expect(created.statusCode).toBe(201);
    const c = created.json() as { clientId: string; clientSecret: string };
    const auth = { authorization: basic(c.clientId, c.clientSecret) };
    expect((await t.call('GET', '/sandbox/clock', undefined, auth)).statusCode).toBe(200);
    envelope(await t.call('POST', '/sandbox/clock/advance', { seconds: 10 }, auth), 403, 'FORBIDDEN');
  });

  it("does not move other platforms' clocks", async () => {
    const other = await t.app.inject({
      method: 'POST',
      url: '/admin/platforms',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'Other' }),
    });
    expect(other.statusCode).toBe(201);
    const cred = other.json().credentials as { clientId: string; clientSecret: string };
    const otherAuth = { authorization: basic(cred.clientId, cred.clientSecret) };
    await t.call('POST', '/sandbox/clock/advance', { seconds: 86_400 });
    expect((await t.call('GET', '/sandbox/clock', undefined, otherAuth)).json()).toEqual({ now: iso(t.clock.nowMs()), offsetSeconds: 0 });
    await t.call('POST', '/sandbox/clock/advance', { seconds: 5 }, otherAuth);
    expect((await t.call('GET', '/sandbox/clock')).json().offsetSeconds).toBe(86_400);
    expect((await t.call('GET', '/sandbox/clock', undefined, otherAuth)).json().offsetSeconds).toBe(5);
  });
});
