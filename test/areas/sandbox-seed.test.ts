import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { otherPlatformAuth } from '../money-helpers.js';

// POST /sandbox/seed: the `payments-service seed` data set, made in-process through the
// server's own API with the caller's credentials; checked through HTTP.

interface Seeded {
  customers: Array<{ id: string; name: string; status: string }>;
  internalAccounts: string[];
  externalAccounts: string[];
  transactions: Array<{ id: string; expected: string }>;
}

describe(`sandbox seed (${STORE})`, { timeout: 60_000 }, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  it('creates the demo data set on the caller’s platform and answers what it made', async () => {
    const res = await t.call('POST', '/sandbox/seed');
    expect(res.statusCode, res.body).toBe(200);
    const out = res.json() as Seeded;
    expect(out.customers.map((c) => c.name)).toEqual(['Acme Imports LLC', 'Pending Review Co', 'Jane Doe', 'Sam Prospect']);
    expect(out.customers.find((c) => c.name === 'Acme Imports LLC')!.status).toBe('APPROVED');
    expect(out.externalAccounts).toHaveLength(3);
    expect(out.internalAccounts.length).toBeGreaterThanOrEqual(3);
    const customers = (await t.call('GET', '/customers?limit=100')).json() as { data: Array<{ id: string }> };
    expect(customers.data.map((c) => c.id).sort()).toEqual(out.customers.map((c) => c.id).sort());
    for (const tx of out.transactions) {
      const got = await t.call('GET', `/transactions/${encodeURIComponent(tx.id)}`);
      expect(got.statusCode, got.body).toBe(200);
      expect(got.json().status, tx.expected).toBe(tx.expected);
    }
    expect(out.transactions.map((x) => x.expected)).toEqual(['COMPLETED', 'FAILED', 'PROCESSING']);
    const deliveries = (await t.call('GET', '/sandbox/webhook-deliveries?limit=100')).json() as { data: unknown[] };
    expect(deliveries.data.length).toBeGreaterThan(5);
  });

  it('goes through the public API: each of its requests is in the request log, after the seed itself', async () => {
    const log = (await t.call('GET', '/sandbox/requests')).json() as { data: Array<{ method: string; path: string; status: number }> };
    const paths = log.data.map((e) => `${e.method} ${e.path}`);
    expect(paths).toContain('POST /2025-10-13/customers');
    expect(paths).toContain('POST /2025-10-13/quotes');
    expect(paths).toContain('POST /2025-10-13/sandbox/clock/advance');
    // Newest first: the seed answered after all of its requests.
    expect(paths.indexOf('POST /2025-10-13/sandbox/seed')).toBeLessThan(paths.indexOf('POST /2025-10-13/customers'));
  });

  it('seeds only the caller’s platform', async () => {
    const other = await otherPlatformAuth(t);
    const before = ((await t.call('GET', '/customers?limit=100')).json() as { data: unknown[] }).data.length;
    const res = await t.call('POST', '/sandbox/seed', undefined, other);
    expect(res.statusCode, res.body).toBe(200);
    const theirs = (res.json() as Seeded).customers.map((c) => c.id);
    expect(((await t.call('GET', '/customers?limit=100', undefined, other)).json() as { data: Array<{ id: string }> }).data.map((c) => c.id).sort()).toEqual([...theirs].sort());
    expect(((await t.call('GET', '/customers?limit=100')).json() as { data: unknown[] }).data.length).toBe(before);
    envelope(await t.call('GET', `/customers/${encodeURIComponent(theirs[0]!)}`), 404);
  });

  it('needs credentials and the MANAGE permission', async () => {
    envelope(await t.call('POST', '/sandbox/seed', undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
    const tok = await t.call('POST', '/tokens', { name: 'viewer', permissions: ['VIEW'] });
    expect(tok.statusCode, tok.body).toBe(201);
    const { clientId, clientSecret } = tok.json() as { clientId: string; clientSecret: string };
    envelope(await t.call('POST', '/sandbox/seed', undefined, { authorization: basic(clientId, clientSecret) }), 403, 'FORBIDDEN');
  });

  it('a refused step stops the seed with that step’s error, in the envelope', async () => {
    const tok = await t.call('POST', '/tokens', { name: 'manager only', permissions: ['MANAGE'] });
    expect(tok.statusCode, tok.body).toBe(201);
    const { clientId, clientSecret } = tok.json() as { clientId: string; clientSecret: string };
    const res = await t.call('POST', '/sandbox/seed', undefined, { authorization: basic(clientId, clientSecret) });
    // MANAGE alone creates customers but may not send payments (TRANSACT).
    const env = envelope(res, 403, 'FORBIDDEN');
    expect(env.message).toMatch(/^Seed stopped at POST \/quotes: /);
  });

  it('is a sandbox extension in the OpenAPI document', async () => {
    const doc = (await t.call('GET', '/openapi.json', undefined, { authorization: '' })).json() as { paths: Record<string, Record<string, Record<string, unknown>>> };
    expect(doc.paths['/sandbox/seed']!.post!['x-extension']).toBe(true);
  });
});
