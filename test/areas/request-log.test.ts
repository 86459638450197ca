import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { iso } from '../../src/kernel/clock.js';
import { REQUEST_LOG_SIZE } from '../../src/sandbox/request-log/service.js';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { otherPlatformAuth } from '../money-helpers.js';

// The request log (GET /sandbox/requests), GET /metrics and GET /readyz.

interface Entry {
  id: number;
  at: string;
  source: 'api' | 'dashboard';
  method: string;
  path: string;
  route: string | null;
  status: number;
  latencyMs: number;
  idempotencyKey: string | null;
  replayed: boolean;
  requestBody: unknown;
  responseBody: unknown;
  truncated: boolean;
}

async function log(t: TestApp, query = '', headers?: Record<string, string>): Promise<Entry[]> {
  const res = await t.call('GET', `/sandbox/requests${query}`, undefined, headers);
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { data: Entry[] }).data;
}

describe(`request log (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  it('keeps method, path, status, latency, bodies, the Idempotency-Key and the replay flag, newest first', async () => {
    const body = { customerType: 'INDIVIDUAL', fullName: 'Logged Person', currencies: ['USD'] };
    const first = await t.call('POST', '/customers', body, { 'idempotency-key': 'log-key-1' });
    expect(first.statusCode, first.body).toBe(201);
    const again = await t.call('POST', '/customers', body, { 'idempotency-key': 'log-key-1' });
    expect(again.headers['idempotent-replayed']).toBe('true');
    await t.call('GET', '/customers/Customer:nope');
    const [notFound, replay, original] = await log(t);
    expect(original).toMatchObject({ method: 'POST', path: '/2025-10-13/customers', route: '/2025-10-13/customers', status: 201, idempotencyKey: 'log-key-1', replayed: false, requestBody: body, truncated: false });
    expect((original!.responseBody as { id: string }).id).toBe(first.json().id);
    expect(original!.latencyMs).toBeGreaterThanOrEqual(0);
    expect(original!.at).toBe(iso(t.clock.nowMs()));
    expect(replay).toMatchObject({ status: 201, idempotencyKey: 'log-key-1', replayed: true });
    expect(notFound).toMatchObject({ method: 'GET', status: 404, idempotencyKey: null, replayed: false, requestBody: null });
    expect((notFound!.responseBody as { code: string }).code).toBe('USER_NOT_FOUND');
    expect(notFound!.id).toBeGreaterThan(replay!.id);
  });

  it('redacts secrets in request and response bodies', async () => {
    const res = await t.call('POST', '/tokens', { name: 'logged token', permissions: ['VIEW'] });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().clientSecret).toEqual(expect.any(String));
    const [entry] = await log(t);
    const answer = entry!.responseBody as Record<string, unknown>;
    expect(answer.clientSecret).toBe('[REDACTED]');
    expect(answer.name).toBe('logged token');
    expect(JSON.stringify(entry)).not.toContain(res.json().clientSecret as string);
  });

  it('is per platform, follows with ?after=, caps at the last N, and is emptied by a reset', async () => {
    const other = await otherPlatformAuth(t);
    await t.call('GET', '/config', undefined, other);
    await t.call('GET', '/config');
    const mine = await log(t);
    expect(mine.map((e) => e.path)).toEqual(['/2025-10-13/config']);
    const theirs = await log(t, '', other);
    expect(theirs.map((e) => e.path)).toEqual(['/2025-10-13/config']);
    // Following: only what came after.
    await t.call('GET', '/sandbox/clock');
    expect((await log(t, `?after=${mine[0]!.id}`)).map((e) => e.path)).toEqual(['/2025-10-13/sandbox/clock']);
    expect((await log(t, '?limit=1')).length).toBe(1);
    envelope(await t.call('GET', '/sandbox/requests?limit=0'), 400, 'INVALID_INPUT');
    envelope(await t.call('GET', `/sandbox/requests?limit=${REQUEST_LOG_SIZE + 1}`), 400, 'INVALID_INPUT');
    for (let i = 0; i < REQUEST_LOG_SIZE + 5; i++) await t.call('GET', '/sandbox/clock');
    expect((await log(t)).length).toBe(REQUEST_LOG_SIZE);
    // A reset empties this platform's log only (the reset itself is then its first entry).
    await t.call('POST', '/sandbox/reset');
    expect((await log(t)).map((e) => e.route)).toEqual(['/2025-10-13/sandbox/reset']);
    expect((await log(t, '', other)).length).toBe(1);
  });
});

describe(`request log: the dashboard's own requests (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());
  const DASHBOARD = { 'x-payments-dashboard': '1' };

  it('marks them source "dashboard"; its reads are hidden unless includeDashboardReads=true, its writes are listed', async () => {
    await t.call('GET', '/customers?limit=3');
    await t.call('GET', '/customers?limit=1', undefined, DASHBOARD);
    await t.call('GET', '/sandbox/clock', undefined, DASHBOARD);
    const write = await t.call('PATCH', '/config', { umaDomain: 'dashboard-made.example.com' }, DASHBOARD);
    expect(write.statusCode, write.body).toBe(200);
    const shown = await log(t);
    expect(shown.map((e) => [e.source, e.method, e.path])).toEqual([
      ['dashboard', 'PATCH', '/2025-10-13/config'],
      ['api', 'GET', '/2025-10-13/customers?limit=3'],
    ]);
    const all = await log(t, '?includeDashboardReads=true');
    expect(all.map((e) => [e.source, e.method, e.path])).toEqual([
      ['dashboard', 'PATCH', '/2025-10-13/config'],
      ['dashboard', 'GET', '/2025-10-13/sandbox/clock'],
      ['dashboard', 'GET', '/2025-10-13/customers?limit=1'],
      ['api', 'GET', '/2025-10-13/customers?limit=3'],
    ]);
    // Following with ?after= works across both.
    expect((await log(t, `?includeDashboardReads=true&after=${all[2]!.id}`)).map((e) => e.path)).toEqual(['/2025-10-13/config', '/2025-10-13/sandbox/clock']);
    // Another header value is not the dashboard's.
    await t.call('GET', '/sandbox/clock', undefined, { 'x-payments-dashboard': 'yes' });
    expect((await log(t, '?limit=1'))[0]).toMatchObject({ source: 'api', path: '/2025-10-13/sandbox/clock' });
    envelope(await t.call('GET', '/sandbox/requests?includeDashboardReads=maybe'), 400, 'INVALID_INPUT');
  });

  it('its reads never push the platform\'s calls out of the log; a reset empties both', async () => {
    await t.call('GET', '/customers?limit=5');
    for (let i = 0; i < REQUEST_LOG_SIZE + 20; i++) await t.call('GET', '/sandbox/clock', undefined, DASHBOARD);
    expect((await log(t)).map((e) => e.path)).toEqual(['/2025-10-13/customers?limit=5']);
    const all = await log(t, '?includeDashboardReads=true');
    expect(all.length).toBe(REQUEST_LOG_SIZE);
    expect(all.every((e) => e.source === 'dashboard')).toBe(true);
    await t.call('POST', '/sandbox/reset');
    expect((await log(t, '?includeDashboardReads=true')).map((e) => e.route)).toEqual(['/2025-10-13/sandbox/reset']);
  });
});

describe(`metrics and readiness (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  it('GET /metrics: Prometheus text with request counts and latencies per route, job queue depth and webhook backlog', async () => {
    await t.call('GET', '/config');
    await t.call('GET', '/config');
    await t.call('GET', '/customers/Customer:nope');
    await t.call('PATCH', '/config', { webhookEndpoint: 'https://127.0.0.1:1/hook' });
    await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Metric Person', currencies: ['USD'] });
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = res.body;
    expect(text).toContain('# TYPE payments_http_requests_total counter');
    expect(text).toContain('payments_http_requests_total{method="GET",route="/2025-10-13/config",status="200"} 2');
    expect(text).toContain('payments_http_requests_total{method="GET",route="/2025-10-13/customers/:customerId",status="404"} 1');
    expect(text).toContain('# TYPE payments_http_request_duration_seconds histogram');
    expect(text).toMatch(/payments_http_request_duration_seconds_bucket\{method="GET",route="\/2025-10-13\/config",le="\+Inf"\} 2/);
    expect(text).toMatch(/payments_http_request_duration_seconds_count\{method="GET",route="\/2025-10-13\/config"\} 2/);
    expect(text).toMatch(/^payments_job_queue_depth \d+$/m);
    const backlog = /^payments_webhook_backlog (\d+)$/m.exec(text);
    expect(Number(backlog![1])).toBeGreaterThan(0);
    expect(text).toMatch(/^payments_platforms 1$/m);
  });

  it('GET /readyz answers ready with its checks, distinct from /healthz', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ status: 'ready', checks: { store: 'ok', migrations: 'ok', platforms: 'ok' } });
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz is 503 when a migration is missing', async () => {
    const names = await t.store.db.selectFrom('kysely_migration' as never).select('name' as never).execute();
    await t.store.db.deleteFrom('kysely_migration' as never).where('name' as never, '=', (names[0] as { name: string }).name as never).execute();
    const res = await t.app.inject({ method: 'GET', url: '/readyz' });
    envelope(res, 503, 'SERVICE_UNAVAILABLE');
  });
});
