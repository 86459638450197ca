import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Sealer, sealingKeyOf, SECRET_FILE_NAME } from '../../src/kernel/sealed.js';
import { openWebhookKey, verifyWebhookSignature } from '../../src/kernel/webhook-keys.js';
import { makeApp, STORE, storeSeries, type TestApp } from '../helpers.js';
import { Receiver } from '../webhook-receiver.js';

// The webhook signing private key at rest: sealed with the key derived from the one server
// secret (PAYMENTS_SECRET_KEY, or the data directory's / memory's / store's secret), opened
// only to sign; plaintext rows from before are sealed at start.

let receiver: Receiver;
beforeAll(async () => {
  receiver = await new Receiver().start();
});
afterAll(async () => receiver.stop());

async function storedKeys(t: TestApp): Promise<{ id: string; webhook_private_key: string | null; webhook_public_key: string | null }[]> {
  return t.store.db.selectFrom('platforms').select(['id', 'webhook_private_key', 'webhook_public_key']).execute();
}

/** Send a TEST webhook through the API and check its signature against `publicKey`. */
async function sendsVerifiable(t: TestApp, publicKey: string): Promise<void> {
  expect((await t.call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
  const before = receiver.tests.length;
  const res = await t.call('POST', '/sandbox/webhooks/test');
  expect(res.statusCode, res.body).toBe(200);
  const got = receiver.tests[before]!;
  expect(verifyWebhookSignature(got.body, String(got.headers['x-service-signature']), publicKey)).toBe(true);
}

describe(`webhook signing keys at rest (${STORE})`, () => {
  it('the stored column holds a sealed value, never the plaintext key; signatures still verify', async () => {
    const t = await makeApp();
    try {
      const created = await t.call('POST', '/admin/platforms', { name: 'second' }, { authorization: 'Bearer test-admin-key' });
      expect(created.statusCode, created.body).toBe(201);
      const rows = await storedKeys(t);
      expect(rows).toHaveLength(2);
      for (const r of rows) {
        const stored = r.webhook_private_key!;
        expect(stored).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
        expect(stored.split('.')[1]).toBe(t.running.app.deps.sealer.keyId);
        const hex = openWebhookKey(r.id, stored)!;
        expect(hex).toMatch(/^[0-9a-f]{64}$/);
        expect(stored).not.toContain(hex);
        expect(stored).not.toContain(Buffer.from(hex, 'hex').toString('base64'));
        expect(stored).not.toContain(Buffer.from(hex, 'hex').toString('base64url'));
        // Bound to its row: another platform's context does not open it.
        expect(openWebhookKey(rows.find((o) => o.id !== r.id)!.id, stored)).toBeUndefined();
      }
      const pk = (await t.call('GET', '/sandbox/webhooks/public-key')).json().publicKey as string;
      await sendsVerifiable(t, pk);
    } finally {
      await t.close();
    }
  });

  it('a restart on the same store signs with the same key; plaintext keys from before are sealed at start', async () => {
    const series = await storeSeries();
    try {
      const first = await makeApp({ testStore: await series.open() });
      const pk = (await first.call('GET', '/sandbox/webhooks/public-key')).json().publicKey as string;
      const [row] = await storedKeys(first);
      const hex = openWebhookKey(row!.id, row!.webhook_private_key!)!;
      // A row as migration 0007 left it: the scalar in plaintext.
      await first.store.db.updateTable('platforms').set({ webhook_private_key: hex }).where('id', '=', row!.id).execute();
      await first.close();

      const second = await makeApp({ testStore: await series.open() });
      try {
        const [again] = await storedKeys(second);
        expect(again!.webhook_private_key).not.toBe(hex);
        expect(again!.webhook_private_key!.startsWith(`v1.${second.running.app.deps.sealer.keyId}.`)).toBe(true);
        expect(again!.webhook_public_key).toBe(pk);
        await sendsVerifiable(second, pk);
        if (STORE === 'sqlite') {
          // The server secret lives in the data directory, owner-only; nothing in the store.
          expect(second.running.secretSource).toBe('data-directory');
          const file = second.running.secretFile!;
          expect(file).toBe(join(dirname(second.store.file!), SECRET_FILE_NAME));
          expect(statSync(file).mode & 0o777).toBe(0o600);
          expect(readFileSync(file, 'utf8').trim().length).toBeGreaterThanOrEqual(32);
          expect(await second.store.db.selectFrom('data_keys').selectAll().execute()).toEqual([]);
        } else {
          expect(second.running.secretSource).toBe('store');
        }
      } finally {
        await second.close();
      }
    } finally {
      await series.drop();
    }
  });

  it('PAYMENTS_SECRET_KEY: the sealing key is HKDF-SHA256 of it; PAYMENTS_DATA_KEY (deprecated) still opens what it sealed', async () => {
    const secret = randomBytes(32).toString('base64');
    const dataKey = randomBytes(32);
    const series = await storeSeries();
    try {
      const old = await makeApp({ testStore: await series.open(), env: { PAYMENTS_DATA_KEY: dataKey.toString('hex') } });
      expect(old.running.secretSource).toBe('PAYMENTS_DATA_KEY');
      const pk = (await old.call('GET', '/sandbox/webhooks/public-key')).json().publicKey as string;
      expect((await storedKeys(old))[0]!.webhook_private_key!.split('.')[1]).toBe(new Sealer(dataKey).keyId);
      await old.close();

      const t = await makeApp({ testStore: await series.open(), env: { PAYMENTS_SECRET_KEY: secret, PAYMENTS_DATA_KEY: dataKey.toString('hex') } });
      try {
        expect(t.running.secretSource).toBe('PAYMENTS_SECRET_KEY');
        expect(t.running.app.deps.sealer.keyId).toBe(new Sealer(sealingKeyOf(secret)).keyId);
        // Re-sealed with the new key at start, same key pair.
        expect((await storedKeys(t))[0]!.webhook_private_key!.split('.')[1]).toBe(new Sealer(sealingKeyOf(secret)).keyId);
        await sendsVerifiable(t, pk);
        if (STORE === 'sqlite') expect(existsSync(join(dirname(t.store.file!), SECRET_FILE_NAME))).toBe(false);
      } finally {
        await t.close();
      }
    } finally {
      await series.drop();
    }
  });

  it('refuses a short PAYMENTS_SECRET_KEY without echoing it', () => {
    expect(() => loadConfig({ PAYMENTS_SECRET_KEY: 'short-secret' })).toThrow(/PAYMENTS_SECRET_KEY must be a high-entropy string of at least 32 characters/);
    try {
      loadConfig({ PAYMENTS_SECRET_KEY: 'short-secret' });
    } catch (err) {
      expect((err as Error).message).not.toContain('short-secret');
    }
    expect(loadConfig({ PAYMENTS_SECRET_KEY: ` ${'s'.repeat(40)}\n` }).secretKey).toBe('s'.repeat(40));
  });
});
