import { randomBytes } from 'node:crypto';
import { createConnection } from 'node:net';
import pg from 'pg';
import { SIGNATURE_HEADER } from '../../src/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, SandboxError, startSandbox } from '../../src/testing.js';

// `payments-service/testing` from the sources, used the way a platform's test suite does:
// start, call the API with the returned credentials, fund, pay, move the clock, wait for the
// payment's webhook, a forged delivery, an isolated second platform, reset, stop. On the
// postgres project the sandbox gets a DATABASE_URL of its own: a new database on the
// TEST_DATABASE_URL server, dropped afterwards.

const serverUrl = process.env.TEST_STORE === 'postgres' ? process.env.TEST_DATABASE_URL : undefined;
const database = `sandbox_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: serverUrl });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

interface Account { id: string; balance: { amount: number; currency: { code: string } } }

describe('payments-service/testing: startSandbox', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    if (!serverUrl) {
      sandbox = await startSandbox();
      return;
    }
    await admin(`CREATE DATABASE "${database}"`);
    const url = new URL(serverUrl);
    url.pathname = `/${database}`;
    sandbox = await startSandbox({ databaseUrl: url.toString() });
  });
  afterAll(async () => {
    await sandbox?.stop();
    if (serverUrl) await admin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  });

  it('starts on a free port and answers with the returned credentials', async () => {
    expect(sandbox.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/2025-10-13$/);
    const res = await fetch(`${sandbox.baseUrl}/config`, { headers: { authorization: sandbox.credentials.authorization } });
    expect(res.status).toBe(200);
    const anonymous = await fetch(`${sandbox.baseUrl}/config`);
    expect(anonymous.status).toBe(401);
  });

  it('funds, pays, advances the clock and waits for the signed COMPLETED webhook', async () => {
    await sandbox.request('PATCH', '/sandbox/settings', { skipVerificationPaperwork: true });
    const customer = await sandbox.request<{ id: string }>('POST', '/customers', {
      customerType: 'INDIVIDUAL',
      fullName: 'Pat Payer',
      currencies: ['USD'],
      endUserTermsConsent: { acceptedAt: '2025-10-01T00:00:00Z', ipAddress: '203.0.113.9', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' },
    });
    const accounts = await sandbox.request<{ data: Account[] }>('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(customer.id)}`);
    const usd = accounts.data.find((a) => a.balance.currency.code === 'USD')!;
    const funded = (await sandbox.fund(usd.id, 50_000)) as unknown as Account;
    expect(funded.balance.amount).toBe(50_000);
    const external = await sandbox.request<{ id: string }>('POST', '/customers/external-accounts', {
      customerId: customer.id,
      currency: 'USD',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '123456789', routingNumber: '021000021', bankName: 'Sandbox Bank', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Rita Receiver', countryOfResidence: 'US' } },
    });
    // The receiver becomes the endpoint before the payment, so its webhooks go there.
    const test = await sandbox.waitForWebhook('TEST');
    expect(test.type).toBe('TEST');
    const quote = await sandbox.request<{ transactionId: string }>('POST', '/quotes', {
      source: { sourceType: 'ACCOUNT', accountId: usd.id },
      destination: { destinationType: 'ACCOUNT', accountId: external.id },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 1_000,
      immediatelyExecute: true,
    });
    await sandbox.advanceClock('1h');
    const completed = await sandbox.waitForWebhook('OUTGOING_PAYMENT.COMPLETED', { where: (w) => (w.data as { id?: string }).id === quote.transactionId });
    expect(completed.headers['x-service-signature']).toBeTruthy();
    const tx = await sandbox.request<{ status: string }>('GET', `/transactions/${encodeURIComponent(quote.transactionId)}`);
    expect(tx.status).toBe('COMPLETED');
  });

  it('a wait that sees no webhook of the type fails after its timeout', async () => {
    await expect(sandbox.waitForWebhook('OUTGOING_PAYMENT.FAILED', { timeoutMs: 200 })).rejects.toThrow(/no OUTGOING_PAYMENT.FAILED webhook within 200 ms/);
  });

  it('createPlatform makes an isolated platform: the other one\'s customer is 404', async () => {
    const mine = await sandbox.request<{ id: string }>('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Only Mine', currencies: ['USD'] });
    const other = await sandbox.createPlatform('Other platform');
    expect(other.id).not.toBe(sandbox.id);
    const err = await other.request('GET', `/customers/${encodeURIComponent(mine.id)}`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxError);
    expect((err as SandboxError).envelope).toMatchObject({ status: 404, code: expect.any(String), message: expect.any(String) });
    const list = await other.request<{ data: unknown[] }>('GET', '/customers');
    expect(list.data).toEqual([]);
  });

  it('snapshot and restore: the platform back as saved, a started receiver still its webhook endpoint', async () => {
    const other = await sandbox.createPlatform('Snapshot platform');
    await other.request('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Kept Customer', currencies: ['USD'] });
    const snap = await other.snapshot('entry');
    expect(snap).toMatchObject({ name: 'entry', tables: { customers: 1 } });
    const taken = await other.snapshot('entry').catch((e: unknown) => e);
    expect((taken as SandboxError).envelope).toMatchObject({ status: 409, code: 'CONFLICT' });
    // The receiver starts after the snapshot: the restored configuration has no endpoint.
    expect((await other.waitForWebhook('TEST')).type).toBe('TEST');
    await other.request('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Later Customer', currencies: ['USD'] });
    const restored = await other.restore('entry');
    expect(restored).toMatchObject({ name: 'entry', rows: snap.rows, sandboxTime: snap.sandboxTime });
    const list = await other.request<{ data: Array<{ fullName: string }> }>('GET', '/customers');
    expect(list.data.map((c) => c.fullName)).toEqual(['Kept Customer']);
    // What was received before is forgotten; the receiver is the endpoint again (its TEST webhook).
    expect(other.webhooks.every((w) => w.type === 'TEST')).toBe(true);
    expect((await other.waitForWebhook('TEST')).type).toBe('TEST');
    expect((await other.request<{ webhookEndpoint: string }>('GET', '/config')).webhookEndpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/webhooks$/);
    expect((await other.snapshot('entry', { replace: true })).name).toBe('entry');
  });

  it('a delivery whose signature does not verify fails the wait', async () => {
    const { webhookEndpoint } = await sandbox.request<{ webhookEndpoint: string }>('GET', '/config');
    const forged = JSON.stringify({ id: 'Webhook:forged', type: 'OUTGOING_PAYMENT.COMPLETED', timestamp: new Date().toISOString(), data: { id: 'Transaction:forged' } });
    const answer = await fetch(webhookEndpoint, { method: 'POST', headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: Buffer.from('not a signature').toString('base64') }, body: forged });
    expect(answer.status).toBe(400);
    await expect(sandbox.waitForWebhook('OUTGOING_PAYMENT.COMPLETED', { timeoutMs: 1_000, where: (w) => (w.data as { id?: string }).id === 'Transaction:forged' })).rejects.toThrow(/bad X-Service-Signature signature/);
  });

  it('reset empties the platform; stop closes the port', async () => {
    const before = await sandbox.request<{ data: unknown[] }>('GET', '/customers');
    expect(before.data.length).toBeGreaterThan(0);
    await sandbox.reset();
    const after = await sandbox.request<{ data: unknown[] }>('GET', '/customers');
    expect(after.data).toEqual([]);
    const port = Number(new URL(sandbox.baseUrl).port);
    expect(await portOpen(port)).toBe(true);
    await sandbox.stop();
    expect(await portOpen(port)).toBe(false);
  });
});
