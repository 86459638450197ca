import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/kernel/db/connect.js';
import { migrate, migrations } from '../../src/kernel/db/migrations.js';
import { basic, freshStore, makeApp, STORE, type TestApp, type TestStore } from '../helpers.js';

// Migrations are one file each in src/kernel/db/migrations/, listed by its index.ts (the
// server is one bundle: no readdir at run time). The names are the ones kysely_migration
// has recorded since each migration landed, so a store migrated by older code opens
// without running anything again.

const FOLDER = new URL('../../src/kernel/db/migrations/', import.meta.url);

describe(`the migrations folder (${STORE})`, () => {
  it('the index lists exactly the NNNN_purpose.ts files of the folder, in name order, each by its own module', async () => {
    const files = readdirSync(FOLDER)
      .filter((f) => /^\d{4}_[a-z0-9_]+\.ts$/.test(f))
      .sort();
    const listed = Object.keys(migrations());
    expect(listed).toEqual(files.map((f) => f.slice(0, -'.ts'.length)));
    for (const f of files) {
      const mod = (await import(new URL(f, FOLDER).href)) as { up?: unknown };
      expect(typeof mod.up, f).toBe('function');
      expect(migrations()[f.slice(0, -3)]!.up, f).toBe(mod.up);
    }
    // Nothing else in the folder but the index and what the files share.
    expect(readdirSync(FOLDER).filter((f) => !files.includes(f)).sort()).toEqual(['index.ts', 'support.ts']);
  });

  it('a fresh store applies every migration once, in name order; a second start applies none', async () => {
    const ts = await freshStore();
    try {
      const applied = await migrate(ts.store);
      expect(applied).toEqual(Object.keys(migrations()).sort());
      expect(await migrate(ts.store)).toEqual([]);
    } finally {
      await ts.store.close();
      await ts.drop();
    }
  });
});

// test/fixtures/store-ac49a31.sqlite.gz: a SQLite store made by the code of commit ac49a31
// (the last one with every migration in one migrations.ts), run from a worktree of that
// commit: openStore on a new file, startServer with the credentials below, POST /customers
// (the customer below), close, journal_mode DELETE, VACUUM, gzip -9.
const FIXTURE = new URL('../fixtures/store-ac49a31.sqlite.gz', import.meta.url);
const FIXTURE_AUTH = basic('fixture-token-id', 'fixture-client-secret');
const FIXTURE_CUSTOMER = 'Customer:01a24a1a-93a9-7279-8236-edc8b2cb9b45';
/** The last migration the fixture's code had: later ones run when it is opened. */
const FIXTURE_LAST_MIGRATION = '0032_postings_without_entry_columns';

describe(`a store migrated by older code (SQLite file of ac49a31; ${STORE} run)`, () => {
  let dir: string | undefined;
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  const recorded = (file: string): { name: string; timestamp: string }[] => {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare('select name, timestamp from kysely_migration order by name').all() as { name: string; timestamp: string }[];
    } finally {
      db.close();
    }
  };

  it('opens without running a migration again, its history unchanged, and serves its customer', async () => {
    dir = mkdtempSync(join(tmpdir(), 'payments-old-store-'));
    const file = join(dir, 'store.sqlite');
    writeFileSync(file, gunzipSync(readFileSync(FIXTURE)));
    copyFileSync(file, join(dir, 'as-made.sqlite'));
    const before = recorded(file);
    // The fixture has every migration up to its making; migrations added since (0034 onwards)
    // run on it, and only they.
    const all = Object.keys(migrations()).sort();
    const made = all.filter((n) => n <= FIXTURE_LAST_MIGRATION);
    expect(before.map((r) => r.name)).toEqual(made);

    const store = await openStore({ kind: 'sqlite', location: file });
    expect((await migrate(store)).sort()).toEqual(all.filter((n) => n > FIXTURE_LAST_MIGRATION));
    const testStore: TestStore = { store, drop: async () => {} };
    t = await makeApp({
      testStore,
      env: {
        PAYMENTS_API_TOKEN_ID: 'fixture-token-id',
        PAYMENTS_API_CLIENT_SECRET: 'fixture-client-secret',
        PAYMENTS_SECRET_KEY: 'fixture-secret-0123456789-abcdefghijklmn',
      },
    });
    const res = await t.call('GET', `/customers/${FIXTURE_CUSTOMER}`, undefined, { authorization: FIXTURE_AUTH });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: FIXTURE_CUSTOMER, platformCustomerId: 'fixture-customer-1', customerType: 'INDIVIDUAL', fullName: 'Jane Smith', birthDate: '1990-01-15' });
    await t.close();
    t = undefined;
    expect(recorded(file).filter((r) => r.name <= FIXTURE_LAST_MIGRATION)).toEqual(before);
    expect(recorded(file).filter((r) => r.name <= FIXTURE_LAST_MIGRATION)).toEqual(recorded(join(dir, 'as-made.sqlite')));
  });
});
