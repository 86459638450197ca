import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, DEFAULT_TOKEN_ID, envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// The API Tokens area: create, read, list (filters and cursor pagination), delete.

interface Token {
  id: string;
  name: string;
  permissions: string[];
  clientId: string;
  clientSecret?: string;
  createdAt: string;
  updatedAt: string;
}
interface List {
  data: Token[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount: number;
}

const TOKEN_ID = /^Token:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function create(t: TestApp, name: string, permissions: string[] = ['VIEW']): Promise<Token> {
  const res = await t.call('POST', '/tokens', { name, permissions });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as Token;
}

function fieldErrors(res: Parameters<typeof envelope>[0]): Array<{ field: string; message: string; constraint?: Record<string, unknown> }> {
  const e = envelope(res, 400, 'INVALID_INPUT');
  return (e.details as { errors: Array<{ field: string; message: string; constraint?: Record<string, unknown> }> }).errors;
}

describe(`POST /tokens (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  it('creates a token and shows its secret once', async () => {
    const at = new Date(t.clock.nowMs()).toISOString();
    const res = await t.call('POST', '/tokens', { name: 'Sandbox read-only token', permissions: ['VIEW', 'TRANSACT'] });
    expect(res.statusCode).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const tok = res.json() as Token;
    expect(Object.keys(tok).sort()).toEqual(['clientId', 'clientSecret', 'createdAt', 'id', 'name', 'permissions', 'updatedAt']);
    expect(tok.id).toMatch(TOKEN_ID);
    expect(tok.name).toBe('Sandbox read-only token');
    expect(tok.permissions).toEqual(['VIEW', 'TRANSACT']);
    expect(tok.clientId).toMatch(/^[0-9a-f]{32}$/);
    expect(tok.clientSecret).toMatch(/^[0-9a-f]{48}$/);
    expect(tok.createdAt).toMatch(ISO);
    expect(tok.createdAt).toBe(at);
    expect(tok.updatedAt).toBe(tok.createdAt);

    const got = await t.call('GET', `/tokens/${tok.id}`);
    expect(got.statusCode).toBe(200);
    const { clientSecret, ...rest } = tok;
    expect(clientSecret).toBeDefined();
    expect(got.json()).toEqual(rest);
    expect(got.body).not.toContain(clientSecret!);

    const list = await t.call('GET', '/tokens');
    expect(list.statusCode).toBe(200);
    const body = list.json() as List;
    for (const item of body.data) expect(item).not.toHaveProperty('clientSecret');
    expect(body.data.find((x) => x.id === tok.id)).toEqual(rest);
    expect(list.body).not.toContain(clientSecret!);

    // The secret works.
    expect((await t.call('GET', '/config', undefined, { authorization: basic(tok.clientId, clientSecret!) })).statusCode).toBe(200);
  });

  it('gives every token distinct ids and secrets', async () => {
    const a = await create(t, 'same name');
    const b = await create(t, 'same name');
    expect(a.id).not.toBe(b.id);
    expect(a.clientId).not.toBe(b.clientId);
    expect(a.clientSecret).not.toBe(b.clientSecret);
  });

  it('keeps each permission once', async () => {
    const tok = await create(t, 'dupes', ['MANAGE', 'VIEW', 'MANAGE']);
    expect(tok.permissions).toEqual(['MANAGE', 'VIEW']);
  });

  it('lists every invalid field in one 400', async () => {
    const errors = fieldErrors(await t.call('POST', '/tokens', { permissions: ['VIEW', 'ROOT'] }));
    expect(errors).toHaveLength(2);
    const byField = Object.fromEntries(errors.map((e) => [e.field, e]));
    expect(Object.keys(byField).sort()).toEqual(['name', 'permissions.1']);
    expect(byField.name!.message).toBe('is required');
    expect(byField['permissions.1']!.constraint).toEqual({ enum: ['VIEW', 'TRANSACT', 'MANAGE'] });
    expect(byField['permissions.1']!.message).toMatch(/VIEW, TRANSACT, MANAGE/);
  });

  it('refuses empty or missing permissions, bad names and wrong types', async () => {
    let errors = fieldErrors(await t.call('POST', '/tokens', { name: 'x', permissions: [] }));
    expect(errors).toEqual([{ field: 'permissions', message: 'must have at least 1 items' }]);

    errors = fieldErrors(await t.call('POST', '/tokens', { name: 'x' }));
    expect(errors).toEqual([{ field: 'permissions', message: 'is required' }]);

    errors = fieldErrors(await t.call('POST', '/tokens', { name: '', permissions: ['VIEW'] }));
    expect(errors).toEqual([{ field: 'name', message: 'must be at least 1 characters long', constraint: { minLength: 1 } }]);

    errors = fieldErrors(await t.call('POST', '/tokens', { name: 'x'.repeat(256), permissions: ['VIEW'] }));
    expect(errors).toEqual([{ field: 'name', message: 'must be at most 255 characters long', constraint: { maxLength: 255 } }]);

    errors = fieldErrors(await t.call('POST', '/tokens', { name: 7, permissions: 'VIEW' }));
    expect(errors.map((e) => e.field).sort()).toEqual(['name', 'permissions']);

    errors = fieldErrors(await t.call('POST', '/tokens', { name: 'x', permissions: ['view'] }));
    expect(errors).toEqual([{ field: 'permissions.0', message: 'must be one of: VIEW, TRANSACT, MANAGE', constraint: { enum: ['VIEW', 'TRANSACT', 'MANAGE'] } }]);
  });

  it('refuses a missing or malformed body', async () => {
    const missing = fieldErrors(await t.call('POST', '/tokens'));
    expect(missing).toHaveLength(1);
    envelope(await t.call('POST', '/tokens', '{"name": "x",'), 400, 'INVALID_REQUEST_FORMAT');
  });

  it('creates nothing on a refused request', async () => {
    const before = ((await t.call('GET', '/tokens')).json() as List).totalCount;
    await t.call('POST', '/tokens', { name: 'nope', permissions: [] });
    await t.call('POST', '/tokens', { permissions: ['VIEW'] });
    expect(((await t.call('GET', '/tokens')).json() as List).totalCount).toBe(before);
  });
});

describe(`GET /tokens (${STORE})`, () => {
  let t: TestApp;
  /** Every live token of the platform, oldest first (the default token first). */
  let all: Token[];
  let stamps: string[];
  beforeAll(async () => {
    t = await makeApp();
    const def = ((await t.call('GET', '/tokens')).json() as List).data;
    expect(def.map((x) => x.clientId)).toEqual([DEFAULT_TOKEN_ID]);
    all = [def[0]!];
    for (let i = 0; i < 24; i++) {
      t.clock.advance(60_000);
      all.push(await create(t, i % 3 === 0 ? 'batch-a' : `tok-${i}`));
    }
    stamps = all.map((x) => x.createdAt);
  });
  afterAll(async () => t.close());

  const ids = (l: Token[]) => l.map((x) => x.id);
  const newestFirst = () => ids([...all].reverse());

  it('returns the first 20, newest first, with a cursor', async () => {
    const res = await t.call('GET', '/tokens');
    expect(res.statusCode).toBe(200);
    const body = res.json() as List;
    expect(Object.keys(body).sort()).toEqual(['data', 'hasMore', 'nextCursor', 'totalCount']);
    expect(body.totalCount).toBe(25);
    expect(body.hasMore).toBe(true);
    expect(typeof body.nextCursor).toBe('string');
    expect(ids(body.data)).toEqual(newestFirst().slice(0, 20));
  });

  it('walks every page with the cursor, each token once, newest first', async () => {
    const seen: Token[] = [];
    let cursor: string | undefined;
    const sizes: number[] = [];
    for (let guard = 0; guard < 10; guard++) {
      const res = await t.call('GET', `/tokens?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.statusCode).toBe(200);
      const page = res.json() as List;
      expect(page.totalCount).toBe(25);
      sizes.push(page.data.length);
      seen.push(...page.data);
      if (!page.hasMore) {
        expect(page).not.toHaveProperty('nextCursor');
        break;
      }
      cursor = page.nextCursor;
      expect(cursor).toBeDefined();
    }
    expect(sizes).toEqual([7, 7, 7, 4]);
    expect(ids(seen)).toEqual(newestFirst());
    expect(new Set(ids(seen)).size).toBe(25);
    const created = seen.map((x) => x.createdAt);
    expect(created).toEqual([...stamps].reverse());
  });

  it('answers a page that fits exactly without hasMore', async () => {
    const body = (await t.call('GET', '/tokens?limit=25')).json() as List;
    expect(body.data).toHaveLength(25);
    expect(body.hasMore).toBe(false);
    expect(body).not.toHaveProperty('nextCursor');
    const max = (await t.call('GET', '/tokens?limit=100')).json() as List;
    expect(max.data).toHaveLength(25);
    expect(max.hasMore).toBe(false);
  });

  it('refuses limits outside 1..100 and non-integers', async () => {
    for (const bad of ['0', '101', '-1', 'abc', '2.5']) {
      const errors = fieldErrors(await t.call('GET', `/tokens?limit=${bad}`));
      expect(errors.map((e) => e.field), `limit=${bad}`).toEqual(['limit']);
    }
    expect((await t.call('GET', '/tokens?limit=1')).json().data).toHaveLength(1);
  });

  it('refuses a cursor it did not issue', async () => {
    for (const bad of ['garbage', '%%%', Buffer.from('{"id":1}').toString('base64url'), Buffer.from('[]').toString('base64url')]) {
      const errors = fieldErrors(await t.call('GET', `/tokens?cursor=${encodeURIComponent(bad)}`));
      expect(errors, bad).toEqual([{ field: 'cursor', message: 'is not a valid cursor' }]);
    }
  });

  it('filters by exact name', async () => {
    const body = (await t.call('GET', '/tokens?name=batch-a')).json() as List;
    const expected = all.filter((x) => x.name === 'batch-a');
    expect(expected).toHaveLength(8);
    expect(body.totalCount).toBe(8);
    expect(ids(body.data)).toEqual(ids(expected).reverse());
    const none = (await t.call('GET', '/tokens?name=batch')).json() as List;
    expect(none).toEqual({ data: [], hasMore: false, totalCount: 0 });
  });

  it('paginates a filtered list with totalCount of the filter', async () => {
    const p1 = (await t.call('GET', '/tokens?name=batch-a&limit=5')).json() as List;
    expect(p1.data).toHaveLength(5);
    expect(p1.totalCount).toBe(8);
    expect(p1.hasMore).toBe(true);
    const p2 = (await t.call('GET', `/tokens?name=batch-a&limit=5&cursor=${encodeURIComponent(p1.nextCursor!)}`)).json() as List;
    expect(p2.data).toHaveLength(3);
    expect(p2.hasMore).toBe(false);
    expect([...ids(p1.data), ...ids(p2.data)]).toEqual(ids(all.filter((x) => x.name === 'batch-a')).reverse());
  });

  it('filters by creation time, bounds inclusive', async () => {
    const from = stamps[5]!;
    const to = stamps[9]!;
    const after = (await t.call('GET', `/tokens?createdAfter=${encodeURIComponent(from)}&limit=100`)).json() as List;
    expect(after.totalCount).toBe(20);
    expect(ids(after.data)).toEqual(ids(all.slice(5)).reverse());
    const before = (await t.call('GET', `/tokens?createdBefore=${encodeURIComponent(to)}`)).json() as List;
    expect(before.totalCount).toBe(10);
    expect(ids(before.data)).toEqual(ids(all.slice(0, 10)).reverse());
    const both = (await t.call('GET', `/tokens?createdAfter=${encodeURIComponent(from)}&createdBefore=${encodeURIComponent(to)}`)).json() as List;
    expect(ids(both.data)).toEqual(ids(all.slice(5, 10)).reverse());
    // Combined with the name filter.
    const named = (await t.call('GET', `/tokens?name=batch-a&createdAfter=${encodeURIComponent(from)}&createdBefore=${encodeURIComponent(to)}`)).json() as List;
    expect(ids(named.data)).toEqual(ids(all.slice(5, 10).filter((x) => x.name === 'batch-a')).reverse());
  });

  it('compares times, not text, when the filter has an offset or no milliseconds', async () => {
    // stamps[5] expressed in +02:00 without milliseconds (creation times here are whole minutes apart,
    // but the clock started at an arbitrary millisecond, so round down to the second then add 1s).
    const ms = Date.parse(stamps[5]!);
    const sec = Math.floor(ms / 1000) * 1000;
    const afterFive = ms === sec ? sec : sec + 1000; // first whole second at or after stamps[5]
    const local = new Date(afterFive + 2 * 3600_000).toISOString().slice(0, 19) + '+02:00';
    const body = (await t.call('GET', `/tokens?createdAfter=${encodeURIComponent(local)}&limit=100`)).json() as List;
    const expected = all.filter((x) => Date.parse(x.createdAt) >= afterFive);
    expect(ids(body.data)).toEqual(ids(expected).reverse());
    expect(body.totalCount).toBe(expected.length);
  });

  it('filters by update time', async () => {
    const from = stamps[20]!;
    const body = (await t.call('GET', `/tokens?updatedAfter=${encodeURIComponent(from)}`)).json() as List;
    expect(ids(body.data)).toEqual(ids(all.slice(20)).reverse());
    const upto = (await t.call('GET', `/tokens?updatedBefore=${encodeURIComponent(stamps[0]!)}`)).json() as List;
    expect(ids(upto.data)).toEqual([all[0]!.id]);
  });

  it('refuses a filter that is not a date-time', async () => {
    const errors = fieldErrors(await t.call('GET', '/tokens?createdAfter=yesterday&createdBefore=2025-13-45T00:00:00Z'));
    expect(errors.map((e) => e.field).sort()).toEqual(['createdAfter', 'createdBefore']);
    for (const e of errors) expect(e.constraint).toEqual({ format: 'date-time' });
  });
});

describe(`GET and DELETE /tokens/{id} (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  it('answers 404 TOKEN_NOT_FOUND for an unknown or malformed id', async () => {
    for (const id of ['Token:01950000-0000-7000-8000-000000000000', 'nothing-like-an-id']) {
      const e = envelope(await t.call('GET', `/tokens/${id}`), 404, 'TOKEN_NOT_FOUND');
      expect(e.message).toContain(id);
      envelope(await t.call('DELETE', `/tokens/${id}`), 404, 'TOKEN_NOT_FOUND');
    }
  });

  it('deletes a token: 204, then 404 on GET and on a second DELETE, and gone from the list', async () => {
    const keep = await create(t, 'keep');
    const gone = await create(t, 'gone');
    const before = (await t.call('GET', '/tokens')).json() as List;
    expect(before.totalCount).toBe(3);

    const del = await t.call('DELETE', `/tokens/${gone.id}`);
    expect(del.statusCode).toBe(204);
    expect(del.body).toBe('');

    envelope(await t.call('GET', `/tokens/${gone.id}`), 404, 'TOKEN_NOT_FOUND');
    const again = envelope(await t.call('DELETE', `/tokens/${gone.id}`), 404, 'TOKEN_NOT_FOUND');
    expect(again.message).toContain(gone.id);

    const after = (await t.call('GET', '/tokens')).json() as List;
    expect(after.totalCount).toBe(2);
    expect(after.data.map((x) => x.id)).not.toContain(gone.id);
    expect(after.data.map((x) => x.id)).toContain(keep.id);
    expect((await t.call('GET', `/tokens/${keep.id}`)).statusCode).toBe(200);
    // Filters do not bring it back either.
    expect(((await t.call('GET', '/tokens?name=gone')).json() as List).totalCount).toBe(0);
  });
});
