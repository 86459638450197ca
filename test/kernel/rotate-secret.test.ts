import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/kernel/db/connect.js';
import { rotateSecret, RotationRefused } from '../../src/kernel/rotate-secret.js';
import { openSealed, Sealer, sealedKeyId, sealingKeyOf, SECRET_FILE_NAME } from '../../src/kernel/sealed.js';
import { verifyWebhookSignature } from '../../src/kernel/webhook-keys.js';
import { makeApp, STORE, storeSeries, type TestApp } from '../helpers.js';
import { Receiver } from '../webhook-receiver.js';
import { walletCustomer } from '../wallet-flows.js';

// Rotating the server secret (docs/reliability.md "Rotating the server secret"): every sealed
// value (webhook signing keys, beneficial owners' identifiers, sealed stored answers) is
// re-sealed under the new secret in one transaction; a server started with the new secret
// reads them all and signs with the same key pair; the old secret opens nothing any more.

const OLD = 'old-secret-0123456789-abcdefghijklmnop';
const NEW = 'new-secret-9876543210-zyxwvutsrqponmlk';
const keyIdOf = (secret: string) => new Sealer(sealingKeyOf(secret)).keyId;
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = join(ROOT, 'bin', 'payments-service.js');

const PERSONAL = {
  firstName: 'Jane', lastName: 'Smith', birthDate: '1978-06-15', nationality: 'US',
  address: { line1: '1 Market Street', city: 'San Francisco', state: 'CA', postalCode: '94105', country: 'US' },
  idType: 'SSN', identifier: '123-45-6789',
};

async function sealedValues(t: { store: TestApp['store'] }): Promise<string[]> {
  const keys = (await t.store.db.selectFrom('platforms').select('webhook_private_key').execute()).map((r) => r.webhook_private_key!);
  const ids = (await t.store.db.selectFrom('beneficial_owners').select('identifier_sealed').execute()).map((r) => r.identifier_sealed!);
  const answers = (await t.store.db.selectFrom('idempotency_keys').select('response_body').where('response_body', 'like', 'v1.%').execute()).map((r) => r.response_body!);
  return [...keys, ...ids, ...answers];
}

describe(`rotate the server secret (${STORE})`, () => {
  const receiver = new Receiver();
  afterAll(async () => receiver.stop());

  it('re-seals every sealed value under the new secret in one transaction; a restart with it reads them and signs with the same key', async () => {
    await receiver.start();
    const series = await storeSeries();
    try {
      const first = await makeApp({ testStore: await series.open(), env: { PAYMENTS_SECRET_KEY: OLD } });
      const b = await first.call('POST', '/customers', { customerType: 'BUSINESS', businessInfo: { legalName: 'Rotate Inc', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber: 'RN-9' } });
      const business = (b.json() as { id: string }).id;
      const owner = await first.call('POST', '/beneficial-owners', { customerId: business, roles: ['UBO'], ownershipPercentage: 60, personalInfo: PERSONAL }, { 'idempotency-key': 'owner-rotate' });
      expect(owner.statusCode, owner.body).toBe(201);
      const ownerId = (owner.json() as { id: string }).id;
      const publicKey = (await first.call('GET', '/sandbox/webhooks/public-key')).json().publicKey as string;
      const before = await sealedValues(first);
      expect(before).toHaveLength(3);
      for (const v of before) expect(sealedKeyId(v)).toBe(keyIdOf(OLD));
      await first.close();

      const opened = await series.open();
      const result = await rotateSecret(opened.store, { secretKey: OLD }, { newSecret: NEW });
      expect(result).toMatchObject({ source: 'PAYMENTS_SECRET_KEY', keptIn: 'environment', newKeyId: keyIdOf(NEW), resealed: { webhookKeys: 1, identifiers: 1, storedAnswers: 1 }, unreadable: 0 });
      expect(result.generatedSecret).toBeUndefined();
      const after = await sealedValues(opened);
      for (const v of after) expect(sealedKeyId(v)).toBe(keyIdOf(NEW));
      for (const v of before) expect(after).not.toContain(v);
      expect(await opened.store.db.selectFrom('data_keys').selectAll().execute()).toEqual([]);
      await opened.store.close();

      const second = await makeApp({ testStore: await series.open(), env: { PAYMENTS_SECRET_KEY: NEW } });
      try {
        expect(second.running.app.deps.sealer.keyId).toBe(keyIdOf(NEW));
        const got = await second.call('GET', `/beneficial-owners/${ownerId}`);
        expect(got.json()).toMatchObject({ personalInfo: { identifier: '123-45-6789' } });
        const replay = await second.call('POST', '/beneficial-owners', { customerId: business, roles: ['UBO'], ownershipPercentage: 60, personalInfo: PERSONAL }, { 'idempotency-key': 'owner-rotate' });
        expect(replay.statusCode, replay.body).toBe(201);
        expect(replay.headers['idempotent-replayed']).toBe('true');
        expect(replay.body).toBe(owner.body);
        expect((await second.call('GET', '/sandbox/webhooks/public-key')).json().publicKey).toBe(publicKey);
        expect((await second.call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
        const n = receiver.tests.length;
        expect((await second.call('POST', '/sandbox/webhooks/test')).statusCode).toBe(200);
        const test = receiver.tests[n]!;
        expect(verifyWebhookSignature(test.body, String(test.headers['x-service-signature']), publicKey)).toBe(true);
      } finally {
        await second.close();
      }
    } finally {
      await series.drop();
    }
  });

  it('refuses when a value opens with no key at hand, changing nothing; --allow-unreadable leaves such values as they are', async () => {
    const series = await storeSeries();
    try {
      const first = await makeApp({ testStore: await series.open(), env: { PAYMENTS_SECRET_KEY: OLD } });
      const b = await first.call('POST', '/customers', { customerType: 'BUSINESS', businessInfo: { legalName: 'Lost Key Inc', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber: 'RN-8' } });
      const owner = await first.call('POST', '/beneficial-owners', { customerId: (b.json() as { id: string }).id, roles: ['UBO'], ownershipPercentage: 60, personalInfo: PERSONAL });
      const ownerId = (owner.json() as { id: string }).id;
      // Sealed under a secret nobody has any more.
      const lost = new Sealer(sealingKeyOf('lost-secret-abcdefghijklmnopqrstuvwxyz012')).seal('999-99-9999', `beneficial_owners.identifier:${ownerId}`);
      await first.store.db.updateTable('beneficial_owners').set({ identifier_sealed: lost }).where('id', '=', ownerId).execute();
      const before = await sealedValues(first);
      await first.close();

      const s = await series.open();
      await expect(rotateSecret(s.store, { secretKey: OLD }, { newSecret: NEW })).rejects.toThrow(RotationRefused);
      expect(await sealedValues(s)).toEqual(before); // one transaction: the webhook key re-sealed before the refusal rolled back
      const r = await rotateSecret(s.store, { secretKey: OLD }, { newSecret: NEW, allowUnreadable: true });
      expect(r).toMatchObject({ resealed: { webhookKeys: 1, identifiers: 0 }, unreadable: 1 });
      const row = await s.store.db.selectFrom('beneficial_owners').select('identifier_sealed').where('id', '=', ownerId).executeTakeFirstOrThrow();
      expect(row.identifier_sealed).toBe(lost);
      // The same secret again: nothing would change.
      await expect(rotateSecret(s.store, { secretKey: NEW }, { newSecret: NEW })).rejects.toThrow(/current one/);
      await s.store.close();
    } finally {
      await series.drop();
    }
  });
});

// The command, run for real on a fresh store: `platform create` seals a webhook key, then
// `rotate-secret` re-seals it.
function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ['PAYMENTS_ADMIN_KEY', 'DATABASE_URL', 'PORT', 'HOST', 'TEST_STORE', 'PAYMENTS_SECRET_KEY', 'PAYMENTS_NEW_SECRET_KEY', 'PAYMENTS_DATA_KEY']) delete base[k];
  return new Promise((ok) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...base, LOG_LEVEL: 'warn', ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      ok({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

async function pgAdmin(q: string): Promise<void> {
  const c = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await c.connect();
  try {
    await c.query(q);
  } finally {
    await c.end();
  }
}

describe(`payments-service rotate-secret (${STORE})`, () => {
  it('with PAYMENTS_SECRET_KEY and PAYMENTS_NEW_SECRET_KEY: re-seals, says so; the old secret can no longer rotate (opens nothing)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payments-rotate-'));
    let url = `sqlite:${join(dir, 'store.sqlite')}`;
    let database: string | undefined;
    if (STORE === 'postgres') {
      database = `rotate_${randomBytes(6).toString('hex')}`;
      await pgAdmin(`CREATE DATABASE "${database}"`);
      const u = new URL(process.env.TEST_DATABASE_URL!);
      u.pathname = `/${database}`;
      url = u.toString();
    }
    try {
      const created = await cli(['platform', 'create', '--name', 'rotating'], { DATABASE_URL: url, PAYMENTS_SECRET_KEY: OLD });
      expect(created.code, created.stderr).toBe(0);
      const rotated = await cli(['rotate-secret'], { DATABASE_URL: url, PAYMENTS_SECRET_KEY: OLD, PAYMENTS_NEW_SECRET_KEY: NEW });
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(rotated.stdout).toMatch(/Re-sealed under the new secret \(key id [A-Za-z0-9_-]+\), in one transaction: 1 webhook signing key\(s\), 0 identifier\(s\), 0 stored answer\(s\)\./);
      expect(rotated.stdout).toContain('PAYMENTS_SECRET_KEY');
      const store = await openStore(STORE === 'postgres' ? { kind: 'postgres', location: url } : { kind: 'sqlite', location: join(dir, 'store.sqlite') });
      try {
        const rows = await store.db.selectFrom('platforms').select(['name', 'webhook_private_key']).execute();
        expect(rows.map((r) => r.name)).toEqual(['rotating']);
        expect(sealedKeyId(rows[0]!.webhook_private_key!)).toBe(keyIdOf(NEW));
      } finally {
        await store.close();
      }
      const stale = await cli(['rotate-secret'], { DATABASE_URL: url, PAYMENTS_SECRET_KEY: OLD, PAYMENTS_NEW_SECRET_KEY: 'third-secret-abcdefghijklmnopqrstuvwxyz' });
      expect(stale.code).toBe(1);
      expect(stale.stderr).toMatch(/does not open with any key at hand/);
      const bad = await cli(['rotate-secret', '--bogus'], { DATABASE_URL: url, PAYMENTS_SECRET_KEY: NEW });
      expect(bad.code).toBe(2);
    } finally {
      if (database) await pgAdmin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it.runIf(STORE === 'sqlite')('with the secret in the data directory: a new secret is generated into the file (mode 0600)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payments-rotate-'));
    const url = `sqlite:${join(dir, 'store.sqlite')}`;
    try {
      expect((await cli(['platform', 'create', '--name', 'filed'], { DATABASE_URL: url })).code).toBe(0);
      const file = join(dir, SECRET_FILE_NAME);
      const old = readFileSync(file, 'utf8').trim();
      const rotated = await cli(['rotate-secret'], { DATABASE_URL: url });
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(rotated.stdout).toContain(`The new secret is in ${file}`);
      const fresh = readFileSync(file, 'utf8').trim();
      expect(fresh).not.toBe(old);
      expect(fresh.length).toBeGreaterThanOrEqual(32);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const store = await openStore({ kind: 'sqlite', location: join(dir, 'store.sqlite') });
      try {
        for (const r of await store.db.selectFrom('platforms').select('webhook_private_key').execute()) expect(sealedKeyId(r.webhook_private_key!)).toBe(keyIdOf(fresh));
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe(`rotate the server secret: the areas' sealed columns (${STORE})`, () => {
  it('re-seals embedded-wallet seeds (and every other listed column) so they open under the new secret only', async () => {
    const series = await storeSeries();
    try {
      const first = await makeApp({ testStore: await series.open(), env: { PAYMENTS_SECRET_KEY: OLD } });
      // A customer with an email gets an EMBEDDED_WALLET account, its seed sealed at rest.
      await walletCustomer(first);
      const before = await first.store.db.selectFrom('embedded_wallets').select(['account_id', 'mnemonic']).execute();
      expect(before.length).toBeGreaterThan(0);
      for (const w of before) expect(sealedKeyId(w.mnemonic)).toBe(keyIdOf(OLD));
      await first.close();

      const opened = await series.open();
      const result = await rotateSecret(opened.store, { secretKey: OLD }, { newSecret: NEW });
      expect(result.resealed.areaValues).toBeGreaterThanOrEqual(before.length);
      // The keyring holds both keys in this process: each value opens, and is the seed it was.
      new Sealer(sealingKeyOf(NEW)).register();
      new Sealer(sealingKeyOf(OLD)).register();
      for (const w of await opened.store.db.selectFrom('embedded_wallets').select(['account_id', 'mnemonic']).execute()) {
        expect(sealedKeyId(w.mnemonic)).toBe(keyIdOf(NEW));
        const context = `embedded_wallets.mnemonic:${w.account_id}`;
        const seed = openSealed(w.mnemonic, context);
        expect(seed).toMatch(/^[0-9a-f]{64}$/);
        expect(seed).toBe(openSealed(before.find((b) => b.account_id === w.account_id)!.mnemonic, context));
      }
      await opened.store.close();
    } finally {
      await series.drop();
    }
  });
});
