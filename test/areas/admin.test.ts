import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, basic, DEFAULT_AUTH, envelope, makeApp, STORE, type TestApp, V } from '../helpers.js';

// The operator API (/admin): Bearer PAYMENTS_ADMIN_KEY; absent when the key is unset.

interface PlatformView {
  id: string;
  name: string;
  regulated: boolean;
  isDefault: boolean;
  skipVerificationPaperwork: boolean;
  sandboxClockOffsetMs: number;
  createdAt: string;
  updatedAt: string;
}
interface Created {
  platform: PlatformView;
  credentials: { tokenId: string; clientId: string; clientSecret: string };
}

const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };
const PATHS: Array<[string, string, unknown?]> = [
  ['GET', '/admin/platforms'],
  ['POST', '/admin/platforms', { name: 'x' }],
  ['GET', '/admin/platforms/Platform:01950000-0000-7000-8000-000000000000'],
  ['PATCH', '/admin/platforms/Platform:01950000-0000-7000-8000-000000000000', { name: 'y' }],
];

describe(`operator API disabled (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp({ env: { PAYMENTS_ADMIN_KEY: undefined } });
  });
  afterAll(async () => t.close());

  it('has no admin key in its configuration', () => {
    expect(t.config.adminKey).toBeUndefined();
  });

  it('answers 404 on every /admin path, with or without the key', async () => {
    for (const [method, url, body] of [...PATHS, ['GET', '/admin'], ['DELETE', '/admin/platforms']] as Array<[string, string, unknown?]>) {
      for (const headers of [ADMIN, { authorization: '' }]) {
        const res = await t.call(method as 'GET', url, body, headers);
        const e = envelope(res, 404, 'REFERENCE_NOT_FOUND');
        expect(e.message, `${method} ${url}`).toContain(url);
      }
    }
  });

  it('an empty key also disables it', async () => {
    const t2 = await makeApp({ env: { PAYMENTS_ADMIN_KEY: '' } });
    try {
      envelope(await t2.call('GET', '/admin/platforms', undefined, { authorization: 'Bearer ' }), 404, 'REFERENCE_NOT_FOUND');
    } finally {
      await t2.close();
    }
  });
});

describe(`operator API (${STORE})`, () => {
  let t: TestApp;
  let created: Created;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  it('refuses a missing, wrong or non-Bearer credential with 401', async () => {
    for (const [method, url, body] of PATHS) {
      const cases: Array<[string, RegExp]> = [
        ['', /Missing Authorization header/],
        [`Bearer ${ADMIN_KEY}x`, /Wrong operator key/],
        ['Bearer wrong', /Wrong operator key/],
        [`Basic ${Buffer.from(`admin:${ADMIN_KEY}`).toString('base64')}`, /Bearer PAYMENTS_ADMIN_KEY/],
        [DEFAULT_AUTH, /Bearer PAYMENTS_ADMIN_KEY/],
        [ADMIN_KEY, /Bearer PAYMENTS_ADMIN_KEY/],
      ];
      for (const [authorization, reason] of cases) {
        const e = envelope(await t.call(method as 'GET', url, body, { authorization }), 401, 'UNAUTHORIZED');
        expect(e.details?.reason, `${method} ${url} with "${authorization}"`).toMatch(reason);
      }
    }
    // Nothing was created by the refused POSTs.
    expect(((await t.call('GET', '/admin/platforms', undefined, ADMIN)).json() as { data: unknown[] }).data).toHaveLength(1);
  });

  it('checks the key before the body', async () => {
    envelope(await t.call('POST', '/admin/platforms', { name: '' }, { authorization: 'Bearer wrong' }), 401, 'UNAUTHORIZED');
  });

  it('creates a platform with working credentials', async () => {
    const at = new Date(t.clock.nowMs()).toISOString();
    const res = await t.call('POST', '/admin/platforms', { name: 'Acme Bank', regulated: true }, ADMIN);
    expect(res.statusCode, res.body).toBe(201);
    created = res.json() as Created;
    expect(Object.keys(created).sort()).toEqual(['credentials', 'platform']);
    expect(created.platform).toEqual({
      id: expect.stringMatching(/^Platform:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      name: 'Acme Bank',
      regulated: true,
      isDefault: false,
      skipVerificationPaperwork: false,
      invitationsConfigured: true,
      sandboxClockOffsetMs: 0,
      webhookPublicKey: expect.stringMatching(/^-----BEGIN PUBLIC KEY-----\n[\s\S]+-----END PUBLIC KEY-----\n$/),
      createdAt: at,
      updatedAt: at,
    });
    expect(Object.keys(created.credentials).sort()).toEqual(['clientId', 'clientSecret', 'tokenId']);
    expect(created.credentials.tokenId).toMatch(/^Token:/);
    const auth = basic(created.credentials.clientId, created.credentials.clientSecret);
    const cfg = await t.app.inject({ method: 'GET', url: `${V}/config`, headers: { authorization: auth } });
    expect(cfg.statusCode).toBe(200);
    expect(cfg.json().isRegulatedFinancialInstitution).toBe(true);
    // The default platform is unaffected.
    expect((await t.call('GET', '/config')).json().isRegulatedFinancialInstitution).toBe(false);
    // Its first token holds every permission and is the platform's only token.
    const tokens = (await t.call('GET', '/tokens', undefined, { authorization: auth })).json() as { data: Array<{ id: string; permissions: string[] }> };
    expect(tokens.data.map((x) => x.id)).toEqual([created.credentials.tokenId]);
    expect(tokens.data[0]!.permissions).toEqual(['VIEW', 'TRANSACT', 'MANAGE']);
    // And by the Token: id too.
    expect((await t.call('GET', '/config', undefined, { authorization: basic(created.credentials.tokenId, created.credentials.clientSecret) })).statusCode).toBe(200);
  });

  it('defaults regulated and skipVerificationPaperwork to false', async () => {
    const res = await t.call('POST', '/admin/platforms', { name: 'Plain', skipVerificationPaperwork: true }, ADMIN);
    expect(res.statusCode).toBe(201);
    const p = (res.json() as Created).platform;
    expect(p.regulated).toBe(false);
    expect(p.skipVerificationPaperwork).toBe(true);
    const c = (res.json() as Created).credentials;
    expect((await t.call('GET', '/config', undefined, { authorization: basic(c.clientId, c.clientSecret) })).json().isRegulatedFinancialInstitution).toBe(false);
  });

  it('lists every platform, the default one included', async () => {
    const res = await t.call('GET', '/admin/platforms', undefined, ADMIN);
    expect(res.statusCode).toBe(200);
    const list = (res.json() as { data: PlatformView[] }).data;
    expect(list).toHaveLength(3);
    expect(list.filter((p) => p.isDefault)).toHaveLength(1);
    expect(list.find((p) => p.id === created.platform.id)).toEqual(created.platform);
    expect(list.map((p) => p.name).sort()).toEqual(['Acme Bank', 'Default sandbox platform', 'Plain']);
    // No secrets in the list.
    expect(res.body).not.toContain(created.credentials.clientSecret);
  });

  it('gets one platform, and 404 for an unknown id', async () => {
    const res = await t.call('GET', `/admin/platforms/${created.platform.id}`, undefined, ADMIN);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(created.platform);
    for (const id of ['Platform:01950000-0000-7000-8000-000000000000', 'nope']) {
      const e = envelope(await t.call('GET', `/admin/platforms/${id}`, undefined, ADMIN), 404, 'REFERENCE_NOT_FOUND');
      expect(e.message).toContain(id);
      envelope(await t.call('PATCH', `/admin/platforms/${id}`, { name: 'z' }, ADMIN), 404, 'REFERENCE_NOT_FOUND');
    }
  });

  it('changes name and skipVerificationPaperwork', async () => {
    t.clock.advance(5_000);
    const at = new Date(t.clock.nowMs()).toISOString();
    const res = await t.call('PATCH', `/admin/platforms/${created.platform.id}`, { name: 'Acme Bank 2', skipVerificationPaperwork: true }, ADMIN);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ ...created.platform, name: 'Acme Bank 2', skipVerificationPaperwork: true, updatedAt: at });
    const got = (await t.call('GET', `/admin/platforms/${created.platform.id}`, undefined, ADMIN)).json() as PlatformView;
    expect(got).toEqual(res.json());
    // One field at a time leaves the other alone.
    const back = await t.call('PATCH', `/admin/platforms/${created.platform.id}`, { skipVerificationPaperwork: false }, ADMIN);
    expect(back.json()).toMatchObject({ name: 'Acme Bank 2', skipVerificationPaperwork: false, regulated: true });
    const renamed = await t.call('PATCH', `/admin/platforms/${created.platform.id}`, { name: 'Acme Bank' }, ADMIN);
    expect(renamed.json()).toMatchObject({ name: 'Acme Bank', skipVerificationPaperwork: false });
    const empty = await t.call('PATCH', `/admin/platforms/${created.platform.id}`, {}, ADMIN);
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toMatchObject({ name: 'Acme Bank', skipVerificationPaperwork: false, regulated: true });
  });

  it('refuses to change regulated, naming the field', async () => {
    for (const regulated of [false, true]) {
      const e = envelope(await t.call('PATCH', `/admin/platforms/${created.platform.id}`, { regulated, name: 'Changed' }, ADMIN), 400, 'INVALID_INPUT');
      const errors = (e.details as { errors: Array<{ field: string }> }).errors;
      expect(errors.map((x) => x.field)).toEqual(['regulated']);
    }
    const got = (await t.call('GET', `/admin/platforms/${created.platform.id}`, undefined, ADMIN)).json() as PlatformView;
    expect(got.regulated).toBe(true);
    expect(got.name).toBe('Acme Bank');
  });

  it('refuses invalid bodies with 400 INVALID_INPUT', async () => {
    const errorsOf = async (method: 'POST' | 'PATCH', url: string, body: unknown) =>
      ((envelope(await t.call(method, url, body, ADMIN), 400, 'INVALID_INPUT').details as { errors: Array<{ field: string; constraint?: unknown }> }).errors);
    expect(await errorsOf('POST', '/admin/platforms', { name: '' })).toEqual([{ field: 'name', message: 'must be at least 1 characters long', constraint: { minLength: 1 } }]);
    expect((await errorsOf('POST', '/admin/platforms', {})).map((e) => e.field)).toEqual(['name']);
    expect((await errorsOf('POST', '/admin/platforms', { name: 'x', regulated: 'yes', skipVerificationPaperwork: 1 })).map((e) => e.field).sort()).toEqual([
      'regulated',
      'skipVerificationPaperwork',
    ]);
    expect((await errorsOf('PATCH', `/admin/platforms/${created.platform.id}`, { name: '' })).map((e) => e.field)).toEqual(['name']);
    expect((await errorsOf('PATCH', `/admin/platforms/${created.platform.id}`, { skipVerificationPaperwork: 'no' })).map((e) => e.field)).toEqual(['skipVerificationPaperwork']);
    envelope(await t.call('POST', '/admin/platforms', '{"name":', ADMIN), 400, 'INVALID_REQUEST_FORMAT');
    // Nothing was created.
    expect(((await t.call('GET', '/admin/platforms', undefined, ADMIN)).json() as { data: unknown[] }).data).toHaveLength(3);
  });

  it('keeps /admin out of the versioned API and its OpenAPI document', async () => {
    envelope(await t.call('GET', `${V}/admin/platforms`, undefined, ADMIN), 404, 'REFERENCE_NOT_FOUND');
    const doc = await t.call('GET', `${V}/openapi.json`, undefined, { authorization: '' });
    expect(doc.statusCode).toBe(200);
    expect(Object.keys((doc.json() as { paths: Record<string, unknown> }).paths).filter((p) => p.includes('admin'))).toEqual([]);
  });
});
