import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DB_ACQUIRE_TIMEOUT_MS, DEFAULT_DB_CONNECT_TIMEOUT_MS, DEFAULT_DB_STATEMENT_TIMEOUT_MS, loadConfig } from '../../src/config.js';
import { openStore, type Store } from '../../src/kernel/db/connect.js';
import { idempotencyFaults } from '../../src/kernel/idempotency.js';
import { freePort, type Proc, sleep, spawnServer } from '../server-process.js';
import { basic, makeApp, V } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { Receiver } from '../webhook-receiver.js';

// The process outlives its PostgreSQL server (issue 33, docs/reliability.md "The database goes
// away"): a throwaway cluster of its own (initdb into a temp dir, its own free port) under a
// real server process (bin/payments-service.js serve). The database is stopped under keyed
// requests, its backends are terminated, and the server is started before the database:
// the process stays up, answers 503 SERVICE_UNAVAILABLE envelopes (with Retry-After) within a
// bound, /healthz stays 200 while /readyz is 503, and within 5 s of the database's return it
// serves payments again. Runs only where PostgreSQL's server binaries are installed.

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

/** The statement timeout of the test's server (PAYMENTS_DB_STATEMENT_TIMEOUT_MS). */
const STATEMENT_TIMEOUT_MS = 3_000;
/** Every 503 of the faults below comes within this (stated in docs/reliability.md). */
const ANSWER_BOUND_MS = 10_000;

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
  const EXTERNAL = { currency: 'USD', accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '123456789', routingNumber: '021000021', bankName: 'Sandbox Bank', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Otto Outage', countryOfResidence: 'US' } } };
  let external = '';
  let amountSeq = 10_000;

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
    const seen: string[] = [];
    for (;;) {
      const a = await fund(base).catch(() => ({ status: 0, body: 'no answer', ms: 0, retryAfter: null }));
      if (a.status === 200) {
        if (Date.now() - t0 > withinMs) console.log(`slow recovery: ${seen.join('; ')}; 200 in ${a.ms} ms`);
        return Date.now() - t0;
      }
      seen.push(`${a.status} in ${a.ms} ms: ${a.body.slice(0, 120)}`);
      if (a.status !== 503) throw new Error(`unexpected answer while recovering: ${a.status} ${a.body}`);
      if (Date.now() - t0 > withinMs) throw new Error(`not serving payments ${withinMs} ms after the database returned: ${seen.join('; ')}`);
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
    // Bounded waits small enough to test (a hung statement answers 503 within ~STATEMENT + 1 s + connect).
    server = spawnServer({ databaseUrl: url, port: await freePort(), tokenId: TOKEN_ID, secret: SECRET, extra: { PAYMENTS_DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS), PAYMENTS_DB_ACQUIRE_TIMEOUT_MS: '3000' } });
    await ready(server, 40_000);
    const accounts = JSON.parse((await call(server.base, 'GET', '/platform/internal-accounts?currency=USD')).body) as { data: { id: string }[] };
    usd = accounts.data[0]!.id;
    expect((await fund(server.base)).status).toBe(200);
    const ext = await call(server.base, 'POST', '/platform/external-accounts', EXTERNAL);
    expect(ext.status, ext.body).toBe(201);
    external = (JSON.parse(ext.body) as { id: string }).id;
    expect((await call(server.base, 'POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 1_000_000_000 }, randomUUID())).status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await direct?.close().catch(() => undefined);
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
    const early = spawnServer({ databaseUrl: url, port: await freePort(), tokenId: TOKEN_ID, secret: SECRET, extra: { PAYMENTS_DB_CONNECT_TIMEOUT_MS: '60000' } });
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

    const giveUp = spawnServer({ databaseUrl: url, port: await freePort(), tokenId: TOKEN_ID, secret: SECRET, extra: { PAYMENTS_DB_CONNECT_TIMEOUT_MS: '1500' } });
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

  // ---- Under load (issue 33): 16 clients making keyed payments, retrying the same key on every error ----


  interface KeyRun {
    key: string;
    amount: number;
    /** The final 2xx answer's transaction. */
    transactionId?: string;
  }
  interface LoadReport {
    keys: KeyRun[];
    failed: Answer[];
    /** Failures that were not the 503 envelope with Retry-After within ANSWER_BOUND_MS. */
    bad: string[];
  }

  /** One keyed payment (a quote with immediatelyExecute), retried with its key after Retry-After until 2xx. */
  async function keyedPayment(base: string, run: KeyRun, report: LoadReport): Promise<void> {
    const body = { source: { sourceType: 'ACCOUNT', accountId: usd }, destination: { destinationType: 'ACCOUNT', accountId: external }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: run.amount, immediatelyExecute: true };
    for (;;) {
      const a = await call(base, 'POST', '/quotes', body, run.key).catch((err: unknown) => ({ status: 0, ms: 0, body: `no answer: ${String(err)}`, retryAfter: null }));
      if (a.status === 201 || a.status === 200) {
        run.transactionId = (JSON.parse(a.body) as { transactionId: string }).transactionId;
        return;
      }
      report.failed.push(a);
      let envelope: { status?: number; code?: string } = {};
      try {
        envelope = JSON.parse(a.body) as typeof envelope;
      } catch {
        /* not JSON: bad below */
      }
      if (a.status !== 503 || envelope.status !== 503 || envelope.code !== 'SERVICE_UNAVAILABLE' || !/^\d+$/.test(a.retryAfter ?? '') || a.ms > ANSWER_BOUND_MS) {
        report.bad.push(`${a.status} in ${a.ms} ms (Retry-After ${a.retryAfter}): ${a.body.slice(0, 200)}`);
        if (a.status !== 409) await sleep(1_000);
      } else {
        await sleep(Number(a.retryAfter) * 1_000);
      }
    }
  }

  /** 16 clients making keyed payments until `stop()`; each finishes its current key (to 2xx) before it stops. */
  function keyedLoad(base: string): { stop: () => Promise<LoadReport> } {
    const report: LoadReport = { keys: [], failed: [], bad: [] };
    let stopping = false;
    const workers = Array.from({ length: 16 }, async () => {
      while (!stopping) {
        const run: KeyRun = { key: randomUUID(), amount: (amountSeq += 1) };
        report.keys.push(run);
        await keyedPayment(base, run, report);
      }
    });
    return {
      stop: async () => {
        stopping = true;
        await Promise.all(workers);
        return report;
      },
    };
  }

  /** /healthz polled every 100 ms until stopped: the non-200 answers seen. */
  function watchHealth(base: string): { stop: () => Promise<string[]> } {
    const bad: string[] = [];
    let stopping = false;
    const loop = (async () => {
      while (!stopping) {
        const st = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
          (r) => r.status,
          (err: unknown) => String(err),
        );
        if (st !== 200) bad.push(String(st));
        await sleep(100);
      }
    })();
    return { stop: async () => ((stopping = true), await loop, bad) };
  }

  let direct: Store | undefined;
  /** The throwaway database opened directly (checks after a run). */
  async function store(): Promise<Store> {
    return (direct ??= await openStore({ kind: 'postgres', location: url }, { poolSize: 2 }));
  }

  /** Every key executed exactly once (its quote executed once, one transaction, the one its answer names), and the ledger invariants. */
  async function checkExactlyOnce(report: LoadReport): Promise<void> {
    const db = (await store()).db;
    const amounts = report.keys.map((k) => k.amount);
    const quotes = await db.selectFrom('quotes').select(['id', 'locked_amount']).where('locked_amount', 'in', amounts).where('status', '<>', 'PENDING').execute();
    const txs = await db.selectFrom('transactions').select(['id', 'quote_id']).where('quote_id', 'in', quotes.length ? quotes.map((q) => q.id) : ['none']).execute();
    const quotesOf = new Map<number, string[]>();
    for (const q of quotes) quotesOf.set(Number(q.locked_amount), [...(quotesOf.get(Number(q.locked_amount)) ?? []), q.id]);
    const txOf = new Map<string, string[]>();
    for (const t of txs) txOf.set(t.quote_id!, [...(txOf.get(t.quote_id!) ?? []), t.id]);
    const wrong: string[] = [];
    for (const k of report.keys) {
      const qs = quotesOf.get(k.amount) ?? [];
      const ts = qs.flatMap((q) => txOf.get(q) ?? []);
      if (qs.length !== 1 || ts.length !== 1 || ts[0] !== k.transactionId) wrong.push(`${k.key} (amount ${k.amount}): ${qs.length} executed quotes, transactions ${ts.join(',')}, answer named ${k.transactionId}`);
    }
    expect(wrong, 'keys not executed exactly once').toEqual([]);
    // The server's job worker keeps settling (1 s after each start): check the ledger once
    // every transaction is terminal, so no settlement commits between the check's reads.
    const deadline = Date.now() + 20_000;
    let open: { id: string; status: string }[] = [];
    for (;;) {
      open = await db.selectFrom('transactions').select(['id', 'status']).where('status', 'not in', ['COMPLETED', 'FAILED', 'REFUNDED', 'REJECTED', 'EXPIRED']).where('quote_id', 'is not', null).execute();
      if (open.length === 0 || Date.now() > deadline) break;
      await sleep(200);
    }
    expect(open, 'transactions still in flight 20 s after the load').toEqual([]);
    await assertLedgerInvariants(await store());
  }

  /** Run the keyed load through `fault`, which answers when the database accepts connections again; checks every rule and answers the recovery time. */
  async function underLoad(name: string, fault: () => Promise<void>): Promise<number> {
    const s = server!;
    const health = watchHealth(s.base);
    const load = keyedLoad(s.base);
    await sleep(1_500);
    await fault();
    const recovery = await recovers(s.base, 5_000);
    await sleep(1_500);
    const report = await load.stop();
    const healthBad = await health.stop();
    console.log(`pg-outage ${name}: ${report.keys.length} keys, ${report.failed.length} failed answers (all 503, max ${Math.max(0, ...report.failed.map((a) => a.ms))} ms), payments again ${recovery} ms after the database accepted connections`);
    expect(s.done, s.output()).toBe(false);
    expect(report.bad, 'failed answers other than the 503 envelope with Retry-After within the bound').toEqual([]);
    expect(healthBad, '/healthz answers other than 200').toEqual([]);
    expect(recovery).toBeLessThanOrEqual(5_000);
    await checkExactlyOnce(report);
    expect(s.output()).not.toMatch(/unhandled/i);
    return recovery;
  }

  /** A customer read through the API (so the row caches hold it) whose email is then changed behind the server's back. */
  async function staleCheck(): Promise<{ change: () => Promise<void>; expectFresh: () => Promise<void> }> {
    const created = await call(server!.base, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Cached Carla', email: 'before@example.com' });
    expect(created.status, created.body).toBe(201);
    const id = (JSON.parse(created.body) as { id: string }).id;
    for (let i = 0; i < 2; i++) expect(JSON.parse((await call(server!.base, 'GET', `/customers/${id}`)).body)).toMatchObject({ email: 'before@example.com' });
    const email = `after-${randomUUID().slice(0, 8)}@example.com`;
    return {
      change: async () => {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        try {
          expect((await c.query('update customers set email = $1 where id = $2', [email, id])).rowCount).toBe(1);
        } finally {
          await c.end();
        }
      },
      expectFresh: async () => {
        const a = await call(server!.base, 'GET', `/customers/${id}`);
        expect(a.status, a.body).toBe(200);
        expect(JSON.parse(a.body)).toMatchObject({ email });
      },
    };
  }

  it('16 keyed clients through a stop (-m fast, 10 s), a crash (-m immediate) and 3 × every backend terminated: 503 envelopes only, /healthz 200, payments again within 5 s, every key once, the ledger balanced, nothing stale served', { timeout: 150_000 }, async () => {
    for (const p of others) if (!p.done) (p.child.kill('SIGKILL'), await p.exited);
    const times: Record<string, number> = {};

    // (a) Stopped for 10 s; a row changed between the database's return and the first request.
    const a = await staleCheck();
    times.stop = await underLoad('stop -m fast, 10 s', async () => {
      stopDb('fast');
      await sleep(10_000);
      startDb();
      await a.change();
    });
    await a.expectFresh();

    // (b) Killed (no shutdown checkpoint: crash recovery at the next start).
    times.crash = await underLoad('kill -m immediate, restart', async () => {
      stopDb('immediate');
      await sleep(1_000);
      startDb();
    });

    // (c) Every backend terminated 3 × in a row (the change watch's listening connection too);
    // a row changed while the watch is disconnected.
    const c = await staleCheck();
    times.terminate = await underLoad('every backend terminated 3 ×', async () => {
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        for (let i = 0; i < 3; i++) {
          const r = await admin.query(`select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where pid <> pg_backend_pid() and backend_type = 'client backend' and datname = current_database()`);
          expect(r.rows[0].n).toBeGreaterThan(0);
          if (i === 0) await c.change();
          await sleep(300);
        }
      } finally {
        await admin.end();
      }
    });
    await c.expectFresh();
    console.log(`pg-outage recovery (ms): ${JSON.stringify(times)}`);
  });

  it('a row changed while the change watch is cut is not served from the cache once it listens again', { timeout: 30_000 }, async () => {
    const c = await staleCheck();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const watchers = async () => (await admin.query(`select pid from pg_stat_activity where application_name like 'payments-change-watch%'`)).rows.map((r: { pid: number }) => r.pid);
    try {
      const before = await watchers();
      expect(before).toHaveLength(1);
      await admin.query('select pg_terminate_backend($1)', [before[0]]);
      await c.change();
      // Other requests (not reading customers) make the watch listen again (1 s back-off, then
      // its probe); only then is the customer read: the cache from before the cut must not answer.
      const deadline = Date.now() + 10_000;
      for (;;) {
        const now = await watchers();
        if (now.length === 1 && now[0] !== before[0]) break;
        if (Date.now() > deadline) throw new Error('the change watch did not listen again');
        expect([200, 503]).toContain((await call(server!.base, 'GET', '/config')).status);
        await sleep(100);
      }
      for (let i = 0; i < 5; i++) expect((await call(server!.base, 'GET', '/config')).status).toBe(200);
      await c.expectFresh();
    } finally {
      await admin.end();
    }
  });

  it('jobs that fell due while the database was down run once it returns, without a restart; webhooks resume in per-resource order', { timeout: 60_000 }, async () => {
    const s = server!;
    const receiver = await new Receiver().start();
    try {
      expect((await call(s.base, 'PATCH', '/config', { webhookEndpoint: receiver.url })).status).toBe(200);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const body = { source: { sourceType: 'ACCOUNT', accountId: usd }, destination: { destinationType: 'ACCOUNT', accountId: external }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: (amountSeq += 1), immediatelyExecute: true };
        const q = await call(s.base, 'POST', '/quotes', body, randomUUID());
        expect(q.status, q.body).toBe(201);
        ids.push((JSON.parse(q.body) as { transactionId: string }).transactionId);
      }
      // Each settles 1 s after it started (sandbox outcome, real time here): due while the database is down.
      stopDb('fast');
      await sleep(4_000);
      const completedBefore = new Set(receiver.got.filter((r) => r.json.type === 'OUTGOING_PAYMENT.COMPLETED').map((r) => (r.json.data as { id: string }).id));
      startDb();
      const t0 = Date.now();
      const pending = ids.filter((id) => !completedBefore.has(id));
      expect(pending.length, 'payments that settled before the stop (the test needs some due during the outage)').toBeGreaterThan(0);
      // The jobs: every payment settles (read through the API) within 5 s of the return.
      const settledBy = Date.now() + 5_000;
      for (const id of ids) {
        for (;;) {
          const tx = await call(s.base, 'GET', `/transactions/${id}`);
          if (tx.status === 200 && (JSON.parse(tx.body) as { status: string }).status === 'COMPLETED') break;
          if (Date.now() > settledBy) throw new Error(`${id} not settled 5 s after the database returned: ${tx.status} ${tx.body.slice(0, 300)}`);
          await sleep(100);
        }
      }
      const settledMs = Date.now() - t0;
      // The webhooks: deliveries resume and each payment's events arrive in order. A delivery
      // sent just as the database went away has its attempt recorded once the database
      // answers again (api/webhooks), so its lane goes on at once rather than after its
      // claim's lease (timeout + 30 s): every settlement's webhook arrives within 8 s.
      const completedOf = () => new Set(receiver.got.filter((r) => r.json.type === 'OUTGOING_PAYMENT.COMPLETED').map((r) => (r.json.data as { id: string }).id));
      const deliveredBy = Date.now() + 8_000;
      while (!pending.every((id) => completedOf().has(id)) && Date.now() < deliveredBy) await sleep(100);
      const delivered = pending.filter((id) => completedOf().has(id));
      console.log(`pg-outage jobs: ${pending.length} settlements due during the outage ran within ${settledMs} ms of the database's return; ${delivered.length} of their COMPLETED webhooks delivered within ${Date.now() - t0} ms`);
      if (delivered.length !== pending.length) {
        // What a failure needs to be understood: the lanes' rows and what the server logged.
        const admin = new pg.Client({ connectionString: url });
        await admin.connect();
        const rows = (await admin.query(`select id, type, resource_id, status, attempts, next_attempt_ms, lease_until_ms, lane_head, event_seq, updated_at, last_error from webhook_deliveries where resource_id = any($1) order by resource_id, event_seq`, [pending])).rows;
        await admin.end();
        console.log(`pg-outage jobs: the deliveries of the payments whose webhooks are missing (real time now ${Date.now()}):\n${JSON.stringify(rows, null, 1)}\nthe server's log (its end):\n${s.output().slice(-6000)}`);
      }
      expect(delivered, 'settlement webhooks delivered within 8 s of the return').toEqual(pending);
      const order = ['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED'];
      for (const id of ids) {
        // Per resource, in order (a retried delivery may repeat one: compare first arrivals).
        const types = receiver.got.filter((r) => (r.json.data as { id?: string }).id === id).map((r) => r.json.type);
        const firsts = types.filter((t, i) => types.indexOf(t) === i);
        expect(firsts, `events of ${id}`).toEqual(order.slice(0, firsts.length));
        if (delivered.includes(id)) expect(firsts).toEqual(order);
      }
      expect(s.done).toBe(false);
    } finally {
      await call(s.base, 'PATCH', '/config', { webhookEndpoint: null }).catch(() => undefined);
      await receiver.stop();
    }
  });

  it('a hung database (postmaster and backends SIGSTOPped): requests get the 503 envelope within the bound, then it serves again after SIGCONT', { timeout: 60_000 }, async () => {
    const s = server!;
    const postmaster = Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' }).split('\n').map((l) => Number(l.trim())).filter((n) => n > 0);
    const pids = [postmaster, ...children];
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    let answers: Answer[];
    try {
      answers = await Promise.all([...Array.from({ length: 6 }, () => fund(s.base)), call(s.base, 'GET', '/platform/internal-accounts?currency=USD')]);
      expect((await fetch(`${s.base}/healthz`)).status).toBe(200);
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGCONT');
    }
    const t0 = Date.now();
    for (const a of answers) {
      expectUnavailable(a);
      expect(a.ms).toBeLessThan(ANSWER_BOUND_MS);
    }
    console.log(`pg-outage hung statement: 503 in ${Math.min(...answers.map((a) => a.ms))}-${Math.max(...answers.map((a) => a.ms))} ms (statement timeout ${STATEMENT_TIMEOUT_MS} ms)`);
    expect(await recovers(s.base, 5_000)).toBeLessThan(5_000);
    console.log(`pg-outage hung statement: payments again ${Date.now() - t0} ms after SIGCONT`);
    expect(s.done).toBe(false);
    expect(s.output()).not.toMatch(/unhandled/i);
  });

  describe('commit outcome unknown (in process, on the throwaway cluster)', () => {
    const connectionLost = () => Object.assign(new Error('Connection terminated unexpectedly'), {});
    afterAll(() => {
      delete idempotencyFaults.beforeEffectCommit;
      delete idempotencyFaults.afterEffectCommit;
    });

    it('the connection cut before COMMIT: 503, nothing kept, the retry with the key runs once; the COMMIT done but its answer lost: 503, the retry replays it', async () => {
      const schema = `commit_unknown_${Date.now().toString(36)}`;
      const t = await makeApp({ testStore: { store: await openStore({ kind: 'postgres', location: url }, { schema, poolSize: 3 }), drop: async () => {} } });
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        const acc = JSON.parse((await t.call('GET', '/platform/internal-accounts?currency=USD')).body) as { data: { id: string }[] };
        const account = acc.data[0]!.id;
        const credited = async (amount: number) => Number((await t.store.db.selectFrom('transactions').select((eb) => eb.fn.countAll().as('n')).where('flow', '=', 'SANDBOX_FUNDING').where('received_amount', '=', amount).executeTakeFirstOrThrow()).n);

        // 1. The backend is terminated from another connection while the request is held just before its COMMIT.
        idempotencyFaults.beforeEffectCommit = async (trx) => {
          delete idempotencyFaults.beforeEffectCommit;
          const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
          const pid = rows[0]!.pid;
          await admin.query('select pg_terminate_backend($1)', [pid]);
          while ((await admin.query('select 1 from pg_stat_activity where pid = $1', [pid])).rowCount) await sleep(10);
        };
        const cut = await t.call('POST', `/sandbox/internal-accounts/${account}/fund`, { amount: 4_321 }, { 'idempotency-key': 'commit-cut' });
        expect(cut.statusCode, cut.body).toBe(503);
        expect(cut.json()).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
        expect(cut.headers['retry-after']).toMatch(/^\d+$/);
        expect(await credited(4_321)).toBe(0);
        const retry = await t.call('POST', `/sandbox/internal-accounts/${account}/fund`, { amount: 4_321 }, { 'idempotency-key': 'commit-cut' });
        expect(retry.statusCode, retry.body).toBe(200);
        expect(retry.headers['idempotent-replayed']).toBeUndefined();
        expect(await credited(4_321)).toBe(1);

        // 2. The COMMIT went through but the connection broke before its answer came back.
        idempotencyFaults.afterEffectCommit = () => {
          delete idempotencyFaults.afterEffectCommit;
          throw connectionLost();
        };
        const lost = await t.call('POST', `/sandbox/internal-accounts/${account}/fund`, { amount: 5_432 }, { 'idempotency-key': 'commit-lost' });
        expect(lost.statusCode, lost.body).toBe(503);
        expect(lost.json()).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
        expect(await credited(5_432)).toBe(1);
        const replay = await t.call('POST', `/sandbox/internal-accounts/${account}/fund`, { amount: 5_432 }, { 'idempotency-key': 'commit-lost' });
        expect(replay.statusCode, replay.body).toBe(200);
        expect(replay.headers['idempotent-replayed']).toBe('true');
        expect(await credited(5_432)).toBe(1);
        await assertLedgerInvariants(t.store);
      } finally {
        await admin.end();
        await t.close();
      }
    });
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

  it('PAYMENTS_DB_STATEMENT_TIMEOUT_MS and PAYMENTS_DB_ACQUIRE_TIMEOUT_MS default to 30 s and 10 s, 0 turns them off, anything else is refused', () => {
    const c = loadConfig({});
    expect([c.dbStatementTimeoutMs, c.dbAcquireTimeoutMs]).toEqual([DEFAULT_DB_STATEMENT_TIMEOUT_MS, DEFAULT_DB_ACQUIRE_TIMEOUT_MS]);
    expect([DEFAULT_DB_STATEMENT_TIMEOUT_MS, DEFAULT_DB_ACQUIRE_TIMEOUT_MS]).toEqual([30_000, 10_000]);
    expect(loadConfig({ PAYMENTS_DB_STATEMENT_TIMEOUT_MS: '0', PAYMENTS_DB_ACQUIRE_TIMEOUT_MS: '2500' })).toMatchObject({ dbStatementTimeoutMs: 0, dbAcquireTimeoutMs: 2500 });
    for (const name of ['PAYMENTS_DB_STATEMENT_TIMEOUT_MS', 'PAYMENTS_DB_ACQUIRE_TIMEOUT_MS']) {
      for (const bad of ['soon', '-1', '1.5']) expect(() => loadConfig({ [name]: bad })).toThrow(new RegExp(`${name} must be a whole number of milliseconds`));
    }
  });
});
