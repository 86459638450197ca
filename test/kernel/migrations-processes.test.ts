import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { migrations } from '../../src/kernel/db/migrations.js';
import { basic, V } from '../helpers.js';
import { freePort, type Proc, sleep, spawnServer } from '../server-process.js';

// Several server processes (bin/payments-service.js serve) started at the same moment on one
// new SQLite file: each migration must be applied once, by one of them, and every process
// must start. Before the migration run was one transaction under the file's write lock,
// three of four such processes exited ("table … already exists", "no such column …") and
// the file's schema could be left half made. And a process that finds another holding the
// file's write lock for longer than busy_timeout (5 s) waits for it instead of failing.
// SQLite only: on PostgreSQL the migrator takes an advisory lock (migrate-concurrent-drop
// covers its runs beside other schemas).

const ON_SQLITE = (process.env.TEST_STORE ?? 'sqlite') === 'sqlite';
const TOKEN_ID = 'migrations-processes-token';
const SECRET = 'migrations-processes-secret';
const AUTH = basic(TOKEN_ID, SECRET);

let dir = '';
const procs: Proc[] = [];

afterEach(async () => {
  for (const p of procs) if (!p.done) p.child.kill('SIGKILL');
  await Promise.all(procs.map((p) => p.exited));
  procs.length = 0;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = '';
});

/** 200 from /healthz within `ms`, or the process's exit code and log. */
async function healthy(p: Proc, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (p.done) throw new Error(`the server exited during start-up: ${p.output()}`);
    const status = await fetch(`${p.base}/healthz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    await sleep(50);
  }
  throw new Error(`no 200 from /healthz within ${ms} ms: ${p.output()}`);
}

function recorded(file: string): string[] {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare('select name from kysely_migration order by name').all() as { name: string }[]).map((r) => r.name);
  } finally {
    db.close();
  }
}

describe.skipIf(!ON_SQLITE)('migrations when several processes start on one SQLite file', () => {
  it('four processes started together on a new file all start; each migration is recorded once; they serve one platform', async () => {
    dir = mkdtempSync(join(tmpdir(), 'migrations-processes-'));
    const file = join(dir, 'payments.sqlite');
    const ports = await Promise.all([0, 1, 2, 3].map(() => freePort()));
    for (const port of ports) procs.push(spawnServer({ databaseUrl: `sqlite:${file}`, port, tokenId: TOKEN_ID, secret: SECRET }));
    await Promise.all(procs.map((p) => healthy(p, 30_000)));

    const names = recorded(file);
    expect(names).toEqual(Object.keys(migrations()).sort());
    expect(new Set(names).size).toBe(names.length);

    // The default platform was made once: every process answers its credential, with the same platform.
    const customers = await Promise.all(
      procs.map(async (p) => {
        const res = await fetch(`${p.base}${V}/customers`, { headers: { authorization: AUTH } });
        expect(res.status, p.output()).toBe(200);
        return (await res.json()) as { totalCount: number };
      }),
    );
    expect(customers.map((c) => c.totalCount)).toEqual([0, 0, 0, 0]);
    // A customer one process makes is seen by another (one database, one platform).
    const made = await fetch(`${procs[0]!.base}${V}/customers`, {
      method: 'POST',
      headers: { authorization: AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ platformCustomerId: 'mp-1', customerType: 'INDIVIDUAL', fullName: 'Ada Lovelace' }),
    });
    expect(made.status, await made.clone().text()).toBe(201);
    const id = ((await made.json()) as { id: string }).id;
    const seen = await fetch(`${procs[3]!.base}${V}/customers/${encodeURIComponent(id)}`, { headers: { authorization: AUTH } });
    expect(seen.status).toBe(200);

    // One server secret beside the file (written whole, then linked: no draft left behind).
    expect(readdirSync(dir).filter((f) => f.startsWith('payments-secret.key'))).toEqual(['payments-secret.key']);
    const db = new Database(file, { readonly: true });
    try {
      expect((db.prepare('select count(*) as n from platforms').get() as { n: number }).n).toBe(1);
    } finally {
      db.close();
    }
  }, 60_000);

  it('a process that finds the write lock held past busy_timeout waits for it, then migrates and starts', async () => {
    dir = mkdtempSync(join(tmpdir(), 'migrations-processes-'));
    const file = join(dir, 'payments.sqlite');
    // Another process holds the file's write lock for 7 s (longer than busy_timeout, 5 s), as
    // a long migration of another server would.
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const db = require('better-sqlite3')(process.argv[1]);
         db.pragma('journal_mode = WAL');
         db.exec('begin immediate');
         process.stdout.write('locked\\n');
         setTimeout(() => { db.exec('commit'); db.close(); process.stdout.write('released\\n'); }, 7000);`,
        file,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const holderExited = new Promise<number | null>((ok) => holder.on('exit', ok));
    let holderOut = '';
    holder.stdout!.setEncoding('utf8').on('data', (s: string) => (holderOut += s));
    while (!holderOut.includes('locked')) await sleep(20);
    const lockedAt = Date.now();

    const port = await freePort();
    const server = spawnServer({ databaseUrl: `sqlite:${file}`, port, tokenId: TOKEN_ID, secret: SECRET });
    procs.push(server);
    await healthy(server, 40_000);
    // It could not have migrated before the lock was released.
    expect(holderOut).toContain('released');
    expect(Date.now() - lockedAt).toBeGreaterThanOrEqual(7000);
    expect(await holderExited).toBe(0);
    expect(recorded(file)).toEqual(Object.keys(migrations()).sort());
    const res = await fetch(`${server.base}${V}/customers`, { headers: { authorization: AUTH } });
    expect(res.status).toBe(200);
  }, 60_000);
});
