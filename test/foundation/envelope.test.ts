import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { apiError } from '../../src/kernel/errors.js';
import { basic, DEFAULT_AUTH, makeApp, STORE, type TestApp, V } from '../helpers.js';

// The error envelope: every non-2xx answer is {status, code, message, details?}, with
// `status` equal to the HTTP status, served as application/json.

const ENVELOPE_KEYS = new Set(['status', 'code', 'message', 'details']);

interface Envelope {
  status: number;
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

function expectEnvelope(res: LightMyRequestResponse, status: number, code: string): Envelope {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(res.body) as Envelope;
  expect(typeof body).toBe('object');
  // `reason` only on 401 UNAUTHORIZED (the specification's sandbox rule), equal to details.reason.
  for (const k of Object.keys(body)) expect(ENVELOPE_KEYS.has(k) || (k === 'reason' && status === 401 && code === 'UNAUTHORIZED'), `unexpected key ${k}`).toBe(true);
  if ('reason' in body) expect((body as { reason?: unknown }).reason).toBe(body.details?.reason);
  expect(body.status).toBe(status);
  expect(body.code).toBe(code);
  expect(typeof body.message).toBe('string');
  expect(body.message.length).toBeGreaterThan(0);
  if (body.details !== undefined) {
    expect(typeof body.details).toBe('object');
    expect(Array.isArray(body.details)).toBe(false);
    expect(body.details).not.toBeNull();
  }
  return body;
}

describe(`error envelope (${STORE})`, () => {
  let t: TestApp;
  let viewAuth: string;
  beforeAll(async () => {
    t = await makeApp();
    const res = await t.call('POST', '/tokens', { name: 'viewer', permissions: ['VIEW'] });
    expect(res.statusCode).toBe(201);
    viewAuth = basic(res.json().clientId, res.json().clientSecret);
  });
  afterAll(async () => t.close());

  describe('404', () => {
    it('answers an unknown route under the version with REFERENCE_NOT_FOUND', async () => {
      const e = expectEnvelope(await t.call('GET', '/no-such-thing'), 404, 'REFERENCE_NOT_FOUND');
      expect(e.message).toContain('/no-such-thing');
    });

    it('answers an unknown route outside the version with REFERENCE_NOT_FOUND', async () => {
      expectEnvelope(await t.app.inject({ method: 'GET', url: '/nowhere' }), 404, 'REFERENCE_NOT_FOUND');
      expectEnvelope(await t.app.inject({ method: 'POST', url: '/config', headers: { authorization: DEFAULT_AUTH } }), 404, 'REFERENCE_NOT_FOUND');
    });

    it('answers an unknown version segment naming the served version', async () => {
      for (const url of ['/2024-01-01/config', '/2025-10-12/tokens', '/2099-12-31']) {
        const e = expectEnvelope(await t.app.inject({ method: 'GET', url, headers: { authorization: DEFAULT_AUTH } }), 404, 'REFERENCE_NOT_FOUND');
        expect(e.message).toContain('2025-10-13');
        expect(e.message).toContain(url.slice(1, 11));
      }
    });

    it('answers a missing resource with its own 404 code', async () => {
      expectEnvelope(await t.call('GET', '/tokens/Token:00000000-0000-7000-8000-000000000000'), 404, 'TOKEN_NOT_FOUND');
    });
  });

  describe('405', () => {
    it('answers a wrong method on an existing path with METHOD_NOT_ALLOWED and an Allow header', async () => {
      const res = await t.call('PUT', '/tokens', { name: 'x' });
      const e = expectEnvelope(res, 405, 'METHOD_NOT_ALLOWED');
      const allow = String(res.headers.allow).split(/,\s*/).sort();
      expect(allow).toEqual(['GET', 'POST']);
      expect(e.message).toContain('PUT');
    });

    it('does the same on a path with a parameter', async () => {
      const res = await t.call('PUT', '/tokens/Token:00000000-0000-7000-8000-000000000000', { name: 'x' });
      expectEnvelope(res, 405, 'METHOD_NOT_ALLOWED');
      expect(String(res.headers.allow).split(/,\s*/).sort()).toEqual(['DELETE', 'GET']);

      const post = await t.call('POST', '/tokens/Token:abc');
      expectEnvelope(post, 405, 'METHOD_NOT_ALLOWED');
      expect(String(post.headers.allow).split(/,\s*/).sort()).toEqual(['DELETE', 'GET']);
    });

    it('lists the methods of /config', async () => {
      const res = await t.call('DELETE', '/config');
      expectEnvelope(res, 405, 'METHOD_NOT_ALLOWED');
      expect(String(res.headers.allow).split(/,\s*/).sort()).toEqual(['GET', 'PATCH']);
    });
  });

  describe('400 INVALID_REQUEST_FORMAT', () => {
    it('answers malformed JSON', async () => {
      for (const body of ['{"name": "x", ', '{name: "x"}', 'nope', '{"a":1}}']) {
        expectEnvelope(await t.call('POST', '/tokens', body), 400, 'INVALID_REQUEST_FORMAT');
      }
    });

    it('answers a JSON body that tries to set __proto__', async () => {
      const res = await t.call('POST', '/tokens', '{"__proto__": {"admin": true}, "name": "p", "permissions": ["VIEW"]}');
      expectEnvelope(res, 400, 'INVALID_REQUEST_FORMAT');
    });

    it('answers a URL that is not valid percent-encoding', async () => {
      for (const url of [`${V}/tokens/%E0%A4%A`, '/%zz']) {
        const e = expectEnvelope(await t.app.inject({ method: 'GET', url, headers: { authorization: DEFAULT_AUTH } }), 400, 'INVALID_REQUEST_FORMAT');
        expect(e.details?.reason).toBe('FST_ERR_BAD_URL');
      }
    });

    it('answers a body with no content type', async () => {
      const res = await t.app.inject({ method: 'POST', url: `${V}/tokens`, payload: 'name=x', headers: { authorization: DEFAULT_AUTH } });
      expectEnvelope(res, 400, 'INVALID_REQUEST_FORMAT');
    });

    it('answers a content type other than JSON', async () => {
      for (const type of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded']) {
        const res = await t.call('POST', '/tokens', type === 'application/xml' ? '<token><name>x</name></token>' : 'name=x', { 'content-type': type });
        expectEnvelope(res, 400, 'INVALID_REQUEST_FORMAT');
      }
      const res = await t.call('PATCH', '/config', JSON.stringify({ umaDomain: 'a.example.com' }), { 'content-type': 'text/plain' });
      expectEnvelope(res, 400, 'INVALID_REQUEST_FORMAT');
    });

    it('accepts JSON with a charset parameter', async () => {
      const res = await t.call('POST', '/tokens', { name: 'charset', permissions: ['VIEW'] }, { 'content-type': 'application/json; charset=utf-8' });
      expect(res.statusCode).toBe(201);
    });

    it('answers a body larger than 1 MiB', async () => {
      const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024), permissions: ['VIEW'] });
      expect(Buffer.byteLength(big)).toBeGreaterThan(1024 * 1024);
      const e = expectEnvelope(await t.call('POST', '/tokens', big), 400, 'INVALID_REQUEST_FORMAT');
      expect(e.message).toMatch(/larger/);
    });
  });

  describe('400 INVALID_INPUT', () => {
    it('answers an empty JSON body on a route that takes a body', async () => {
      for (const body of ['', '   ']) {
        const e = expectEnvelope(await t.call('POST', '/tokens', body, { 'content-type': 'application/json' }), 400, 'INVALID_INPUT');
        expect(Array.isArray(e.details?.errors)).toBe(true);
      }
      expectEnvelope(await t.call('PATCH', '/config', '', { 'content-type': 'application/json' }), 400, 'INVALID_INPUT');
    });

    it('answers JSON null and non-object bodies', async () => {
      for (const body of ['null', '[]', '42', '"x"']) {
        expectEnvelope(await t.call('POST', '/tokens', body), 400, 'INVALID_INPUT');
      }
    });
  });

  describe('401 and 403', () => {
    it('answers missing or wrong credentials with 401 UNAUTHORIZED and a reason', async () => {
      const cases: Array<Record<string, string>> = [
        { authorization: '' },
        { authorization: basic('test-token-id', 'wrong-secret') },
        { authorization: basic('no-such-token', 'whatever') },
        { authorization: 'Digest abc' },
        { authorization: 'Basic !!!' },
      ];
      for (const headers of cases) {
        const e = expectEnvelope(await t.call('GET', '/tokens', undefined, headers), 401, 'UNAUTHORIZED');
        expect(typeof e.details?.reason).toBe('string');
      }
    });

    it('does not reveal a secret in a 401', async () => {
      const res = await t.call('GET', '/config', undefined, { authorization: basic('test-token-id', 'wrong-secret-value') });
      expectEnvelope(res, 401, 'UNAUTHORIZED');
      expect(res.body).not.toContain('wrong-secret-value');
    });

    it('answers a missing permission with 403 FORBIDDEN where the operation declares 403, else 401 UNAUTHORIZED naming it', async () => {
      const e = expectEnvelope(await t.call('POST', '/tokens', { name: 'x', permissions: ['VIEW'] }, { authorization: viewAuth }), 401, 'UNAUTHORIZED');
      expect(e.details?.required).toBe('MANAGE');
      expect(e.details?.granted).toEqual(['VIEW']);
      expect(e.details?.reason).toBe('This API token lacks the MANAGE permission');
      expectEnvelope(await t.call('PATCH', '/config', { umaDomain: 'a.example.com' }, { authorization: viewAuth }), 401, 'UNAUTHORIZED');
      // createQuote declares 403 (the reference's FORBIDDEN: insufficient permissions).
      const q = expectEnvelope(await t.call('POST', '/quotes', {}, { authorization: viewAuth }), 403, 'FORBIDDEN');
      expect(q.details).toEqual({ required: 'TRANSACT', granted: ['VIEW'] });
    });
  });
});

describe(`unexpected exceptions (${STORE})`, () => {
  let base: TestApp;
  let app: FastifyInstance;
  beforeAll(async () => {
    // A second app on the dependencies of a test app, with routes that fail, added before ready().
    base = await makeApp();
    app = await buildApp(base.app.deps, { logger: false });
    app.get('/boom', async () => {
      throw new Error('db password=hunter2 at /srv/internal/secret.ts');
    });
    app.get('/typeerror', async () => {
      const o = undefined as unknown as { x: { y: number } };
      return { v: o.x.y };
    });
    app.get('/bad-gateway', async () => {
      throw Object.assign(new Error('upstream said hunter2'), { statusCode: 502 });
    });
    app.get('/api-error', async () => {
      throw apiError(503, 'SERVICE_UNAVAILABLE', 'Try again later');
    });
    app.get('/not-implemented', async () => {
      throw apiError(501, 'NOT_IMPLEMENTED', 'Not here');
    });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    await base.close();
  });

  it('answers 500 INTERNAL_ERROR without the internal message or a stack trace', async () => {
    for (const url of ['/boom', '/typeerror', '/bad-gateway']) {
      const res = await app.inject({ method: 'GET', url });
      const e = expectEnvelope(res, 500, 'INTERNAL_ERROR');
      expect(e.details).toBeUndefined();
      expect(res.body).not.toMatch(/hunter2|secret\.ts|stack|TypeError|Cannot read|\bat\s+\S+\s+\(/);
    }
  });

  it('passes an ApiError of 5xx through as is', async () => {
    expectEnvelope(await app.inject({ method: 'GET', url: '/api-error' }), 503, 'SERVICE_UNAVAILABLE');
    expectEnvelope(await app.inject({ method: 'GET', url: '/not-implemented' }), 501, 'NOT_IMPLEMENTED');
  });

  it('still answers the versioned routes of the same app', async () => {
    expectEnvelope(await app.inject({ method: 'GET', url: `${V}/config` }), 401, 'UNAUTHORIZED');
    expect((await app.inject({ method: 'GET', url: `${V}/config`, headers: { authorization: DEFAULT_AUTH } })).statusCode).toBe(200);
  });
});
