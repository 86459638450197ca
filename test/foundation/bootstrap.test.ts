import { afterEach, describe, expect, it } from 'vitest';
import { basic, DEFAULT_SECRET, DEFAULT_TOKEN_ID, envelope, makeApp, STORE, storeSeries, type StoreSeries, type TestApp } from '../helpers.js';

// ensureDefaultPlatform: the default platform and its credentials across restarts on one store.


const NO_PAIR = { PAYMENTS_API_TOKEN_ID: undefined, PAYMENTS_API_CLIENT_SECRET: undefined };

describe(`default platform bootstrap (${STORE})`, () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  async function start(s: StoreSeries, env: Record<string, string | undefined>): Promise<TestApp> {
    const t = await makeApp({ env, testStore: await s.open() });
    cleanup.push(() => t.close());
    return t;
  }
  async function stop(t: TestApp): Promise<void> {
    await t.close();
  }
  async function newSeries(): Promise<StoreSeries> {
    const s = await storeSeries();
    cleanup.unshift(() => s.drop());
    return s;
  }
  const status = async (t: TestApp, auth: string) => (await t.call('GET', '/config', undefined, { authorization: auth })).statusCode;

  it('generates a pair on first start only, and the pair keeps working', async () => {
    const s = await newSeries();
    const first = await start(s, NO_PAIR);
    const gen = first.running.bootstrap.generated;
    expect(gen).toBeDefined();
    expect(gen!.clientId).toMatch(/^[0-9a-f]{32}$/);
    expect(gen!.clientSecret).toMatch(/^[0-9a-f]{48}$/);
    expect(first.running.bootstrap.platform.isDefault).toBe(true);
    const auth = basic(gen!.clientId, gen!.clientSecret);
    expect(await status(first, auth)).toBe(200);
    // The test harness's default pair was never configured here.
    envelope(await first.call('GET', '/config', undefined, { authorization: basic(DEFAULT_TOKEN_ID, DEFAULT_SECRET) }), 401, 'UNAUTHORIZED');
    const tokens = (await first.call('GET', '/tokens', undefined, { authorization: auth })).json() as { data: Array<{ clientId: string; permissions: string[] }>; totalCount: number };
    expect(tokens.totalCount).toBe(1);
    expect(tokens.data[0]!.clientId).toBe(gen!.clientId);
    expect(tokens.data[0]!.permissions).toEqual(['VIEW', 'TRANSACT', 'MANAGE']);
    const platformId = first.running.bootstrap.platform.id;
    await stop(first);

    const second = await start(s, NO_PAIR);
    expect(second.running.bootstrap.generated).toBeUndefined();
    expect(second.running.bootstrap.platform.id).toBe(platformId);
    expect(await status(second, auth)).toBe(200);
    expect((await second.call('GET', '/tokens', undefined, { authorization: auth })).json().totalCount).toBe(1);
  });

  it('stores the configured pair without generating one', async () => {
    const s = await newSeries();
    const t = await start(s, { PAYMENTS_API_TOKEN_ID: 'ops-token', PAYMENTS_API_CLIENT_SECRET: 'ops-secret-1' });
    expect(t.running.bootstrap.generated).toBeUndefined();
    expect(t.running.bootstrap.platform.isDefault).toBe(true);
    expect(await status(t, basic('ops-token', 'ops-secret-1'))).toBe(200);
    const list = (await t.call('GET', '/tokens', undefined, { authorization: basic('ops-token', 'ops-secret-1') })).json() as { data: Array<{ id: string; clientId: string }> };
    expect(list.data.map((x) => x.clientId)).toEqual(['ops-token']);
    // Also by its Token: id.
    expect(await status(t, basic(list.data[0]!.id, 'ops-secret-1'))).toBe(200);
  });

  it('takes a changed secret on the next start and refuses the old one', async () => {
    const s = await newSeries();
    const first = await start(s, { PAYMENTS_API_TOKEN_ID: 'ops-token', PAYMENTS_API_CLIENT_SECRET: 'old-secret' });
    expect(await status(first, basic('ops-token', 'old-secret'))).toBe(200);
    const platformId = first.running.bootstrap.platform.id;
    await stop(first);

    const second = await start(s, { PAYMENTS_API_TOKEN_ID: 'ops-token', PAYMENTS_API_CLIENT_SECRET: 'new-secret' });
    expect(second.running.bootstrap.generated).toBeUndefined();
    expect(second.running.bootstrap.platform.id).toBe(platformId);
    expect(await status(second, basic('ops-token', 'new-secret'))).toBe(200);
    const e = envelope(await second.call('GET', '/config', undefined, { authorization: basic('ops-token', 'old-secret') }), 401, 'UNAUTHORIZED');
    expect(e.details?.reason).toBe('Unknown API token id or wrong client secret');
    // Still one token: the secret was replaced, not a second token added.
    expect((await second.call('GET', '/tokens', undefined, { authorization: basic('ops-token', 'new-secret') })).json().totalCount).toBe(1);
  });

  it('keeps the configured pair when a later start has none, and adds a configured pair to a generated one', async () => {
    const s = await newSeries();
    const first = await start(s, NO_PAIR);
    const gen = first.running.bootstrap.generated!;
    await stop(first);
    const second = await start(s, { PAYMENTS_API_TOKEN_ID: 'ops-token', PAYMENTS_API_CLIENT_SECRET: 'ops-secret' });
    expect(second.running.bootstrap.generated).toBeUndefined();
    expect(await status(second, basic('ops-token', 'ops-secret'))).toBe(200);
    expect(await status(second, basic(gen.clientId, gen.clientSecret))).toBe(200);
    await stop(second);
    const third = await start(s, NO_PAIR);
    expect(third.running.bootstrap.generated).toBeUndefined();
    expect(await status(third, basic('ops-token', 'ops-secret'))).toBe(200);
  });

  it('starts a second store while another store of the same database is open', async () => {
    // On PostgreSQL each test store is a schema of one database: the second one must get its
    // own migration tables rather than take the first one's for its own.
    const one = await start(await newSeries(), {});
    const two = await start(await newSeries(), {});
    expect(await status(one, basic(DEFAULT_TOKEN_ID, DEFAULT_SECRET))).toBe(200);
    expect(await status(two, basic(DEFAULT_TOKEN_ID, DEFAULT_SECRET))).toBe(200);
    expect(one.running.bootstrap.platform.id).not.toBe(two.running.bootstrap.platform.id);
  });

  it('restores a deleted configured token on the next start', async () => {
    const s = await newSeries();
    const env = { PAYMENTS_API_TOKEN_ID: 'ops-token', PAYMENTS_API_CLIENT_SECRET: 'ops-secret' };
    const first = await start(s, env);
    const auth = basic('ops-token', 'ops-secret');
    const id = ((await first.call('GET', '/tokens', undefined, { authorization: auth })).json() as { data: Array<{ id: string }> }).data[0]!.id;
    expect((await first.call('DELETE', `/tokens/${id}`, undefined, { authorization: auth })).statusCode).toBe(204);
    envelope(await first.call('GET', '/config', undefined, { authorization: auth }), 401, 'UNAUTHORIZED');
    await stop(first);
    const second = await start(s, env);
    expect(await status(second, auth)).toBe(200);
  });
});
