import { verify as nodeVerify } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from '../../src/index.js';
import { iso, ManualClock } from '../../src/kernel/clock.js';
import { openStore } from '../../src/kernel/db/connect.js';
import { emitEvent } from '../../src/kernel/events.js';
import { MAX_ATTEMPTS, RETRY_SCHEDULE_MS } from '../../src/api/webhooks/service.js';
import { ADMIN_KEY, advanceAndDeliver, envelope, freshStore, makeApp, openSameSchema, STORE, type TestApp, type TestStore } from '../helpers.js';
import { type Received, Receiver } from '../webhook-receiver.js';

// Webhook delivery against a real HTTP receiver on a local port.

interface DeliveryView {
  id: string;
  eventId: string;
  type: string;
  resourceId: string;
  status: string;
  attempts: number;
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: string | null;
  attemptLog: Array<{ attempt: number; startedAt: string; statusCode: number | null; error: string | null; latencyMs: number; responseBody: string | null; url: string }>;
}

const admin = { authorization: `Bearer ${ADMIN_KEY}` };

async function setEndpoint(t: TestApp, url: string | null): Promise<void> {
  const res = await t.call('PATCH', '/config', { webhookEndpoint: url });
  expect(res.statusCode).toBe(200);
}

async function emit(t: TestApp, resourceId: string, type = 'CUSTOMER.UPDATE', data: unknown = { id: resourceId }): Promise<string> {
  const platformId = t.running.bootstrap.platform.id;
  const offset = Number((await t.store.db.selectFrom('platforms').select('clock_offset_ms').where('id', '=', platformId).executeTakeFirstOrThrow()).clock_offset_ms);
  return t.store.db.transaction().execute((trx) => emitEvent(trx, platformId, iso(t.clock.nowMs() + offset), { type, resourceId, data }));
}

async function deliveries(t: TestApp, query = ''): Promise<DeliveryView[]> {
  const res = await t.app.inject({ method: 'GET', url: `/admin/platforms/${t.running.bootstrap.platform.id}/webhook-deliveries${query}`, headers: admin });
  expect(res.statusCode).toBe(200);
  return (res.json() as { data: DeliveryView[] }).data;
}

async function deliveryOf(t: TestApp, eventId: string): Promise<DeliveryView> {
  const all = await deliveries(t, '?limit=100');
  const d = all.find((x) => x.eventId === eventId);
  if (!d) throw new Error(`no delivery for ${eventId}`);
  return d;
}

const advance = advanceAndDeliver;

describe(`webhooks (${STORE})`, () => {
  let t: TestApp;
  let rx: Receiver;
  beforeEach(async () => {
    t = await makeApp();
    rx = await new Receiver().start();
  });
  afterEach(async () => {
    await rx.stop();
    await t.close();
  });

  it('signs the exact body with the platform key; the public key is served three ways', async () => {
    await setEndpoint(t, rx.url);
    const eventId = await emit(t, 'Customer:1', 'CUSTOMER.KYC_APPROVED', { id: 'Customer:1', kycStatus: 'APPROVED' });
    // The TEST webhook of the new endpoint, then the event.
    expect(await t.running.webhooks.runDue()).toBe(2);
    expect(rx.tests).toHaveLength(1);
    expect(rx.got).toHaveLength(1);
    const r = rx.got[0]!;
    expect(r.json).toEqual({ id: eventId, type: 'CUSTOMER.KYC_APPROVED', timestamp: iso(t.clock.nowMs()), data: { id: 'Customer:1', kycStatus: 'APPROVED' } });
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['user-agent']).toBe('PaymentsService-Webhooks/2025-10-13');
    const sig = r.headers['x-service-signature'] as string;
    expect(sig).toMatch(/^[A-Za-z0-9+/]+=*$/);

    const keyRes = await t.call('GET', '/sandbox/webhooks/public-key');
    expect(keyRes.statusCode).toBe(200);
    const pem = keyRes.json().publicKey as string;
    expect(pem).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    const adminView = await t.app.inject({ method: 'GET', url: `/admin/platforms/${t.running.bootstrap.platform.id}`, headers: admin });
    expect(adminView.json().webhookPublicKey).toBe(pem);

    expect(verifyWebhookSignature(r.body, sig, pem)).toBe(true);
    expect(verifyWebhookSignature(Buffer.from(r.body), sig, pem)).toBe(true);
    expect(nodeVerify('sha256', Buffer.from(r.body), pem, Buffer.from(sig, 'base64'))).toBe(true);
    const tampered = r.body.replace('APPROVED', 'REJECTED');
    expect(verifyWebhookSignature(tampered, sig, pem)).toBe(false);
    expect(nodeVerify('sha256', Buffer.from(tampered), pem, Buffer.from(sig, 'base64'))).toBe(false);
    expect(verifyWebhookSignature(r.body, 'not-a-signature', pem)).toBe(false);
    expect(verifyWebhookSignature(r.body, sig, 'not a key')).toBe(false);

    // Another platform has another key: this signature does not verify with it.
    const other = await t.app.inject({ method: 'POST', url: '/admin/platforms', headers: { ...admin, 'content-type': 'application/json' }, payload: '{"name":"Other"}' });
    const otherPem = other.json().platform.webhookPublicKey as string;
    expect(otherPem).not.toBe(pem);
    expect(verifyWebhookSignature(r.body, sig, otherPem)).toBe(false);

    const d = await deliveryOf(t, eventId);
    expect(d.status).toBe('DELIVERED');
    expect(d.attemptLog).toHaveLength(1);
    expect(d.attemptLog[0]).toMatchObject({ attempt: 1, statusCode: 200, error: null, responseBody: 'answer 200', url: rx.url });
  });

  it('retries after a 500 on the sandbox clock; advancing the clock sends the retry', async () => {
    await setEndpoint(t, rx.url);
    let n = 0;
    rx.behave = () => (++n === 1 ? 500 : 200);
    const eventId = await emit(t, 'Customer:r');
    await t.running.webhooks.runDue();
    let d = await deliveryOf(t, eventId);
    expect(d).toMatchObject({ status: 'PENDING', attempts: 1, lastStatusCode: 500 });
    // The first retry 30 seconds after the first attempt (sandbox clock, no jitter).
    expect(Date.parse(d.nextAttemptAt!) - t.clock.nowMs()).toBe(30_000);
    // Not due yet.
    expect(await t.running.webhooks.runDue()).toBe(0);
    await advance(t, 29);
    expect(rx.got).toHaveLength(1);
    await advance(t, 1);
    expect(rx.got).toHaveLength(2);
    // The same webhook (id, type, data), stamped with the time each attempt was sent, each signed.
    const first = rx.got[0]!.json;
    const retry = rx.got[1]!.json;
    expect(first.timestamp).toBe(iso(t.clock.nowMs()));
    expect(retry).toEqual({ ...first, timestamp: iso(t.clock.nowMs() + 30_000) });
    expect(rx.got[1]!.body).toBe(rx.got[0]!.body.replace(first.timestamp, retry.timestamp));
    const pem = (await t.call('GET', '/sandbox/webhooks/public-key')).json().publicKey as string;
    for (const r of rx.got) expect(verifyWebhookSignature(r.body, r.headers['x-service-signature'] as string, pem)).toBe(true);
    d = await deliveryOf(t, eventId);
    expect(d.status).toBe('DELIVERED');
    expect(d.attemptLog.map((a) => a.statusCode)).toEqual([500, 200]);
  });

  it('a timeout is a failed attempt, retried', async () => {
    await setEndpoint(t, rx.url);
    t.running.webhooks.timeoutMs = 200;
    let n = 0;
    rx.behave = () => (++n === 1 ? 'hang' : 204);
    const eventId = await emit(t, 'Customer:t');
    await t.running.webhooks.runDue();
    let d = await deliveryOf(t, eventId);
    expect(d.status).toBe('PENDING');
    expect(d.attemptLog[0]!.statusCode).toBeNull();
    expect(d.attemptLog[0]!.error).toMatch(/timeout/);
    await advance(t, 30);
    d = await deliveryOf(t, eventId);
    expect(d.status).toBe('DELIVERED');
    expect(d.lastStatusCode).toBe(204);
  });

  it('a redirect is a failure (not followed); so is an unreachable endpoint', async () => {
    rx.behave = () => ({ status: 302, location: 'http://127.0.0.1:1/elsewhere' });
    await setEndpoint(t, rx.url);
    const e1 = await emit(t, 'Customer:x');
    await t.running.webhooks.runDue();
    expect((await deliveryOf(t, e1)).lastStatusCode).toBe(302);
    expect((await deliveryOf(t, e1)).status).toBe('PENDING');
    expect(rx.got).toHaveLength(1);
    await setEndpoint(t, 'http://127.0.0.1:1/closed');
    const e2 = await emit(t, 'Customer:y');
    await t.running.webhooks.runDue();
    const d2 = await deliveryOf(t, e2);
    expect(d2.status).toBe('PENDING');
    expect(d2.attemptLog[0]!.statusCode).toBeNull();
    expect(d2.attemptLog[0]!.error).toBeTruthy();
  });

  it('keeps event order per resource; other resources do not wait', async () => {
    await setEndpoint(t, rx.url);
    let failA = true;
    rx.behave = (r) => ((r.json.data as { id: string }).id === 'A' && failA ? 503 : 200);
    const a1 = await emit(t, 'A', 'CUSTOMER.UPDATE', { id: 'A', v: 1 });
    const a2 = await emit(t, 'A', 'CUSTOMER.UPDATE', { id: 'A', v: 2 });
    const b1 = await emit(t, 'B', 'CUSTOMER.UPDATE', { id: 'B', v: 1 });
    await t.running.webhooks.runDue();
    // A1 failed and waits for its retry; A2 waits behind it; B1 went out (beside A1: other lanes).
    expect(rx.got.map((r) => r.json.id).sort()).toEqual([a1, b1].sort());
    expect((await deliveryOf(t, a2)).attempts).toBe(0);
    failA = false;
    await advance(t, 30);
    expect(rx.got.slice(2).map((r) => r.json.id)).toEqual([a1, a2]);
    for (const id of [a1, a2, b1]) expect((await deliveryOf(t, id)).status).toBe('DELIVERED');
  });

  it('lists with filters and pages; redelivers on request', async () => {
    await setEndpoint(t, rx.url);
    const e1 = await emit(t, 'Customer:1', 'CUSTOMER.UPDATE');
    await emit(t, 'Customer:2', 'INTERNAL_ACCOUNT.STATUS_UPDATED');
    await t.running.webhooks.runDue();
    // The new endpoint's TEST webhook and the two events.
    expect((await deliveries(t)).map((d) => d.type)).toEqual(['INTERNAL_ACCOUNT.STATUS_UPDATED', 'CUSTOMER.UPDATE', 'TEST']);
    expect((await deliveries(t, '?type=CUSTOMER.UPDATE')).map((d) => d.eventId)).toEqual([e1]);
    expect((await deliveries(t, '?resourceId=Customer:2')).map((d) => d.type)).toEqual(['INTERNAL_ACCOUNT.STATUS_UPDATED']);
    expect((await deliveries(t, '?status=DELIVERED')).length).toBe(3);
    expect((await deliveries(t, '?status=FAILED')).length).toBe(0);
    const page = await t.app.inject({ method: 'GET', url: `/admin/platforms/${t.running.bootstrap.platform.id}/webhook-deliveries?limit=1`, headers: admin });
    expect(page.json()).toMatchObject({ hasMore: true, totalCount: 3 });
    const d1 = await deliveryOf(t, e1);
    const res = await t.app.inject({ method: 'POST', url: `/admin/platforms/${t.running.bootstrap.platform.id}/webhook-deliveries/${d1.id}/redeliver`, headers: admin });
    expect(res.statusCode).toBe(200);
    expect(res.json().status).toBe('PENDING');
    await t.running.webhooks.runDue();
    expect(rx.got.filter((r) => r.json.id === e1)).toHaveLength(2);
    const after = await deliveryOf(t, e1);
    expect(after.status).toBe('DELIVERED');
    expect(after.attemptLog.map((a) => a.attempt)).toEqual([1, 2]);
    const missing = await t.app.inject({ method: 'POST', url: `/admin/platforms/${t.running.bootstrap.platform.id}/webhook-deliveries/WebhookDelivery:nope/redeliver`, headers: admin });
    envelope(missing, 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.app.inject({ method: 'GET', url: '/admin/platforms/Platform:nope/webhook-deliveries', headers: admin }), 404);
    envelope(await t.app.inject({ method: 'GET', url: `/admin/platforms/${t.running.bootstrap.platform.id}/webhook-deliveries` }), 401);
  });

  it('an event without an endpoint is kept as NO_ENDPOINT and sent only on redelivery', async () => {
    const e = await emit(t, 'Customer:n');
    await t.running.webhooks.runDue();
    let d = await deliveryOf(t, e);
    expect(d.status).toBe('NO_ENDPOINT');
    const url = `/admin/platforms/${t.running.bootstrap.platform.id}/webhook-deliveries/${d.id}/redeliver`;
    envelope(await t.app.inject({ method: 'POST', url, headers: admin }), 400, 'WEBHOOK_ENDPOINT_NOT_SET');
    await setEndpoint(t, rx.url);
    await t.running.webhooks.runDue();
    expect(rx.got).toHaveLength(0);
    expect((await t.app.inject({ method: 'POST', url, headers: admin })).statusCode).toBe(200);
    await t.running.webhooks.runDue();
    expect(rx.got.map((r) => r.json.id)).toEqual([e]);
    d = await deliveryOf(t, e);
    expect(d.status).toBe('DELIVERED');
  });

  it('an event without an endpoint writes no delivery row; the list shows it as NO_ENDPOINT, filters and pages it, and redelivery writes the row', async () => {
    const platformId = t.running.bootstrap.platform.id;
    const e1 = await emit(t, 'Customer:r1');
    const e2 = await emit(t, 'Customer:r2');
    const rows = () => t.store.db.selectFrom('webhook_deliveries').select(['id', 'status']).where('platform_id', '=', platformId).where('type', '!=', 'TEST').execute();
    expect(await rows()).toEqual([]);
    const listed = await deliveries(t, '?status=NO_ENDPOINT&limit=100');
    expect(listed.map((d) => d.eventId)).toEqual([e2, e1]);
    const d1 = listed[1]!;
    expect(d1).toMatchObject({ type: 'CUSTOMER.UPDATE', resourceId: 'Customer:r1', status: 'NO_ENDPOINT', attempts: 0, nextAttemptAt: null, lastStatusCode: null, lastError: null, deliveredAt: null, attemptLog: [] });
    expect(d1.id).toBe(`WebhookDelivery:${e1.slice('Webhook:'.length)}`);
    // Filters and pages over row-less deliveries.
    expect((await deliveries(t, '?resourceId=Customer:r2')).map((d) => d.eventId)).toEqual([e2]);
    expect(await deliveries(t, '?status=PENDING')).toEqual([]);
    const page1 = await t.app.inject({ method: 'GET', url: `/admin/platforms/${platformId}/webhook-deliveries?limit=1`, headers: admin });
    expect(page1.json()).toMatchObject({ hasMore: true, totalCount: 2, data: [{ eventId: e2 }] });
    const page2 = await t.app.inject({ method: 'GET', url: `/admin/platforms/${platformId}/webhook-deliveries?limit=1&cursor=${page1.json().nextCursor}`, headers: admin });
    expect(page2.json()).toMatchObject({ hasMore: false, totalCount: 2, data: [{ eventId: e1 }] });
    // Another platform cannot name it.
    const other = await t.app.inject({ method: 'POST', url: '/admin/platforms', headers: admin, payload: { name: 'Other', skipVerificationPaperwork: true } });
    expect(other.statusCode).toBe(201);
    envelope(await t.app.inject({ method: 'POST', url: `/admin/platforms/${other.json().id}/webhook-deliveries/${d1.id}/redeliver`, headers: admin }), 404, 'REFERENCE_NOT_FOUND');
    // Redelivery writes its row, PENDING, and sends it.
    await setEndpoint(t, rx.url);
    const again = await t.app.inject({ method: 'POST', url: `/admin/platforms/${platformId}/webhook-deliveries/${d1.id}/redeliver`, headers: admin });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ id: d1.id, eventId: e1, status: 'PENDING', attempts: 0 });
    expect(await rows()).toEqual([{ id: d1.id, status: 'PENDING' }]);
    // A second redelivery before it went out updates the same row.
    expect((await t.app.inject({ method: 'POST', url: `/admin/platforms/${platformId}/webhook-deliveries/${d1.id}/redeliver`, headers: admin })).statusCode).toBe(200);
    await t.running.webhooks.runDue();
    expect(rx.got.map((r) => r.json.id)).toEqual([e1]);
    expect(await deliveryOf(t, e1)).toMatchObject({ id: d1.id, status: 'DELIVERED', attempts: 1 });
    expect((await deliveryOf(t, e2)).status).toBe('NO_ENDPOINT');
    // With the endpoint set, an event gets its row at once, named after the event.
    const e3 = await emit(t, 'Customer:r3');
    expect(await rows()).toContainEqual({ id: `WebhookDelivery:${e3.slice('Webhook:'.length)}`, status: 'PENDING' });
  });

  it('stores each payload once, packed in the event row; the webhook carries it byte for byte; rows stored as JSON before still deliver', async () => {
    const platformId = t.running.bootstrap.platform.id;
    await setEndpoint(t, rx.url);
    const data = { id: 'Transaction:p', status: 'PROCESSING', sentAmount: { amount: 1000, currency: { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 } }, note: 'é ✓ \u0000-free' };
    const e = await emit(t, 'Transaction:p', 'OUTGOING_PAYMENT.PROCESSING', data);
    const row = await t.store.db.selectFrom('events').select(['payload', 'body']).where('id', '=', e).executeTakeFirstOrThrow();
    expect(row.payload).toBe('');
    expect(row.body).not.toBeNull();
    expect(Buffer.from(row.body!).toString('latin1')).not.toContain('United States Dollar');
    // An event written before bodies existed: its JSON in `payload`, no body.
    const oldId = 'Webhook:0190aaaa-0000-7000-8000-000000000001';
    const oldBody = JSON.stringify({ id: oldId, type: 'CUSTOMER.UPDATE', timestamp: '2026-01-01T00:00:00.000Z', data: { id: 'Customer:old' } });
    await t.store.db.transaction().execute(async (trx) => {
      const ins = await trx.insertInto('events').values({ id: oldId, platform_id: platformId, type: 'CUSTOMER.UPDATE', resource_id: 'Customer:old', payload: oldBody, body: null, created_at: '2026-01-01T00:00:00.000Z' }).returning('seq').executeTakeFirstOrThrow();
      await trx.insertInto('webhook_deliveries').values({ id: 'WebhookDelivery:old', platform_id: platformId, event_id: oldId, event_seq: Number(ins.seq), type: 'CUSTOMER.UPDATE', resource_id: 'Customer:old', status: 'PENDING', attempts: 0, next_attempt_ms: 0, lease_until_ms: null, last_status_code: null, last_error: null, delivered_at: null, created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z' }).execute();
    });
    await t.running.webhooks.runDue();
    const got = new Map(rx.got.map((r) => [r.json.id as string, r.body]));
    expect(JSON.parse(got.get(e)!)).toEqual({ id: e, type: 'OUTGOING_PAYMENT.PROCESSING', timestamp: iso(t.clock.nowMs()), data });
    expect(JSON.parse(got.get(oldId)!)).toMatchObject({ id: oldId, type: 'CUSTOMER.UPDATE', data: { id: 'Customer:old' } });
  });

  it('retries on the schedule (30 s doubling to 30 min, then every 30 min) for 7 days of sandbox time, then FAILED', async () => {
    await setEndpoint(t, rx.url);
    rx.behave = () => 500;
    const e = await emit(t, 'Customer:f');
    // One advance past the whole window: the clock stops at every retry.
    await advance(t, 8 * 24 * 3600);
    const d = await deliveryOf(t, e);
    expect(d).toMatchObject({ status: 'FAILED', attempts: 341, nextAttemptAt: null, lastStatusCode: 500 });
    expect(MAX_ATTEMPTS).toBe(341);
    expect(rx.got).toHaveLength(341);
    expect(d.attemptLog.map((a) => a.attempt)).toEqual(Array.from({ length: 341 }, (_, i) => i + 1));
    const starts = d.attemptLog.map((a) => Date.parse(a.startedAt));
    const gaps = starts.slice(1).map((s, i) => s - starts[i]!);
    const min = 60_000;
    expect(gaps.slice(0, 8)).toEqual([min / 2, min, 2 * min, 4 * min, 8 * min, 16 * min, 30 * min, 30 * min]);
    expect(gaps.slice(6).every((g) => g === 30 * min)).toBe(true);
    expect(gaps).toEqual([...RETRY_SCHEDULE_MS]);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(30 * min);
    // The last attempt is within 7 days of the first: 6 d 23 h 31 min 30 s.
    expect(starts.at(-1)! - starts[0]!).toBe(603_090_000);
    expect(starts.at(-1)! - starts[0]!).toBeLessThanOrEqual(7 * 24 * 3_600_000);
    // Given up: nothing more goes out.
    await advance(t, 2 * 24 * 3600);
    expect(rx.got).toHaveLength(341);
    expect((await deliveryOf(t, e)).status).toBe('FAILED');
  }, 120_000);

  it('a 409 (duplicate) settles the delivery after one attempt, recorded as DELIVERED with its 409', async () => {
    await setEndpoint(t, rx.url);
    rx.behave = () => ({ status: 409, body: 'already processed' });
    const e = await emit(t, 'Customer:dup');
    const later = await emit(t, 'Customer:dup', 'CUSTOMER.UPDATE', { id: 'Customer:dup', v: 2 });
    await t.running.webhooks.runDue();
    const d = await deliveryOf(t, e);
    expect(d).toMatchObject({ status: 'DELIVERED', attempts: 1, nextAttemptAt: null, lastStatusCode: 409, lastError: null });
    expect(d.deliveredAt).toBe(iso(t.clock.nowMs()));
    expect(d.attemptLog).toEqual([expect.objectContaining({ attempt: 1, statusCode: 409, error: null, responseBody: 'already processed' })]);
    // Done: the resource's next event is not held up, and nothing is retried.
    expect((await deliveryOf(t, later)).status).toBe('DELIVERED');
    await advance(t, 24 * 3600);
    expect(rx.got.map((r) => r.json.id)).toEqual([e, later]);
  });

  it('an INCOMING_PAYMENT webhook of a PENDING payment is sent once; other payment webhooks are retried', async () => {
    await setEndpoint(t, rx.url);
    rx.behave = () => 500;
    const pending = await emit(t, 'Transaction:in1', 'INCOMING_PAYMENT.PENDING', { id: 'Transaction:in1', status: 'PENDING', type: 'INCOMING' });
    const completed = await emit(t, 'Transaction:in2', 'INCOMING_PAYMENT.COMPLETED', { id: 'Transaction:in2', status: 'COMPLETED', type: 'INCOMING' });
    const outgoing = await emit(t, 'Transaction:out1', 'OUTGOING_PAYMENT.PENDING', { id: 'Transaction:out1', status: 'PENDING', type: 'OUTGOING' });
    await t.running.webhooks.runDue();
    expect(await deliveryOf(t, pending)).toMatchObject({ status: 'FAILED', attempts: 1, nextAttemptAt: null, lastStatusCode: 500 });
    expect(await deliveryOf(t, completed)).toMatchObject({ status: 'PENDING', attempts: 1 });
    expect(await deliveryOf(t, outgoing)).toMatchObject({ status: 'PENDING', attempts: 1 });
    await advance(t, 30);
    expect(rx.got.filter((r) => r.json.id === pending)).toHaveLength(1);
    expect(rx.got.filter((r) => r.json.id === completed)).toHaveLength(2);
    expect(rx.got.filter((r) => r.json.id === outgoing)).toHaveLength(2);
  });

  describe('the TEST webhook of a new endpoint (PATCH /config)', () => {
    it('is committed with the change and sent by the deliverer: signed, {id, type, timestamp, data}', async () => {
      const before = await t.call('PATCH', '/config', { webhookEndpoint: rx.url });
      expect(before.statusCode).toBe(200);
      // The PATCH does not wait for the endpoint: the delivery is pending, nothing sent yet.
      const [queued] = await deliveries(t, '?type=TEST');
      expect(queued).toMatchObject({ type: 'TEST', status: 'PENDING', attempts: 0 });
      expect(rx.tests).toHaveLength(0);
      expect(await t.running.webhooks.runDue()).toBe(1);
      expect(rx.tests).toHaveLength(1);
      const r = rx.tests[0]!;
      expect(JSON.parse(r.body)).toEqual({ id: queued!.eventId, type: 'TEST', timestamp: iso(t.clock.nowMs()), data: {} });
      const pem = (await t.call('GET', '/sandbox/webhooks/public-key')).json().publicKey as string;
      expect(verifyWebhookSignature(r.body, r.headers['x-service-signature'] as string, pem)).toBe(true);
      const config = (await t.call('GET', '/config')).json() as { id: string };
      expect(await deliveryOf(t, queued!.eventId)).toMatchObject({ status: 'DELIVERED', attempts: 1, resourceId: config.id, lastStatusCode: 200 });
      expect(rx.got).toHaveLength(0);
    });

    it('is sent for each new endpoint, to that endpoint; not when unchanged, removed, or for other fields', async () => {
      const rx2 = await new Receiver().start();
      try {
        await setEndpoint(t, rx.url);
        await t.running.webhooks.runDue();
        expect(rx.tests).toHaveLength(1);
        await setEndpoint(t, rx.url);
        expect((await t.call('PATCH', '/config', { umaDomain: 'pay.example.com' })).statusCode).toBe(200);
        await t.running.webhooks.runDue();
        expect(rx.tests).toHaveLength(1);
        await setEndpoint(t, rx2.url);
        await t.running.webhooks.runDue();
        expect(rx.tests).toHaveLength(1);
        expect(rx2.tests).toHaveLength(1);
        await setEndpoint(t, null);
        await t.running.webhooks.runDue();
        expect((await deliveries(t, '?type=TEST')).map((d) => d.status)).toEqual(['DELIVERED', 'DELIVERED']);
        // Setting it again after removing it is a new endpoint.
        await setEndpoint(t, rx.url);
        await t.running.webhooks.runDue();
        expect(rx.tests).toHaveLength(2);
        expect(rx2.tests).toHaveLength(1);
        expect(rx.got).toHaveLength(0);
        expect(rx2.got).toHaveLength(0);
      } finally {
        await rx2.stop();
      }
    });

    it('is never retried: one failed attempt and the delivery is FAILED', async () => {
      rx.behaveTest = () => 503;
      await setEndpoint(t, rx.url);
      await t.running.webhooks.runDue();
      const [d] = await deliveries(t, '?type=TEST');
      expect(d).toMatchObject({ status: 'FAILED', attempts: 1, nextAttemptAt: null, lastStatusCode: 503 });
      await advance(t, 24 * 3600);
      expect(rx.tests).toHaveLength(1);
      // The platform's events are not held up by it.
      rx.behaveTest = () => 200;
      const e = await emit(t, 'Customer:after-test');
      await t.running.webhooks.runDue();
      expect((await deliveryOf(t, e)).status).toBe('DELIVERED');
    });

    it('a PATCH rejected by validation writes nothing and sends no TEST', async () => {
      envelope(await t.call('PATCH', '/config', { webhookEndpoint: rx.url, umaDomain: 'not a domain' }), 400, 'INVALID_INPUT');
      await t.running.webhooks.runDue();
      expect(await deliveries(t, '?type=TEST')).toEqual([]);
      expect(rx.tests).toHaveLength(0);
    });
  });

  // The reference's path and the alias the official SDK calls: the same operation.
  for (const path of ['/sandbox/webhooks/test', '/webhooks/test']) {
    describe(`POST ${path}`, () => {
      it('400 WEBHOOK_ENDPOINT_NOT_SET without an endpoint; 401 without credentials', async () => {
        envelope(await t.call('POST', path), 400, 'WEBHOOK_ENDPOINT_NOT_SET');
        envelope(await t.call('POST', path, undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
      });

      it('sends a signed TEST webhook now, once, and reports the answer', async () => {
        await setEndpoint(t, rx.url);
        rx.behaveTest = () => ({ status: 200, body: 'ok!' });
        const res = await t.call('POST', path);
        expect(res.statusCode).toBe(200);
        expect(res.json()).toEqual({ url: rx.url, response_status: 200, response_body: 'ok!' });
        expect(rx.tests).toHaveLength(1);
        const r = rx.tests[0]!;
        expect(JSON.parse(r.body)).toEqual({ id: expect.stringMatching(/^Webhook:[0-9a-f-]{36}$/), type: 'TEST', timestamp: iso(t.clock.nowMs()), data: {} });
        const pem = (await t.call('GET', '/sandbox/webhooks/public-key')).json().publicKey as string;
        expect(verifyWebhookSignature(r.body, r.headers['x-service-signature'] as string, pem)).toBe(true);
        // Not an event: the log holds only the TEST of the new endpoint, still waiting for the deliverer.
        expect((await deliveries(t)).map((d) => [d.type, d.status])).toEqual([['TEST', 'PENDING']]);
      });

      it('400 WEBHOOK_DELIVERY_ERROR on a non-2xx answer, with the status; not retried', async () => {
        await setEndpoint(t, rx.url);
        rx.behaveTest = () => ({ status: 500, body: 'boom' });
        const env = envelope(await t.call('POST', path), 400, 'WEBHOOK_DELIVERY_ERROR');
        expect(env.details).toMatchObject({ url: rx.url, responseStatus: 500, responseBody: 'boom' });
        rx.behaveTest = () => ({ status: 301, location: 'http://127.0.0.1:1/' });
        const env2 = envelope(await t.call('POST', path), 400, 'WEBHOOK_DELIVERY_ERROR');
        expect(env2.details).toMatchObject({ responseStatus: 301 });
        expect(rx.tests).toHaveLength(2);
      });

      it('400 WEBHOOK_DELIVERY_ERROR when unreachable or too slow, with the network error', async () => {
        await setEndpoint(t, 'http://127.0.0.1:1/closed');
        const env = envelope(await t.call('POST', path), 400, 'WEBHOOK_DELIVERY_ERROR');
        expect(typeof env.details?.error).toBe('string');
        expect(env.details?.responseStatus).toBeUndefined();
        await setEndpoint(t, rx.url);
        t.running.webhooks.timeoutMs = 200;
        rx.behaveTest = () => 'hang';
        const env2 = envelope(await t.call('POST', path), 400, 'WEBHOOK_DELIVERY_ERROR');
        expect(env2.details?.error).toMatch(/timeout/);
      });
    });
  }

  it('the OpenAPI document marks POST /webhooks/test as an extension, not the reference operation', async () => {
    const doc = (await t.call('GET', '/openapi.json', undefined, { authorization: '' })).json() as { paths: Record<string, { post?: Record<string, unknown> }> };
    expect(doc.paths['/webhooks/test']?.post?.['x-extension']).toBe(true);
    expect(doc.paths['/sandbox/webhooks/test']?.post).toBeDefined();
    expect(doc.paths['/sandbox/webhooks/test']?.post?.['x-extension']).toBeUndefined();
  });
});

describe(`webhook delivery survives a restart (${STORE})`, () => {
  it('a delivery mid-retry is sent by the next server on the same store', async () => {
    const rx = await new Receiver().start();
    let dir: string | undefined;
    let ts1: TestStore;
    if (STORE === 'postgres') {
      ts1 = await freshStore();
    } else {
      dir = mkdtempSync(join(tmpdir(), 'webhooks-'));
      ts1 = { store: await openStore({ kind: 'sqlite', location: join(dir, 'db.sqlite') }), drop: async () => {} };
    }
    const clock = new ManualClock(Date.UTC(2025, 9, 13, 12));
    const t1 = await makeApp({ testStore: ts1, clock });
    try {
      await setEndpoint(t1, rx.url);
      let n = 0;
      rx.behave = () => (++n === 1 ? 500 : 200);
      const e = await emit(t1, 'Customer:restart');
      await t1.running.webhooks.runDue();
      expect((await deliveryOf(t1, e)).status).toBe('PENDING');
      await t1.running.close();

      const store2 = STORE === 'postgres' ? await openSameSchema(ts1.schema!) : await openStore({ kind: 'sqlite', location: join(dir!, 'db.sqlite') });
      clock.advance(60_000);
      const t2 = await makeApp({ testStore: { store: store2, drop: () => ts1.drop() }, clock });
      try {
        expect(await t2.running.webhooks.runDue()).toBe(1);
        const d = await deliveryOf(t2, e);
        expect(d.status).toBe('DELIVERED');
        expect(d.attemptLog.map((a) => a.statusCode)).toEqual([500, 200]);
        expect(rx.got.map((r) => r.json.id)).toEqual([e, e]);
      } finally {
        await t2.close();
      }
    } finally {
      await rx.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe(`the delivery worker (${STORE})`, () => {
  it('runs with the server and sends new events without being asked', async () => {
    const rx = await new Receiver().start();
    const t = await makeApp({ worker: true });
    try {
      await setEndpoint(t, rx.url);
      const e = await emit(t, 'Customer:w');
      const deadline = Date.now() + 10_000;
      while (rx.got.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(rx.got.map((r) => r.json.id)).toEqual([e]);
      const deadline2 = Date.now() + 5_000;
      while ((await deliveryOf(t, e)).status !== 'DELIVERED' && Date.now() < deadline2) await new Promise((r) => setTimeout(r, 20));
      expect((await deliveryOf(t, e)).status).toBe('DELIVERED');
    } finally {
      await t.close();
      await rx.stop();
    }
  });
});

describe(`webhooks from a real area (${STORE})`, () => {
  it('a customer approved on a regulated platform is delivered as CUSTOMER.KYC_APPROVED, signed with that platform key', async () => {
    const rx = await new Receiver().start();
    const t = await makeApp();
    try {
      const res = await t.call('POST', '/admin/platforms', { name: 'Regulated bank', regulated: true }, admin);
      expect(res.statusCode).toBe(201);
      const created = res.json() as { platform: { id: string; webhookPublicKey: string }; credentials: { clientId: string; clientSecret: string } };
      const auth = { authorization: `Basic ${Buffer.from(`${created.credentials.clientId}:${created.credentials.clientSecret}`).toString('base64')}` };
      expect((await t.call('PATCH', '/config', { webhookEndpoint: rx.url }, auth)).statusCode).toBe(200);
      const c = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Ann Tester', birthDate: '1990-01-15', nationality: 'US', platformCustomerId: 'wh-1' }, auth);
      expect(c.statusCode, c.body).toBe(201);
      const customerId = (c.json() as { id: string }).id;
      await t.running.webhooks.runDue();
      const got = rx.got.filter((r) => r.json.type === 'CUSTOMER.KYC_APPROVED');
      expect(got).toHaveLength(1);
      expect(got[0]!.json.data).toMatchObject({ id: customerId, kycStatus: 'APPROVED' });
      expect(verifyWebhookSignature(got[0]!.body, got[0]!.headers['x-service-signature'] as string, created.platform.webhookPublicKey)).toBe(true);
      // The default platform's key does not verify it.
      const defaultPem = (await t.call('GET', '/sandbox/webhooks/public-key')).json().publicKey as string;
      expect(verifyWebhookSignature(got[0]!.body, got[0]!.headers['x-service-signature'] as string, defaultPem)).toBe(false);
    } finally {
      await t.close();
      await rx.stop();
    }
  });
});
