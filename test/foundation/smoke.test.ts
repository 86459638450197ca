import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';

describe(`foundation smoke (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  it('answers /healthz with 200 ok', async () => {
    const res = await t.call('GET', '/healthz', undefined, { authorization: '' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('authenticates the default platform with the configured pair', async () => {
    const res = await t.call('GET', '/config');
    expect(res.statusCode).toBe(200);
    expect(res.json().isRegulatedFinancialInstitution).toBe(false);
  });

  it('rejects a request without credentials', async () => {
    const e = envelope(await t.call('GET', '/config', undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
    expect(e.details?.reason).toMatch(/Missing Authorization/);
  });
});
