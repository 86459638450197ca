import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ManualClock, type Clock } from '../../src/kernel/clock.js';
import { emitEvent } from '../../src/kernel/events.js';
import { iso } from '../../src/kernel/clock.js';
import { startServer, type Running } from '../../src/server.js';
import { ADMIN_KEY, DEFAULT_AUTH, DEFAULT_SECRET, DEFAULT_TOKEN_ID, envelope, freshStore, makeApp, STORE, type TestApp, type TestStore, V } from '../helpers.js';
import { Receiver } from '../webhook-receiver.js';

// Where webhooks may go (docs/webhooks.md, "Where webhooks may go"): never the server's own
// listening address, private networks only when PAYMENTS_WEBHOOK_ALLOW_PRIVATE allows them
// (default on for a loopback HOST), and a non-2xx answer's body is echoed 256 bytes at most.

const PORT = 18301; // this file's listening server (the engineer's range 18300-18349)
const admin = { authorization: `Bearer ${ADMIN_KEY}` };

let receiver: Receiver;
beforeAll(async () => {
  receiver = await new Receiver().start();
});
afterAll(async () => receiver.stop());

async function endpointOf(t: { call: TestApp['call'] }): Promise<string | undefined> {
  return (await t.call('GET', '/config')).json().webhookEndpoint as string | undefined;
}

describe(`a listening server refuses its own address as a webhook endpoint (${STORE})`, () => {
  let running: Running;
  let ts: TestStore;
  const clock = new ManualClock(Date.now());
  const call: TestApp['call'] = (method, url, body, headers = {}) =>
    running.app.inject({
      method,
      url: url.startsWith('/admin') ? url : `${V}${url}`,
      headers: { authorization: DEFAULT_AUTH, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });

  beforeAll(async () => {
    ts = await freshStore();
    const config = loadConfig({ PORT: String(PORT), HOST: '127.0.0.1', PAYMENTS_API_TOKEN_ID: DEFAULT_TOKEN_ID, PAYMENTS_API_CLIENT_SECRET: DEFAULT_SECRET, PAYMENTS_ADMIN_KEY: ADMIN_KEY });
    running = await startServer(config, { clock: clock as Clock, store: ts.store, worker: false, logger: false, webhookTimeoutMs: 2_000 });
  });
  afterAll(async () => {
    await running.close();
    await ts.drop();
  });

  it('PATCH /config: 400 INVALID_INPUT naming webhookEndpoint for every spelling of host:port, nothing written', async () => {
    const own = [
      `http://127.0.0.1:${PORT}/admin/platforms`,
      `http://localhost:${PORT}/admin`,
      `http://LOCALHOST.:${PORT}/`,
      `http://app.localhost:${PORT}/`,
      `http://127.9.8.7:${PORT}/x`,
      `http://[::1]:${PORT}/`,
      `http://[::ffff:127.0.0.1]:${PORT}/`,
      `http://0.0.0.0:${PORT}/`,
      `http://2130706433:${PORT}/`, // 127.0.0.1 as one number
    ];
    for (const url of own) {
      const e = envelope(await call('PATCH', '/config', { webhookEndpoint: url, feeConfigs: [] }), 400, 'INVALID_INPUT');
      expect(e.details?.errors, url).toEqual([{ field: 'webhookEndpoint', message: expect.stringContaining("this server's own listening address") }]);
    }
    expect(await endpointOf({ call })).toBeUndefined();
    // Every invalid field at once: the refused endpoint next to a schema error.
    const both = envelope(await call('PATCH', '/config', { webhookEndpoint: `http://localhost:${PORT}/`, umaDomain: 42 }), 400, 'INVALID_INPUT');
    expect((both.details?.errors as Array<{ field: string }>).map((x) => x.field).sort()).toEqual(['umaDomain', 'webhookEndpoint']);
    // Another local port is local development: allowed under a loopback HOST.
    expect((await call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
  });

  it('the test endpoints refuse an endpoint stored before (or by another process): 400, nothing sent, no body of /admin', async () => {
    const platformId = running.bootstrap.platform.id;
    await running.store.db.updateTable('platform_configs').set({ webhook_endpoint: `http://localhost:${PORT}/admin/platforms` }).where('platform_id', '=', platformId).execute();
    for (const path of ['/sandbox/webhooks/test', '/webhooks/test']) {
      const res = await call('POST', path);
      const e = envelope(res, 400, 'WEBHOOK_DELIVERY_ERROR');
      expect(e.message).toContain("this server's own listening address");
      expect(res.body).not.toContain('Default sandbox platform');
    }
    // A queued delivery to it fails without a request.
    await running.store.db.transaction().execute((trx) => emitEvent(trx, platformId, iso(clock.nowMs()), { type: 'CUSTOMER.UPDATE', resourceId: 'Customer:x', data: {} }));
    await running.webhooks.runDue(platformId);
    const log = (await running.app.inject({ method: 'GET', url: `/admin/platforms/${platformId}/webhook-deliveries?type=CUSTOMER.UPDATE`, headers: admin })).json().data as Array<{ attemptLog: Array<{ error: string; statusCode: number | null; responseBody: string | null }> }>;
    expect(log[0]!.attemptLog[0]).toMatchObject({ statusCode: null, responseBody: null, error: expect.stringContaining("this server's own listening address") });
  });

  it('a host name is checked on the addresses it resolves to, when connecting', async () => {
    const { WebhookTargets } = await import('../../src/api/webhooks/targets.js');
    const targets = new WebhookTargets(true);
    targets.setListening({ address: '127.0.0.1', port: PORT, family: 'IPv4' });
    const resolve = (name: string, port: number) =>
      new Promise<string>((ok) => targets.lookupFor(port)(name, { all: true }, (err: Error | null, addrs?: unknown) => ok(err ? `refused: ${err.message}` : JSON.stringify(addrs))));
    expect(await resolve('localhost', PORT)).toMatch(/^refused: localhost resolves to .*own listening address/);
    expect(await resolve('localhost', PORT + 1)).toContain('127.0.0.1');
    expect(await resolve('localhost', PORT + 1)).not.toMatch(/refused/);
    const strict = new WebhookTargets(false);
    expect(await new Promise<string>((ok) => strict.lookupFor(80)('localhost', {}, (err: Error | null) => ok(err ? err.message : 'allowed')))).toMatch(/private-network address/);
  });
});

describe(`PAYMENTS_WEBHOOK_ALLOW_PRIVATE (${STORE})`, () => {
  it('defaults on for a loopback HOST, off for other interfaces; true/false override it', () => {
    expect(loadConfig({}).webhookAllowPrivate).toBe(true);
    for (const host of ['127.0.0.1', 'localhost', '::1', '127.0.0.2']) expect(loadConfig({ HOST: host }).webhookAllowPrivate, host).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.1.2.3', 'example.com']) expect(loadConfig({ HOST: host }).webhookAllowPrivate, host).toBe(false);
    expect(loadConfig({ HOST: '0.0.0.0', PAYMENTS_WEBHOOK_ALLOW_PRIVATE: 'true' }).webhookAllowPrivate).toBe(true);
    expect(loadConfig({ PAYMENTS_WEBHOOK_ALLOW_PRIVATE: 'false' }).webhookAllowPrivate).toBe(false);
    expect(() => loadConfig({ PAYMENTS_WEBHOOK_ALLOW_PRIVATE: 'maybe' })).toThrow(/PAYMENTS_WEBHOOK_ALLOW_PRIVATE must be true or false/);
  });

  it('off: private-network endpoints are refused at PATCH /config and when delivering; public ones pass', async () => {
    const t = await makeApp({ env: { PAYMENTS_WEBHOOK_ALLOW_PRIVATE: 'false' } });
    try {
      for (const url of [receiver.url, 'http://10.0.0.5/hook', 'http://192.168.1.1/', 'http://172.16.0.1/', 'http://169.254.169.254/latest/meta-data', 'http://[fd00::1]/', 'http://[fe80::1]/', 'http://100.64.0.1/', 'http://localhost/']) {
        const e = envelope(await t.call('PATCH', '/config', { webhookEndpoint: url }), 400, 'INVALID_INPUT');
        expect(e.details?.errors, url).toEqual([{ field: 'webhookEndpoint', message: expect.stringContaining('private-network address') }]);
      }
      expect(await endpointOf(t)).toBeUndefined();
      expect((await t.call('PATCH', '/config', { webhookEndpoint: 'https://hooks.example.com/x' })).statusCode).toBe(200);
      // A name stored as the endpoint is checked on what it resolves to: nothing reaches the receiver.
      const named = receiver.url.replace('127.0.0.1', 'localhost');
      await t.store.db.updateTable('platform_configs').set({ webhook_endpoint: named }).where('platform_id', '=', t.running.bootstrap.platform.id).execute();
      const before = receiver.tests.length;
      const e = envelope(await t.call('POST', '/sandbox/webhooks/test'), 400, 'WEBHOOK_DELIVERY_ERROR');
      expect(e.message).toMatch(/private-network address/);
      expect(receiver.tests.length).toBe(before);
    } finally {
      await t.close();
    }
  });
});

describe(`non-2xx answers are echoed as a short excerpt (${STORE})`, () => {
  it('the test endpoint and the delivery log keep 256 bytes of the body at most; a 2xx body as before', async () => {
    const t = await makeApp();
    const long = 'é'.repeat(3_000); // 2 bytes each: an excerpt must not cut one in two
    try {
      receiver.behaveTest = () => ({ status: 500, body: long });
      expect((await t.call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
      const e = envelope(await t.call('POST', '/sandbox/webhooks/test'), 400, 'WEBHOOK_DELIVERY_ERROR');
      const echoed = e.details?.responseBody as string;
      expect(Buffer.byteLength(echoed)).toBeLessThanOrEqual(256);
      expect(echoed).toBe('é'.repeat(128));
      receiver.behave = () => ({ status: 404, body: long });
      await t.store.db.transaction().execute((trx) => emitEvent(trx, t.running.bootstrap.platform.id, iso(t.clock.nowMs()), { type: 'CUSTOMER.UPDATE', resourceId: 'Customer:y', data: {} }));
      await t.running.webhooks.runDue();
      const log = (await t.app.inject({ method: 'GET', url: `/admin/platforms/${t.running.bootstrap.platform.id}/webhook-deliveries?type=CUSTOMER.UPDATE`, headers: admin })).json().data as Array<{ attemptLog: Array<{ statusCode: number; responseBody: string }> }>;
      expect(log[0]!.attemptLog[0]!.statusCode).toBe(404);
      expect(Buffer.byteLength(log[0]!.attemptLog[0]!.responseBody)).toBeLessThanOrEqual(256);
      receiver.behaveTest = () => ({ status: 200, body: 'x'.repeat(600) });
      expect((await t.call('POST', '/sandbox/webhooks/test')).json().response_body).toBe('x'.repeat(600));
    } finally {
      receiver.behave = () => 200;
      receiver.behaveTest = () => 200;
      await t.close();
    }
  });
});
