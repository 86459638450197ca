import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, basic, DEFAULT_SECRET, DEFAULT_TOKEN_ID, envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// HTTP Basic `<token id>:<client secret>` on the versioned API, permissions and tenancy.

interface Created {
  id: string;
  clientId: string;
  clientSecret: string;
  permissions: string[];
}

async function createToken(t: TestApp, name: string, permissions: string[], auth?: string): Promise<Created> {
  const res = await t.call('POST', '/tokens', { name, permissions }, auth ? { authorization: auth } : {});
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as Created;
}

function reasonOf(res: { statusCode: number; json(): unknown; body: string }): string {
  const e = envelope(res as Parameters<typeof envelope>[0], 401, 'UNAUTHORIZED');
  expect(Object.keys(e).sort()).toEqual(['code', 'details', 'message', 'reason', 'status']);
  expect(typeof e.details?.reason).toBe('string');
  // The specification's "401 UNAUTHORIZED carries a reason field": at the top, and in details.
  expect((e as { reason?: unknown }).reason).toBe(e.details!.reason);
  return e.details!.reason as string;
}

describe(`authentication (${STORE})`, () => {
  let t: TestApp;
  let tok: Created;
  beforeAll(async () => {
    t = await makeApp();
    tok = await createToken(t, 'auth test token', ['VIEW', 'TRANSACT', 'MANAGE']);
  });
  afterAll(async () => t.close());

  it('accepts the configured pair (clientId as user name)', async () => {
    const res = await t.call('GET', '/config', undefined, { authorization: basic(DEFAULT_TOKEN_ID, DEFAULT_SECRET) });
    expect(res.statusCode).toBe(200);
  });

  it('accepts a created token by its clientId and by its Token:<uuid> id', async () => {
    expect(tok.id).toMatch(/^Token:[0-9a-f-]{36}$/);
    expect(tok.clientId).not.toBe(tok.id);
    const byClientId = await t.call('GET', '/config', undefined, { authorization: basic(tok.clientId, tok.clientSecret) });
    expect(byClientId.statusCode).toBe(200);
    const byId = await t.call('GET', '/config', undefined, { authorization: basic(tok.id, tok.clientSecret) });
    expect(byId.statusCode).toBe(200);
    expect(byId.json()).toEqual(byClientId.json());
  });

  it('accepts the scheme name in any case', async () => {
    const res = await t.call('GET', '/config', undefined, { authorization: basic(tok.clientId, tok.clientSecret).replace('Basic', 'bAsIc') });
    expect(res.statusCode).toBe(200);
  });

  it('gives every failure a 401 UNAUTHORIZED envelope with its reason, one for unknown id and wrong secret', async () => {
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const cases: Array<[string, string | null, RegExp]> = [
      ['missing header', null, /Missing Authorization header/],
      ['unsupported scheme', 'Digest x', /Unsupported authorization scheme "digest"/],
      ['malformed base64', 'Basic !!!not-base64***', /not base64/],
      ['no colon', `Basic ${b64('justausername')}`, /expected <api token id>:<client secret>/],
      ['Token: id without a secret', `Basic ${b64(tok.id)}`, /expected <api token id>:<client secret>/],
      ['Token: id with an empty secret', `Basic ${b64(`${tok.id}:`)}`, /empty client secret/],
      ['empty user name', `Basic ${b64(':secret')}`, /expected <api token id>:<client secret>/],
      ['empty secret', `Basic ${b64(`${tok.clientId}:`)}`, /empty client secret/],
      ['unknown token id', basic('no-such-client-id', 'whatever'), /^Unknown API token id or wrong client secret$/],
      ['unknown Token: id', basic('Token:01950000-0000-7000-8000-000000000000', 'whatever'), /^Unknown API token id or wrong client secret$/],
      ['wrong secret', basic(tok.clientId, `${tok.clientSecret}x`), /^Unknown API token id or wrong client secret$/],
      ['wrong secret by Token: id', basic(tok.id, 'nope'), /^Unknown API token id or wrong client secret$/],
    ];
    const reasons = new Map<string, string>();
    for (const [what, header, expected] of cases) {
      const res = await t.call('GET', '/config', undefined, { authorization: header ?? '' });
      const reason = reasonOf(res);
      expect(reason, what).toMatch(expected);
      reasons.set(what, reason);
    }
    // One reason per failed check, except that an unknown token id and a wrong secret are one
    // failure: the answer never tells whether a token id exists.
    const distinct = new Set(
      ['missing header', 'unsupported scheme', 'malformed base64', 'no colon', 'empty secret', 'unknown token id'].map((w) => reasons.get(w)),
    );
    expect(distinct.size).toBe(6);
    expect(reasons.get('wrong secret')).toBe(reasons.get('unknown token id'));
  });

  it('reports the same failures on every Basic-only route', async () => {
    for (const [method, url] of [
      ['GET', '/tokens'],
      ['POST', '/tokens'],
      ['GET', `/tokens/${tok.id}`],
      ['DELETE', `/tokens/${tok.id}`],
      ['PATCH', '/config'],
    ] as const) {
      const res = await t.call(method, url, method === 'POST' || method === 'PATCH' ? {} : undefined, { authorization: basic(tok.clientId, 'wrong') });
      expect(reasonOf(res), `${method} ${url}`).toMatch(/^Unknown API token id or wrong client secret$/);
    }
  });

  it('refuses a Bearer token on Basic-only operations, saying Basic only', async () => {
    for (const [method, url] of [
      ['GET', '/config'],
      ['PATCH', '/config'],
      ['GET', '/tokens'],
      ['POST', '/tokens'],
      ['GET', `/tokens/${tok.id}`],
      ['DELETE', `/tokens/${tok.id}`],
    ] as const) {
      const res = await t.call(method, url, method === 'POST' || method === 'PATCH' ? {} : undefined, { authorization: 'Bearer some-agent-token' });
      expect(reasonOf(res), `${method} ${url}`).toMatch(/HTTP Basic credentials only/);
    }
    // The token was not deleted by the refused DELETE.
    expect((await t.call('GET', `/tokens/${tok.id}`)).statusCode).toBe(200);
  });

  it('does not check the body before authentication', async () => {
    const res = await t.call('POST', '/tokens', { name: '' }, { authorization: '' });
    expect(reasonOf(res)).toMatch(/Missing Authorization header/);
  });

  it('stops a deleted token at once', async () => {
    const victim = await createToken(t, 'to be deleted', ['VIEW']);
    const cred = basic(victim.clientId, victim.clientSecret);
    expect((await t.call('GET', '/config', undefined, { authorization: cred })).statusCode).toBe(200);
    expect((await t.call('GET', '/config', undefined, { authorization: basic(victim.id, victim.clientSecret) })).statusCode).toBe(200);
    const del = await t.call('DELETE', `/tokens/${victim.id}`);
    expect(del.statusCode).toBe(204);
    expect(reasonOf(await t.call('GET', '/config', undefined, { authorization: cred }))).toMatch(/^Unknown API token id or wrong client secret$/);
    expect(reasonOf(await t.call('GET', '/config', undefined, { authorization: basic(victim.id, victim.clientSecret) }))).toMatch(/^Unknown API token id or wrong client secret$/);
  });

  it('lets a token delete itself, after which it is refused', async () => {
    const self = await createToken(t, 'self-deleting', ['MANAGE']);
    const cred = basic(self.clientId, self.clientSecret);
    expect((await t.call('DELETE', `/tokens/${self.id}`, undefined, { authorization: cred })).statusCode).toBe(204);
    expect(reasonOf(await t.call('GET', '/tokens', undefined, { authorization: cred }))).toMatch(/^Unknown API token id or wrong client secret$/);
  });
});

describe(`permissions (${STORE})`, () => {
  let t: TestApp;
  let view: string;
  let transact: string;
  let manage: string;
  beforeAll(async () => {
    t = await makeApp();
    const v = await createToken(t, 'view only', ['VIEW']);
    const tr = await createToken(t, 'transact only', ['TRANSACT']);
    const m = await createToken(t, 'manage only', ['MANAGE']);
    view = basic(v.clientId, v.clientSecret);
    transact = basic(tr.clientId, tr.clientSecret);
    manage = basic(m.clientId, m.clientSecret);
  });
  afterAll(async () => t.close());

  // Token and config operations declare no 403: the missing permission is a 401 that names it.
  function forbidden(res: Parameters<typeof envelope>[0], required: string, granted: string[]): void {
    const e = envelope(res, 401, 'UNAUTHORIZED');
    expect(e.message).toContain(required);
    expect(e.details).toEqual({ required, granted, reason: e.message });
  }

  it('VIEW reads config and tokens', async () => {
    expect((await t.call('GET', '/config', undefined, { authorization: view })).statusCode).toBe(200);
    const list = await t.call('GET', '/tokens', undefined, { authorization: view });
    expect(list.statusCode).toBe(200);
    expect(list.json().totalCount).toBe(4);
  });

  it('VIEW cannot create tokens, change config or delete tokens', async () => {
    forbidden(await t.call('POST', '/tokens', { name: 'x', permissions: ['VIEW'] }, { authorization: view }), 'MANAGE', ['VIEW']);
    forbidden(await t.call('PATCH', '/config', { webhookEndpoint: 'https://example.com/hook' }, { authorization: view }), 'MANAGE', ['VIEW']);
    const list = (await t.call('GET', '/tokens')).json() as { data: Array<{ id: string }> };
    forbidden(await t.call('DELETE', `/tokens/${list.data[0]!.id}`, undefined, { authorization: view }), 'MANAGE', ['VIEW']);
    // Nothing changed.
    expect((await t.call('GET', '/tokens')).json().totalCount).toBe(4);
    expect((await t.call('GET', '/config')).json().webhookEndpoint).toBeUndefined();
  });

  it('checks the permission before validating the body', async () => {
    forbidden(await t.call('POST', '/tokens', { name: '' }, { authorization: view }), 'MANAGE', ['VIEW']);
  });

  it('TRANSACT reads but is refused on MANAGE routes', async () => {
    expect((await t.call('GET', '/config', undefined, { authorization: transact })).statusCode).toBe(200);
    expect((await t.call('GET', '/tokens', undefined, { authorization: transact })).statusCode).toBe(200);
    forbidden(await t.call('POST', '/tokens', { name: 'x', permissions: ['VIEW'] }, { authorization: transact }), 'MANAGE', ['TRANSACT']);
    forbidden(await t.call('PATCH', '/config', { webhookEndpoint: 'https://example.com/hook' }, { authorization: transact }), 'MANAGE', ['TRANSACT']);
  });

  it('MANAGE reads and manages', async () => {
    expect((await t.call('GET', '/config', undefined, { authorization: manage })).statusCode).toBe(200);
    expect((await t.call('GET', '/tokens', undefined, { authorization: manage })).statusCode).toBe(200);
    const created = await t.call('POST', '/tokens', { name: 'made by manage', permissions: ['VIEW'] }, { authorization: manage });
    expect(created.statusCode).toBe(201);
    const patched = await t.call('PATCH', '/config', { webhookEndpoint: 'https://example.com/hook' }, { authorization: manage });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().webhookEndpoint).toBe('https://example.com/hook');
    const del = await t.call('DELETE', `/tokens/${(created.json() as Created).id}`, undefined, { authorization: manage });
    expect(del.statusCode).toBe(204);
  });
});

describe(`tenancy (${STORE})`, () => {
  let t: TestApp;
  let aToken: Created;
  let bAuth: string;
  let bTokenId: string;
  beforeAll(async () => {
    t = await makeApp();
    aToken = await createToken(t, 'platform A token', ['VIEW']);
    const res = await t.call('POST', '/admin/platforms', { name: 'Platform B' }, { authorization: `Bearer ${ADMIN_KEY}` });
    expect(res.statusCode, res.body).toBe(201);
    const b = res.json() as { credentials: { tokenId: string; clientId: string; clientSecret: string } };
    bAuth = basic(b.credentials.clientId, b.credentials.clientSecret);
    bTokenId = b.credentials.tokenId;
  });
  afterAll(async () => t.close());

  it("hides platform A's token from platform B exactly like an unknown id", async () => {
    const foreign = await t.call('GET', `/tokens/${aToken.id}`, undefined, { authorization: bAuth });
    const unknownId = 'Token:01950000-0000-7000-8000-000000000000';
    const unknown = await t.call('GET', `/tokens/${unknownId}`, undefined, { authorization: bAuth });
    const ef = envelope(foreign, 404, 'TOKEN_NOT_FOUND');
    const eu = envelope(unknown, 404, 'TOKEN_NOT_FOUND');
    expect(ef.message).toContain(aToken.id);
    expect({ ...ef, message: ef.message.replace(aToken.id, '<id>') }).toEqual({ ...eu, message: eu.message.replace(unknownId, '<id>') });
    expect(foreign.headers['content-type']).toBe(unknown.headers['content-type']);
    // A still sees it.
    expect((await t.call('GET', `/tokens/${aToken.id}`)).statusCode).toBe(200);
  });

  it("cannot delete platform A's token", async () => {
    envelope(await t.call('DELETE', `/tokens/${aToken.id}`, undefined, { authorization: bAuth }), 404, 'TOKEN_NOT_FOUND');
    expect((await t.call('GET', `/tokens/${aToken.id}`)).statusCode).toBe(200);
  });

  it("lists only the caller's platform tokens", async () => {
    const bList = (await t.call('GET', '/tokens', undefined, { authorization: bAuth })).json() as { data: Array<{ id: string }>; totalCount: number };
    expect(bList.data.map((x) => x.id)).toEqual([bTokenId]);
    expect(bList.totalCount).toBe(1);
    const aList = (await t.call('GET', '/tokens')).json() as { data: Array<{ id: string }>; totalCount: number };
    expect(aList.totalCount).toBe(2);
    expect(aList.data.map((x) => x.id)).toContain(aToken.id);
    expect(aList.data.map((x) => x.id)).not.toContain(bTokenId);
  });

  it("keeps each platform's tokens on its own platform", async () => {
    const res = await t.call('POST', '/tokens', { name: 'B second', permissions: ['VIEW'] }, { authorization: bAuth });
    expect(res.statusCode).toBe(201);
    const created = res.json() as Created;
    envelope(await t.call('GET', `/tokens/${created.id}`), 404, 'TOKEN_NOT_FOUND');
    expect((await t.call('GET', `/tokens/${created.id}`, undefined, { authorization: bAuth })).statusCode).toBe(200);
    expect((await t.call('GET', '/tokens', undefined, { authorization: bAuth })).json().totalCount).toBe(2);
  });
});
