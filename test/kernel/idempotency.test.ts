import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimKey, completeKey, effectTransaction, IDEMPOTENCY_TTL_MS, LEASE_LAPSE_MS, releaseKey, renewLeases, requestHash, runClaimed } from '../../src/kernel/idempotency.js';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// Idempotency-Key on POST, through HTTP on POST /tokens, and the kernel functions behind it.

const DAY = 24 * 60 * 60_000;
const BODY = { name: 'idempotent token', permissions: ['VIEW'] };

describe(`Idempotency-Key over HTTP (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  const post = (key: string, body: unknown = BODY, url = '/tokens', headers: Record<string, string> = {}) =>
    t.call('POST', url, body, { 'idempotency-key': key, ...headers });

  /** What a replay of a token creation answers: the same token, without the secret shown once. */
  const replayOf = (res: { json(): unknown }): string => {
    const v = res.json() as Record<string, unknown>;
    delete v.clientSecret;
    return JSON.stringify(v);
  };

  const tokenCount = async (authorization?: string): Promise<number> => {
    const res = await t.call('GET', '/tokens', undefined, authorization ? { authorization } : {});
    expect(res.statusCode).toBe(200);
    return (res.json() as { totalCount: number }).totalCount;
  };

  function expectKeyError(res: LightMyRequestResponse): void {
    const e = envelope(res, 400, 'INVALID_INPUT');
    const errors = e.details?.errors as Array<{ field: string }>;
    expect(errors[0]!.field).toBe('Idempotency-Key');
  }

  it('replays the stored answer byte for byte for the same key and body, executing once', async () => {
    const before = await tokenCount();
    const first = await post('key-1');
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const created = first.json() as { id: string; clientSecret: string };
    expect(created.clientSecret).toEqual(expect.any(String));

    const second = await post('key-1');
    expect(second.statusCode).toBe(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.headers['content-type']).toBe(first.headers['content-type']);
    expect(second.body).toBe(replayOf(first));
    expect(second.json().id).toBe(created.id);
    // The secret is shown once: it is never stored, so the replay does not carry it.
    expect(second.json().clientSecret).toBeUndefined();
    const stored = await t.store.db.selectFrom('idempotency_keys').select('response_body').where('key', '=', 'key-1').executeTakeFirstOrThrow();
    expect(stored.response_body).not.toContain(created.clientSecret);

    // The same body with its fields in another order is the same request.
    const reordered = await t.call('POST', '/tokens', JSON.stringify({ permissions: ['VIEW'], name: BODY.name }), { 'idempotency-key': 'key-1' });
    expect(reordered.statusCode).toBe(201);
    expect(reordered.body).toBe(replayOf(first));

    expect(await tokenCount()).toBe(before + 1);
  });

  it('executes every request that carries no key', async () => {
    const before = await tokenCount();
    const a = await t.call('POST', '/tokens', BODY);
    const b = await t.call('POST', '/tokens', BODY);
    expect([a.statusCode, b.statusCode]).toEqual([201, 201]);
    expect(a.json().id).not.toBe(b.json().id);
    expect(a.headers['idempotent-replayed']).toBeUndefined();
    expect(b.headers['idempotent-replayed']).toBeUndefined();
    expect(await tokenCount()).toBe(before + 2);
  });

  it('rejects the same key with a different body, naming the key', async () => {
    const before = await tokenCount();
    expect((await post('key-2')).statusCode).toBe(201);
    const res = await post('key-2', { name: 'another name', permissions: ['VIEW'] });
    expectKeyError(res);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    expect(await tokenCount()).toBe(before + 1);
  });

  it('treats the same key on another URL as a different request', async () => {
    const before = await tokenCount();
    expect((await post('key-3')).statusCode).toBe(201);
    expectKeyError(await post('key-3', BODY, '/tokens?source=elsewhere'));
    expect(await tokenCount()).toBe(before + 1);
  });

  it('accepts a key of 255 characters and rejects one of 256', async () => {
    const before = await tokenCount();
    expectKeyError(await post('k'.repeat(256)));
    expect(await tokenCount()).toBe(before);
    expect((await post('k'.repeat(255))).statusCode).toBe(201);
    expect(await tokenCount()).toBe(before + 1);
  });

  it('runs concurrent requests with one key once and gives them all the same answer', async () => {
    const before = await tokenCount();
    const answers = await Promise.all(Array.from({ length: 5 }, () => post('key-concurrent')));
    expect(answers.map((r) => r.statusCode)).toEqual([201, 201, 201, 201, 201]);
    const replays = answers.filter((r) => r.headers['idempotent-replayed'] === 'true');
    expect(replays).toHaveLength(4);
    const original = answers.find((r) => r.headers['idempotent-replayed'] === undefined)!;
    expect(new Set(replays.map((r) => r.body))).toEqual(new Set([replayOf(original)]));
    expect(await tokenCount()).toBe(before + 1);
  });

  it('honours a key for 24 hours of the clock, then executes it again', async () => {
    const before = await tokenCount();
    const first = await post('key-ttl');
    t.clock.advance(DAY - 1_000);
    const within = await post('key-ttl');
    expect(within.headers['idempotent-replayed']).toBe('true');
    expect(within.body).toBe(replayOf(first));

    t.clock.advance(2_000); // 24 h + 1 s after the first request
    const after = await post('key-ttl');
    expect(after.statusCode).toBe(201);
    expect(after.headers['idempotent-replayed']).toBeUndefined();
    expect(after.json().id).not.toBe(first.json().id);
    expect(await tokenCount()).toBe(before + 2);

    // And the new answer is the one replayed from now on.
    const again = await post('key-ttl');
    expect(again.body).toBe(replayOf(after));
  });

  it("measures the 24 hours on the platform's sandbox clock", async () => {
    const first = await post('key-platform-time');
    const platformId = t.running.bootstrap.platform.id;
    await t.store.db.updateTable('platforms').set({ clock_offset_ms: DAY + 1_000 }).where('id', '=', platformId).execute();
    const after = await post('key-platform-time');
    expect(after.statusCode).toBe(201);
    expect(after.headers['idempotent-replayed']).toBeUndefined();
    expect(after.json().id).not.toBe(first.json().id);
  });

  it('does not let a request its schema rejects use up the key', async () => {
    const before = await tokenCount();
    const bad = await post('key-invalid', { name: '', permissions: [] });
    envelope(bad, 400, 'INVALID_INPUT');
    const fixed = await post('key-invalid', { name: 'corrected', permissions: ['VIEW'] });
    expect(fixed.statusCode).toBe(201);
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();
    expect(await tokenCount()).toBe(before + 1);
  });

  it('stores and replays a 4xx answer given by the operation itself', async () => {
    const body = {
      customerType: 'INDIVIDUAL',
      fullName: 'Terms Tester',
      endUserTermsConsent: { acceptedAt: '2025-10-01T00:00:00Z', ipAddress: '192.0.2.1', termsVersion: 'V9', acceptanceMethod: 'CHECKBOX' },
    };
    const first = await post('key-op-4xx', body, '/customers');
    envelope(first, 400, 'END_USER_TERMS_VERSION_NOT_FOUND');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const second = await post('key-op-4xx', body, '/customers');
    expect(second.statusCode).toBe(400);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body).toBe(first.body);
  });

  it('does not let an unauthenticated request claim a key', async () => {
    const denied = await post('key-auth', BODY, '/tokens', { authorization: basic('nobody', 'wrong') });
    envelope(denied, 401, 'UNAUTHORIZED');
    const res = await post('key-auth', { name: 'after the 401', permissions: ['VIEW'] });
    expect(res.statusCode).toBe(201);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
  });

  it('keeps keys per platform', async () => {
    const created = await t.call('POST', '/admin/platforms', { name: 'Other platform' }, { authorization: `Bearer ${ADMIN_KEY}` });
    expect(created.statusCode).toBe(201);
    const { clientId, clientSecret } = (created.json() as { credentials: { clientId: string; clientSecret: string } }).credentials;
    const other = basic(clientId, clientSecret);
    const otherBefore = await tokenCount(other);
    const defaultBefore = await tokenCount();

    const mine = await post('shared-key');
    expect(mine.statusCode).toBe(201);
    // A different body under the same key is no mismatch on another platform: it executes there.
    const theirs = await post('shared-key', { name: 'theirs', permissions: ['VIEW'] }, '/tokens', { authorization: other });
    expect(theirs.statusCode).toBe(201);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.json().name).toBe('theirs');

    // Each platform replays its own answer.
    expect((await post('shared-key')).body).toBe(replayOf(mine));
    expect((await post('shared-key', { name: 'theirs', permissions: ['VIEW'] }, '/tokens', { authorization: other })).body).toBe(replayOf(theirs));
    expect(await tokenCount()).toBe(defaultBefore + 1);
    expect(await tokenCount(other)).toBe(otherBefore + 1);
  });
});

describe(`idempotency kernel (${STORE})`, () => {
  let t: TestApp;
  let platformId: string;
  beforeEach(async () => {
    t = await makeApp();
    platformId = t.running.bootstrap.platform.id;
  });
  afterEach(async () => t.close());

  it('hashes method, URL and body, ignoring the order of object keys', () => {
    const h = requestHash('POST', '/v/tokens', { a: 1, b: { c: [1, { d: 2, e: 3 }] } });
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(requestHash('POST', '/v/tokens', { b: { c: [1, { e: 3, d: 2 }] }, a: 1 })).toBe(h);
    expect(requestHash('POST', '/v/other', { a: 1, b: { c: [1, { d: 2, e: 3 }] } })).not.toBe(h);
    expect(requestHash('PUT', '/v/tokens', { a: 1, b: { c: [1, { d: 2, e: 3 }] } })).not.toBe(h);
    expect(requestHash('POST', '/v/tokens', { a: 1, b: { c: [{ d: 2, e: 3 }, 1] } })).not.toBe(h);
    expect(requestHash('POST', '/v/tokens', undefined)).not.toBe(requestHash('POST', '/v/tokens', null));
  });

  it('claims, reports busy, replays, mismatches, and expires a key', async () => {
    const db = t.store.db;
    const now = t.clock.nowMs();
    const real = Date.now();
    const h = requestHash('POST', '/a', { x: 1 });
    const first = await claimKey(db, platformId, 'k', h, now, real);
    expect(first).toMatchObject({ kind: 'new', token: expect.any(String) });
    const claim = { platformId, key: 'k', token: (first as { token: string }).token };
    expect(await claimKey(db, platformId, 'k', h, now + 1, real)).toEqual({ kind: 'busy' });
    expect(await claimKey(db, platformId, 'k', requestHash('POST', '/b', { x: 1 }), now + 1, real)).toEqual({ kind: 'mismatch' });

    await completeKey(db, claim, 201, '{"ok":true}', 'application/json; charset=utf-8');
    expect(await claimKey(db, platformId, 'k', h, now + 2, real)).toEqual({ kind: 'replay', status: 201, body: '{"ok":true}', contentType: 'application/json; charset=utf-8' });
    expect(await claimKey(db, platformId, 'k', h, now + IDEMPOTENCY_TTL_MS, real)).toMatchObject({ kind: 'replay' });
    expect(await claimKey(db, platformId, 'k', h, now + IDEMPOTENCY_TTL_MS + 1, real)).toMatchObject({ kind: 'new' });
  });

  it('lets a released (5xx) claim be taken again, and a claim whose lease lapsed be taken over once', async () => {
    const db = t.store.db;
    const now = t.clock.nowMs();
    const real = Date.now();
    const h = requestHash('POST', '/a', {});
    const r = (await claimKey(db, platformId, 'released', h, now, real)) as { kind: 'new'; token: string };
    await releaseKey(db, { platformId, key: 'released', token: r.token });
    expect(await claimKey(db, platformId, 'released', h, now, real)).toMatchObject({ kind: 'new' });

    const a = (await claimKey(db, platformId, 'abandoned', h, now, real)) as { kind: 'new'; token: string };
    // A live lease is never taken over, whatever the platform's clock says.
    expect(await claimKey(db, platformId, 'abandoned', h, now + IDEMPOTENCY_TTL_MS + 1, real + LEASE_LAPSE_MS)).toEqual({ kind: 'busy' });
    await renewLeases(db, [a.token], real + LEASE_LAPSE_MS);
    expect(await claimKey(db, platformId, 'abandoned', h, now, real + 2 * LEASE_LAPSE_MS)).toEqual({ kind: 'busy' });
    // Lapsed: one retry takes it over, with a new token; the old holder's writes change nothing.
    const b = (await claimKey(db, platformId, 'abandoned', h, now, real + 2 * LEASE_LAPSE_MS + 1)) as { kind: 'new'; token: string };
    expect(b).toMatchObject({ kind: 'new' });
    expect(b.token).not.toBe(a.token);
    expect(await claimKey(db, platformId, 'abandoned', h, now, real + 2 * LEASE_LAPSE_MS + 1)).toEqual({ kind: 'busy' });
    await completeKey(db, { platformId, key: 'abandoned', token: a.token }, 200, 'stale', null);
    await releaseKey(db, { platformId, key: 'abandoned', token: a.token });
    expect(await claimKey(db, platformId, 'abandoned', h, now, real + 2 * LEASE_LAPSE_MS + 2)).toEqual({ kind: 'busy' });

    // A completed key is not released by releaseKey.
    await completeKey(db, { platformId, key: 'abandoned', token: b.token }, 200, 'done', null);
    await releaseKey(db, { platformId, key: 'abandoned', token: b.token });
    expect(await claimKey(db, platformId, 'abandoned', h, now, real + 10 * LEASE_LAPSE_MS)).toMatchObject({ kind: 'replay', status: 200, body: 'done', contentType: null });
  });

  it('rolls back the effect of a holder whose claim was taken over, and stores the answer with the effect of the live one', async () => {
    const db = t.store.db;
    const now = t.clock.nowMs();
    const real = Date.now();
    const h = requestHash('POST', '/fenced', {});
    const stale = (await claimKey(db, platformId, 'fenced', h, now, real)) as { kind: 'new'; token: string };
    const live = (await claimKey(db, platformId, 'fenced', h, now, real + LEASE_LAPSE_MS + 1)) as { kind: 'new'; token: string };
    expect(live).toMatchObject({ kind: 'new' });
    const ctx = (token: string) => ({ platformId, key: 'fenced', token, answered: false, render: (v: unknown) => ({ status: 201, body: JSON.stringify(v), contentType: 'application/json' }) });
    // The effect: a row written in the same transaction (another key stands in for a payment).
    const effect = (name: string) => async (trx: Parameters<Parameters<typeof effectTransaction>[1]>[0]) => {
      await trx.insertInto('idempotency_keys').values({ platform_id: platformId, key: name, request_hash: 'x', state: 'done', response_status: 200, response_body: '', response_content_type: null, created_ms: now, claim_token: null, lease_ms: null }).execute();
      return { effect: name };
    };
    await expect(runClaimed(ctx(stale.token), () => effectTransaction(db, effect('stale-effect')))).rejects.toMatchObject({ status: 409, code: 'CONFLICT' });
    expect(await db.selectFrom('idempotency_keys').select('key').where('key', '=', 'stale-effect').executeTakeFirst()).toBeUndefined();

    expect(await runClaimed(ctx(live.token), () => effectTransaction(db, effect('live-effect')))).toEqual({ effect: 'live-effect' });
    expect(await db.selectFrom('idempotency_keys').select('key').where('key', '=', 'live-effect').executeTakeFirst()).toBeDefined();
    expect(await claimKey(db, platformId, 'fenced', h, now, real + 10 * LEASE_LAPSE_MS)).toEqual({ kind: 'replay', status: 201, body: '{"effect":"live-effect"}', contentType: 'application/json' });
  });
});
