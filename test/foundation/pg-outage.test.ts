import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DB_CONNECT_TIMEOUT_MS, loadConfig } from '../../src/config.js';
import { basic, V } from '../helpers.js';

// The process outlives its PostgreSQL server (issue 33, docs/reliability.md "The database goes
// away"): a throwaway cluster of its own (initdb into a temp dir, its own free port) under a
// real server process (bin/payments-service.js serve). The database is stopped under keyed
// requests, its backends are terminated, and the server is started before the database:
// the process stays up, answers 503 SERVICE_UNAVAILABLE envelopes (with Retry-After) within a
// bound, /healthz stays 200 while /readyz is 503, and within 5 s of the database's return it
// serves payments again. Runs only where PostgreSQL's server binaries are installed.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = join(ROOT, 'bin', 'payments-service.js');
const TOKEN_ID = 'outage-token-id';
const SECRET = 'outage-client-secret';
const AUTH = basic(TOKEN_ID, SECRET);

function pgBin(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const bin = join(base, v, 'bin');
    if (existsSync(join(bin, 'pg_ctl')) && existsSync(join(bin, 'initdb'))) return bin;
  }
  return undefined;
}

const BIN_DIR = pgBin();
if (!BIN_DIR) console.warn('pg-outage.test.ts skipped: no pg_ctl/initdb under /usr/lib/postgresql/*/bin');

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

interface Proc {
  child: ChildProcess;
  base: string;
  exited: Promise<number | null>;
  done: boolean;
  output(): string;
}

function spawnServer(databaseUrl: string, port: number, extra: Record<string, string> = {}): Proc {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ['PAYMENTS_API_TOKEN_ID', 'PAYMENTS_API_CLIENT_SECRET', 'PAYMENTS_ADMIN_KEY', 'DATABASE_URL', 'PORT', 'HOST', 'TEST_STORE', 'TEST_DATABASE_URL']) delete env[k];
  const child = spawn(process.execPath, [BIN, 'serve'], {
    cwd: ROOT,
    env: { ...env, HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: databaseUrl, PAYMENTS_API_TOKEN_ID: TOKEN_ID, PAYMENTS_API_CLIENT_SECRET: SECRET, LOG_LEVEL: 'warn', ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (out += s));
  const proc: Proc = {
    child,
    base: `http://127.0.0.1:${port}`,
    done: false,
    output: () => out,
    exited: new Promise((ok) => child.on('exit', (code) => ((proc.done = true), ok(code)))),
  };
  return proc;
}

async function ready(p: Proc, withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (p.done) throw new Error(`server exited:\n${p.output()}`);
    const status = await fetch(`${p.base}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`server not ready in ${withinMs} ms:\n${p.output()}`);
    await sleep(50);
  }
}

interface Answer {
  status: number;
  ms: number;
  body: string;
  retryAfter: string | null;
}

async function call(base: string, method: string, path: string, body?: unknown, key?: string): Promise<Answer> {
  const headers: Record<string, string> = { authorization: AUTH };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key) headers['idempotency-key'] = key;
  const t0 = Date.now();
  const res = await fetch(`${base}${V}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), signal: AbortSignal.timeout(20_000) });
  return { status: res.status, body: await res.text(), ms: Date.now() - t0, retryAfter: res.headers.get('retry-after') };
}

function expectUnavailable(a: Answer): void {
  expect(a.status, a.body).toBe(503);
  expect(JSON.parse(a.body)).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
  expect(a.retryAfter).toMatch(/^\d+$/);
}

describe.skipIf(!BIN_DIR)('PostgreSQL outage: the process outlives the database (real processes)', { timeout: 60_000 }, () => {
  const asRoot = process.getuid?.() === 0;
  let dir = '';
  let dbPort = 0;
  let url = '';
  let server: Proc | undefined;
  const others: Proc[] = [];
  let usd = '';

  /** Run a PostgreSQL binary as the cluster's owner (initdb refuses root). */
  function run(cmd: string, args: string[]): string {
    const exe = join(BIN_DIR!, cmd);
    return asRoot ? execFileSync('runuser', ['-u', 'postgres', '--', exe, ...args], { encoding: 'utf8', stdio: 'pipe' }) : execFileSync(exe, args, { encoding: 'utf8', stdio: 'pipe' });
  }
  const startDb = () => run('pg_ctl', ['start', '-w', '-t', '30', '-D', join(dir, 'data'), '-l', join(dir, 'log'), '-o', `-p ${dbPort} -k ${dir} -c listen_addresses=127.0.0.1`]);
  const stopDb = (mode = 'fast') => run('pg_ctl', ['stop', '-w', '-m', mode, '-D', join(dir, 'data')]);

  async function fund(base: string, key = randomUUID()): Promise<Answer> {
    return call(base, 'POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 1_000 }, key);
  }

  /** Fund with new keys until one succeeds; answers how long that took. */
  async function recovers(base: string, withinMs: number): Promise<number> {
    const t0 = Date.now();
    for (;;) {
      const a = await fund(base).catch(() => ({ status: 0, body: 'no answer', ms: 0, retryAfter: null }));
      if (a.status === 200) return Date.now() - t0;
      if (a.status !== 503) throw new Error(`unexpected answer while recovering: ${a.status} ${a.body}`);
      if (Date.now() - t0 > withinMs) throw new Error(`not serving payments ${withinMs} ms after the database returned: ${a.body}`);
      await sleep(100);
    }
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pg-outage-'));
    if (asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(dir, uid, gid);
    }
    run('initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    dbPort = await freePort();
    url = `postgres://postgres@127.0.0.1:${dbPort}/postgres`;
    startDb();
    server = spawnServer(url, await freePort());
    await ready(server, 40_000);
    const accounts = JSON.parse((await call(server.base, 'GET', '/platform/internal-accounts?currency=USD')).body) as { data: { id: string }[] };
    usd = accounts.data[0]!.id;
    expect((await fund(server.base)).status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    for (const p of [server, ...others]) {
      if (p && !p.done) {
        p.child.kill('SIGKILL');
        await p.exited;
      }
    }
    if (dir) {
      try {
        stopDb('immediate');
      } catch {
        /* already stopped */
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stopped under keyed requests: 503 envelopes within a bound, alive but not ready; serves again within 5 s of the restart', async () => {
    const s = server!;
    const inFlight = Array.from({ length: 4 }, () => fund(s.base));
    stopDb('fast');
    const during = await Promise.all([...inFlight, ...Array.from({ length: 4 }, () => fund(s.base))]);
    for (const a of during) {
      if (a.status !== 200) expectUnavailable(a);
      expect(a.ms).toBeLessThan(8_000);
    }
    // Reads too, and the cached authentication (it must not answer from memory either way).
    const keys = Array.from({ length: 3 }, () => randomUUID());
    for (const key of keys) {
      const a = await fund(s.base, key);
      expectUnavailable(a);
      expect(a.ms).toBeLessThan(8_000);
    }
    expectUnavailable(await call(s.base, 'GET', '/platform/internal-accounts?currency=USD'));
    expect((await fetch(`${s.base}/healthz`)).status).toBe(200);
    const readyz = await fetch(`${s.base}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.json()).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    expect(s.done).toBe(false);

    startDb();
    expect(await recovers(s.base, 5_000)).toBeLessThan(5_000);
    expect((await fetch(`${s.base}/readyz`)).status).toBe(200);
    // A key answered 503 is free again (its lease runs out): the retry moves the money once.
    for (const key of keys) expect((await fund(s.base, key)).status).toBe(200);
    expect(s.output()).not.toMatch(/unhandled/i);
  });

  it('every backend terminated: the process stays up and serves again within 5 s', async () => {
    const s = server!;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const r = await admin.query(`select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where pid <> pg_backend_pid() and backend_type = 'client backend'`);
      expect(r.rows[0].n).toBeGreaterThan(0);
    } finally {
      await admin.end();
    }
    expect(await recovers(s.base, 5_000)).toBeLessThan(5_000);
    await sleep(200);
    expect(s.done).toBe(false);
    expect(s.output()).not.toMatch(/unhandled/i);
  });

  it('started before the database: waits (503 meanwhile), becomes ready when it starts; a small PAYMENTS_DB_CONNECT_TIMEOUT_MS exits non-zero with one line', async () => {
    stopDb('fast');
    const early = spawnServer(url, await freePort(), { PAYMENTS_DB_CONNECT_TIMEOUT_MS: '60000' });
    others.push(early);
    const deadline = Date.now() + 20_000;
    while (!/Waiting for the database/.test(early.output())) {
      if (early.done || Date.now() > deadline) throw new Error(`no waiting line:\n${early.output()}`);
      await sleep(50);
    }
    let health: Response | undefined;
    while (!health) {
      health = await fetch(`${early.base}/healthz`).catch(() => undefined);
      if (!health) await sleep(50);
    }
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });

    const giveUp = spawnServer(url, await freePort(), { PAYMENTS_DB_CONNECT_TIMEOUT_MS: '1500' });
    others.push(giveUp);
    const code = await Promise.race([giveUp.exited, sleep(20_000).then(() => 'still running' as const)]);
    expect(code, giveUp.output()).not.toBe('still running');
    expect(code).not.toBe(0);
    const lines = giveUp.output().trim().split('\n');
    expect(lines.at(-1)).toMatch(/^payments-service: the database could not be reached within 1500 ms \(PAYMENTS_DB_CONNECT_TIMEOUT_MS\)/);

    startDb();
    const t0 = Date.now();
    await ready(early, 5_000);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect((await fund(early.base)).status).toBe(200);
    // The first server lived through this outage too.
    expect(server!.done).toBe(false);
    expect(await recovers(server!.base, 5_000)).toBeLessThan(5_000);
  });
});

describe('PAYMENTS_DB_CONNECT_TIMEOUT_MS', () => {
  it('defaults to 5 minutes, takes whole milliseconds, and refuses anything else', () => {
    expect(loadConfig({}).dbConnectTimeoutMs).toBe(DEFAULT_DB_CONNECT_TIMEOUT_MS);
    expect(DEFAULT_DB_CONNECT_TIMEOUT_MS).toBe(300_000);
    expect(loadConfig({ PAYMENTS_DB_CONNECT_TIMEOUT_MS: '1500' }).dbConnectTimeoutMs).toBe(1500);
    for (const bad of ['soon', '-1', '1.5']) {
      expect(() => loadConfig({ PAYMENTS_DB_CONNECT_TIMEOUT_MS: bad })).toThrow(/PAYMENTS_DB_CONNECT_TIMEOUT_MS must be a whole number of milliseconds/);
    }
  });
});
