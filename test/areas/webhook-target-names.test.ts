import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Resolver } from '../../src/api/webhooks/targets.js';
import { loadConfig } from '../../src/config.js';
import { type Clock, ManualClock } from '../../src/kernel/clock.js';
import { startServer, type Running } from '../../src/server.js';
import { ADMIN_KEY, DEFAULT_AUTH, DEFAULT_SECRET, DEFAULT_TOKEN_ID, envelope, freshStore, STORE, type TestApp, type TestStore, V } from '../helpers.js';
import { Receiver } from '../webhook-receiver.js';

// A webhook endpoint named by a host name is refused when the endpoint is set (PATCH /config)
// and before a test webhook is sent, on the addresses the name resolves to then, with the
// same 400 as the literal address (docs/webhooks.md, "Where webhooks may go"). Delivery
// checks again on every attempt (DNS rebinding). Names here resolve through a resolver the
// test gives the server (so the test does not depend on the machine's DNS), and once through
// the system's, with this machine's own host name when it resolves to loopback.

// This file's listening server (the engineer's range 18300-18349), one port per store project.
const PORT = STORE === 'postgres' ? 18312 : 18302;

/** `self.test` and `*.internal.test` → 127.0.0.1; `public.test` → a public address; anything else does not resolve. */
const resolver: Resolver = (name, callback) => {
  const n = name.toLowerCase();
  if (n === 'self.test' || n.endsWith('.internal.test')) return callback(null, [{ address: '127.0.0.1', family: 4 }]);
  if (n === 'mixed.test') return callback(null, [{ address: '93.184.215.14', family: 4 }, { address: '10.1.2.3', family: 4 }]);
  if (n === 'public.test') return callback(null, [{ address: '93.184.215.14', family: 4 }]);
  const err = new Error(`getaddrinfo ENOTFOUND ${name}`) as NodeJS.ErrnoException;
  err.code = 'ENOTFOUND';
  return callback(err, []);
};

function server(opts: { listen: boolean; allowPrivate: boolean }) {
  let running: Running;
  let ts: TestStore;
  const call: TestApp['call'] = (method, url, body, headers = {}) =>
    running.app.inject({
      method,
      url: `${V}${url}`,
      headers: { authorization: DEFAULT_AUTH, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
  return {
    call,
    get running() {
      return running;
    },
    async start() {
      ts = await freshStore();
      const config = loadConfig({
        PORT: String(PORT),
        HOST: '127.0.0.1',
        PAYMENTS_API_TOKEN_ID: DEFAULT_TOKEN_ID,
        PAYMENTS_API_CLIENT_SECRET: DEFAULT_SECRET,
        PAYMENTS_ADMIN_KEY: ADMIN_KEY,
        PAYMENTS_WEBHOOK_ALLOW_PRIVATE: String(opts.allowPrivate),
      });
      running = await startServer(config, { clock: new ManualClock(Date.now()) as Clock, store: ts.store, worker: false, logger: false, listen: opts.listen, webhookTimeoutMs: 2_000, webhookResolver: resolver });
    },
    async stop() {
      await running.close();
      await ts.drop();
    },
    async endpoint(): Promise<string | undefined> {
      return (await call('GET', '/config')).json().webhookEndpoint as string | undefined;
    },
    async store(url: string): Promise<void> {
      await running.store.db.updateTable('platform_configs').set({ webhook_endpoint: url }).where('platform_id', '=', running.bootstrap.platform.id).execute();
    },
  };
}

let receiver: Receiver;
beforeAll(async () => {
  receiver = await new Receiver().start();
});
afterAll(async () => receiver.stop());

describe(`a host name resolving to the server's own address is refused when set (${STORE})`, () => {
  const s = server({ listen: true, allowPrivate: true });
  beforeAll(async () => s.start());
  afterAll(async () => s.stop());

  it('PATCH /config: 400 INVALID_INPUT on webhookEndpoint, as for the literal address; nothing written', async () => {
    for (const url of [`http://self.test:${PORT}/admin/platforms`, `http://api.internal.test:${PORT}/`, `http://SELF.TEST:${PORT}/x`]) {
      const e = envelope(await s.call('PATCH', '/config', { webhookEndpoint: url }), 400, 'INVALID_INPUT');
      expect(e.details?.errors, url).toEqual([{ field: 'webhookEndpoint', message: expect.stringContaining("this server's own listening address") }]);
      expect(e.details?.errors, url).toEqual([{ field: 'webhookEndpoint', message: expect.stringContaining('resolves to 127.0.0.1') }]);
    }
    // The literal address gets the same answer.
    const literal = envelope(await s.call('PATCH', '/config', { webhookEndpoint: `http://127.0.0.1:${PORT}/` }), 400, 'INVALID_INPUT');
    expect(literal.details?.errors).toEqual([{ field: 'webhookEndpoint', message: expect.stringContaining("this server's own listening address") }]);
    expect(await s.endpoint()).toBeUndefined();
    // Another port on the name is local development: allowed under a loopback HOST; a name that does not resolve (yet) too.
    expect((await s.call('PATCH', '/config', { webhookEndpoint: `http://self.test:${PORT + 1}/hooks` })).statusCode).toBe(200);
    expect((await s.call('PATCH', '/config', { webhookEndpoint: 'https://not-yet.example.invalid/hooks' })).statusCode).toBe(200);
  });

  it('/sandbox/webhooks/test and /webhooks/test: 400 WEBHOOK_DELIVERY_ERROR for a stored name that resolves to the server, nothing sent', async () => {
    await s.store(`http://self.test:${PORT}/admin/platforms`);
    for (const path of ['/sandbox/webhooks/test', '/webhooks/test']) {
      const res = await s.call('POST', path);
      const e = envelope(res, 400, 'WEBHOOK_DELIVERY_ERROR');
      expect(e.message).toContain("this server's own listening address");
      expect(res.body).not.toContain('Default sandbox platform');
    }
  });
});

describe(`PAYMENTS_WEBHOOK_ALLOW_PRIVATE off: a host name resolving to a private address is refused when set (${STORE})`, () => {
  const s = server({ listen: false, allowPrivate: false });
  beforeAll(async () => s.start());
  afterAll(async () => s.stop());

  it('PATCH /config: 400 for a name resolving to loopback, or to any private address among others; 200 for a public one', async () => {
    for (const url of [receiver.url.replace('127.0.0.1', 'hooks.internal.test'), 'http://self.test/hooks', 'https://mixed.test/hooks']) {
      const e = envelope(await s.call('PATCH', '/config', { webhookEndpoint: url }), 400, 'INVALID_INPUT');
      expect(e.details?.errors, url).toEqual([{ field: 'webhookEndpoint', message: expect.stringContaining('private-network address') }]);
    }
    expect(await s.endpoint()).toBeUndefined();
    expect((await s.call('PATCH', '/config', { webhookEndpoint: 'https://public.test/hooks' })).statusCode).toBe(200);
    expect(await s.endpoint()).toBe('https://public.test/hooks');
  });

  it('/sandbox/webhooks/test: 400 before anything is sent to a stored name resolving to loopback', async () => {
    await s.store(receiver.url.replace('127.0.0.1', 'hooks.internal.test'));
    const before = receiver.tests.length;
    const e = envelope(await s.call('POST', '/sandbox/webhooks/test'), 400, 'WEBHOOK_DELIVERY_ERROR');
    expect(e.message).toMatch(/resolves to 127\.0\.0\.1.*private-network address/);
    expect(receiver.tests.length).toBe(before);
  });
});

// Through the system resolver: this machine's host name, when it names a loopback address
// (as /etc/hosts usually has it: 127.0.0.1 or Debian's 127.0.1.1).
const own = hostname();
const ownLoopback = await lookup(own, { all: true }).then(
  (list) => list.length > 0 && list.every((a) => a.address.startsWith('127.')),
  () => false,
);

describe.runIf(ownLoopback)(`the system resolver: this machine's name (${STORE})`, () => {
  it(`PATCH /config refuses http://${own}/ with PAYMENTS_WEBHOOK_ALLOW_PRIVATE off`, async () => {
    const ts = await freshStore();
    const config = loadConfig({ PAYMENTS_API_TOKEN_ID: DEFAULT_TOKEN_ID, PAYMENTS_API_CLIENT_SECRET: DEFAULT_SECRET, PAYMENTS_WEBHOOK_ALLOW_PRIVATE: 'false' });
    const running = await startServer(config, { clock: new ManualClock(Date.now()) as Clock, store: ts.store, worker: false, logger: false, listen: false });
    try {
      const res = await running.app.inject({ method: 'PATCH', url: `${V}/config`, headers: { authorization: DEFAULT_AUTH, 'content-type': 'application/json' }, payload: JSON.stringify({ webhookEndpoint: `http://${own}/hooks` }) });
      const e = envelope(res, 400, 'INVALID_INPUT');
      expect(e.details?.errors).toEqual([{ field: 'webhookEndpoint', message: expect.stringContaining('private-network address') }]);
    } finally {
      await running.close();
      await ts.drop();
    }
  });
});
