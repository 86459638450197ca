// The benchmark suite (`npm run bench`; see bench/README.md for what each figure means).
//
// Builds the service (npm run build), starts it as a user would (node dist/bundle/main.js
// serve, or N processes behind node:cluster) on a fresh store, creates its fixtures through
// the API, then drives load with autocannon from this process against:
//   bare      a bare node:http server with a fixed small JSON body (bench/bare-server.mjs): the machine's limit
//   lookup    GET  /2025-10-13/receiver/external-account/{id}?customerId=…
//   customer  GET  /2025-10-13/customers/{id}
//   list      GET  /2025-10-13/customers (first page), list-deep: a page far into it (cursor)
//   transactions GET /2025-10-13/transactions (first page)
//   create    POST /2025-10-13/customers
//   payment   POST /2025-10-13/quotes with immediatelyExecute: true (one payment flow per request)
// The bare server is measured again before the first service scenario and after each one,
// and each scenario's ratio uses the mean of the bare runs on either side of it. With
// --seed N the bench platform gets N customers and N transactions (bench/seed.ts, in SQL)
// before the measured start. It reports requests/s, p50, p99, errors, CPU per request and
// the ratio to the bare server, start-up time to
// /healthz on an existing database, resident memory after warm-up and after the run, checks
// the ledger invariants on the server's database after the payment flow, prints a table
// and writes bench/results/<date>-<store>.json. Any non-2xx, connection error, broken
// invariant or failed stop makes the exit status non-zero. Targets are reported, never
// enforced (unless --strict).

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, type WriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import pg from 'pg';
import { encodeCursor } from '../src/kernel/pagination.js';
import { formatProfileSummary, summarizeCpuProfile, type ProfileSummary } from './cpu-profile.js';
import { CREATE_BODY, ensurePrism, PRISM_AUTH, PRISM_FLOW_AMOUNT, quoteBody, PRISM_OPERATIONS, prismCacheDir, prismTargets, referencePath, sharedDir, startPrism, type PrismOperation, type PrismProcess } from './prism.js';
import { countsIn, idDeepIn, seedDatabase, type SeedResult } from './seed.js';

const HERE = dirname(fileURLToPath(import.meta.url));
/** The project root, whether this runs as bench/run.ts (tsx) or as dist/bench/run.js (npm run build compiles bench/ too). */
const ROOT = resolve(HERE, basename(dirname(HERE)) === 'dist' ? '../..' : '..');
const V = '/2025-10-13';
const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';
/** Minor units per payment flow (USD 10.00: above the corridor minimum, below the ownership-verification threshold). */
const FLOW_AMOUNT = PRISM_FLOW_AMOUNT;
/** Largest single sandbox funding (docs/sandbox.md). */
const MAX_FUNDING = 100_000_000_000;

const SCENARIOS = ['bare', 'lookup', 'customer', 'list', 'list-deep', 'transactions', 'create', 'payment'] as const;
type ScenarioName = (typeof SCENARIOS)[number];

const LABELS: Record<ScenarioName, string> = {
  bare: 'bare node:http server (the limit)',
  lookup: 'GET /receiver/external-account/{id}',
  customer: 'GET /customers/{id}',
  list: 'GET /customers (first page, totalCount)',
  'list-deep': 'GET /customers?cursor= (a page 90 % deep)',
  transactions: 'GET /transactions (first page, totalCount)',
  create: 'POST /customers (one name: generated UMA addresses)',
  payment: 'payment flow: POST /quotes immediatelyExecute',
};

/** Targets on a 2-core machine (SQLite, one process); bench/README.md lists them. */
const TARGETS = {
  lookupRatio: 0.3,
  lookupP99Ms: 25,
  customerRatio: 0.4,
  createRatio: 0.15,
  paymentRatio: 0.08,
  startupMs: 1500,
  rssMb: 200,
};

/** Payment flows below which PostgreSQL's bytes per flow (relation sizes in 8 KB pages) are reported but not judged. */
const PG_BYTES_MIN_FLOWS = 1_000;

/** Issue 35's targets: the service against Prism (the peer) and the payment flow's costs; bench/README.md lists them. */
const TARGETS_35 = {
  paymentVsPrism: 2,
  createVsPrism: 5,
  readsVsPrism: 15,
  postgresPaymentVsPrism: 0.5,
  cpuUsPerFlowSqlite: 1_000,
  cpuUsPerFlowPostgres: 2_000,
  bytesPerFlow: 4_096,
  paymentP99Ms: 100,
  overdueMs: 1_000,
  webhookDrainS: 5,
};

const USAGE = `Usage: npm run bench -- [options]

  --store sqlite|postgres   Store (default sqlite: a file in a temp dir; postgres: a fresh
                            database, or schema, in DATABASE_URL, default ${DEFAULT_PG_URL})
  --processes <n>           Server processes behind node:cluster (default 1; >1 defaults the
                            store to postgres; with --store sqlite all share one file)
  --duration <s>            Seconds per scenario (default 10)
  --connections <n>         Concurrent connections (default 32)
  --scenarios <list>        Comma list of ${SCENARIOS.join(', ')} (default all)
  --warmup <s>              Warm-up seconds per scenario before measuring (default 2; 0 = none)
  --seed <n>                Before the measured start, add n customers and n transactions to
                            the bench platform directly in SQL (bench/seed.ts; default 0)
  --payers <n>              Payment flow: n paying customers, each with its own funded USD
                            account and payee, the requests taking turns (default 1)
  --out <dir>               Directory of the results JSON (default bench/results)
  --server dist|bin         dist: build, then node dist/bundle/main.js serve (default);
                            bin: node bin/payments-service.js serve (sources through tsx, no build)
  --no-build                With --server dist: use the existing dist/ as it is
  --cpu-prof <dir>          Write V8 CPU profiles of the measured server process(es) to <dir>
                            and print their top functions (profiling slows the server)
  --no-prism                Skip the peer: Prism 5 mocking the reference on the same four
                            operations (lookup, customer, create, payment)
  --shared <dir>            The shared folder holding reference/openapi.yaml (default
                            ../shared of the checkout, or BENCH_SHARED_DIR)
  --prism-dir <dir>         Where Prism is installed on first use and reused (default
                            ~/.cache/payments-service-bench/prism, or BENCH_PRISM_DIR)
  --strict                  Also fail when a target is missed
  --keep                    Keep the temp dir and the PostgreSQL database/schema
  -h, --help`;

export interface BenchOptions {
  store: 'sqlite' | 'postgres';
  processes: number;
  duration: number;
  connections: number;
  scenarios: ScenarioName[];
  warmup: number;
  /** Customers and transactions seeded in SQL before the measured start (0: none). */
  seed: number;
  /** Paying customers of the payment flow, taking turns (1: every flow from one account). */
  payers: number;
  out: string;
  server: 'dist' | 'bin';
  build: boolean;
  cpuProf: string | undefined;
  strict: boolean;
  keep: boolean;
  databaseUrl: string;
  /** Run the peer (Prism 5 on the reference) on the four operations it shares with the service. */
  prism: boolean;
  /** The shared folder (its reference/openapi.yaml is what Prism mocks). */
  shared: string;
  /** Prism's cache folder. */
  prismDir: string;
}

class UsageError extends Error {}

function parseOptions(argv: string[]): BenchOptions | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      store: { type: 'string' },
      processes: { type: 'string', default: '1' },
      duration: { type: 'string', default: '10' },
      connections: { type: 'string', default: '32' },
      scenarios: { type: 'string', default: SCENARIOS.join(',') },
      warmup: { type: 'string', default: '2' },
      seed: { type: 'string', default: '0' },
      payers: { type: 'string', default: '1' },
      out: { type: 'string', default: join(ROOT, 'bench', 'results') },
      server: { type: 'string', default: 'dist' },
      'no-build': { type: 'boolean', default: false },
      'cpu-prof': { type: 'string' },
      strict: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      'no-prism': { type: 'boolean', default: false },
      shared: { type: 'string' },
      'prism-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return undefined;
  const num = (name: string, v: string, min: number, integer: boolean) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) throw new UsageError(`--${name} must be ${integer ? 'an integer' : 'a number'} ≥ ${min}, got "${v}"`);
    return n;
  };
  const processes = num('processes', values.processes, 1, true);
  const store = values.store ?? (processes > 1 ? 'postgres' : 'sqlite');
  if (store !== 'sqlite' && store !== 'postgres') throw new UsageError(`--store must be sqlite or postgres, got "${store}"`);
  const scenarios = values.scenarios.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = scenarios.filter((s) => !(SCENARIOS as readonly string[]).includes(s));
  if (unknown.length > 0 || scenarios.length === 0) throw new UsageError(`--scenarios takes a comma list of ${SCENARIOS.join(', ')}; got "${values.scenarios}"`);
  if (values.server !== 'dist' && values.server !== 'bin') throw new UsageError(`--server must be dist or bin, got "${values.server}"`);
  return {
    store,
    processes,
    duration: num('duration', values.duration, 0.1, false),
    connections: num('connections', values.connections, 1, true),
    // Always in the canonical order: bare first, the payment flow last (its background jobs
    // would otherwise run during the next scenario).
    scenarios: SCENARIOS.filter((s) => scenarios.includes(s)),
    warmup: num('warmup', values.warmup, 0, false),
    seed: num('seed', values.seed.replace(/_/g, ''), 0, true),
    payers: num('payers', values.payers, 1, true),
    out: resolve(values.out),
    server: values.server,
    build: values.server === 'dist' && !values['no-build'],
    cpuProf: values['cpu-prof'] ? resolve(values['cpu-prof']) : undefined,
    strict: values.strict,
    keep: values.keep,
    databaseUrl: process.env.DATABASE_URL || DEFAULT_PG_URL,
    prism: !values['no-prism'],
    shared: sharedDir(ROOT, values.shared),
    prismDir: prismCacheDir(values['prism-dir']),
  };
}

// ---------------------------------------------------------------------------------------
// Small helpers

const progress = (msg: string) => process.stderr.write(`bench: ${msg}\n`);
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolvePort(port));
    });
  });
}

/** The Node options of the server, as `npm start` sets them: package.json's config.serverNodeOptions (docs/decisions.md). */
function serverNodeOptions(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { config?: { serverNodeOptions?: string } };
  return (pkg.config?.serverNodeOptions ?? '').split(/\s+/).filter(Boolean);
}

/** glibc's MALLOC_ARENA_MAX as `npm start` sets it (package.json config.serverMallocArenaMax), unless the environment names one. */
function serverMallocArenaMax(): string | undefined {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { config?: { serverMallocArenaMax?: string } };
  return process.env.MALLOC_ARENA_MAX ?? pkg.config?.serverMallocArenaMax;
}

/** CPU time (user + system) a process has used, in ms, from /proc/<pid>/stat; null when unreadable. */
function cpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

/** Kernel clock ticks per second (USER_HZ): 100 on Linux. */
const CLOCK_TICKS = 100;

/** Resident set size of a process in MB, from /proc/<pid>/status (VmRSS). */
function rssMb(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

function gitDescribe(): { commit: string | null; dirty: boolean | null } {
  const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  const status = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' });
  return { commit: head.status === 0 ? head.stdout.trim() : null, dirty: status.status === 0 ? status.stdout.trim() !== '' : null };
}

function stamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())}T${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
}

// ---------------------------------------------------------------------------------------
// Processes

interface ServerProcess {
  child: ChildProcess;
  /** The processes that serve (the single server, or the cluster's workers) and the cluster primary. */
  pids: Array<{ role: 'server' | 'primary' | 'worker'; pid: number }>;
  /** Milliseconds from spawn to the first 200 from /healthz (with several processes: and every worker listening). */
  startMs: number;
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null; stopMs: number }>;
}

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function waitExit(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

interface StartSpec {
  args: string[];
  env: NodeJS.ProcessEnv;
  port: number;
  processes: number;
  log: WriteStream;
  logFile: string;
  nodeArgs?: string[];
}

async function startServer(spec: StartSpec): Promise<ServerProcess> {
  const cluster = spec.processes > 1;
  const args = [...(spec.nodeArgs ?? []), ...(cluster ? [join(ROOT, 'bench', 'cluster.mjs'), String(spec.processes)] : []), ...spec.args];
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { cwd: ROOT, env: spec.env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let workers: number[] | undefined;
  let allListening = false;
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    spec.log.write(chunk);
    if (cluster && !allListening) {
      out += chunk.toString('utf8');
      const m = /bench-cluster workers ([\d,]+)/.exec(out);
      if (m) workers = m[1]!.split(',').map(Number);
      allListening = out.includes('bench-cluster listening');
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => spec.log.write(chunk));
  const exited = waitExit(child);
  let dead: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  void exited.then((e) => (dead = e));

  const url = `http://127.0.0.1:${spec.port}/healthz`;
  const deadline = Date.now() + 60_000;
  let startMs: number | undefined;
  while (startMs === undefined) {
    if (dead) throw new Error(`the server exited during start-up (code ${dead.code}, signal ${dead.signal}); its log:\n${tail(spec.logFile)}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the server did not answer 200 on /healthz within 60 s; its log:\n${tail(spec.logFile)}`);
    }
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      await res.arrayBuffer();
      if (res.status === 200) startMs = performance.now() - t0;
    } catch {
      // not listening yet
    }
    if (startMs === undefined) await sleep(5);
  }
  // With several processes, started means every worker listens (and /healthz answered).
  while (cluster && !(workers && allListening)) {
    if (dead) throw new Error(`the cluster exited during start-up; its log:\n${tail(spec.logFile)}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`not every cluster worker listened within 60 s; the log:\n${tail(spec.logFile)}`);
    }
    await sleep(2);
  }
  if (cluster) startMs = performance.now() - t0;
  const pids: ServerProcess['pids'] = cluster ? [{ role: 'primary', pid: child.pid! }, ...workers!.map((pid) => ({ role: 'worker' as const, pid }))] : [{ role: 'server', pid: child.pid! }];
  return {
    child,
    pids,
    startMs,
    async stop() {
      const s0 = performance.now();
      if (!dead) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const e = await exited;
      clearTimeout(timer);
      children.delete(child);
      return { ...e, stopMs: performance.now() - s0 };
    },
  };
}

async function startBare(log: WriteStream): Promise<{ port: number; pid: number; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [join(ROOT, 'bench', 'bare-server.mjs')], { cwd: ROOT, env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.stderr!.on('data', (c: Buffer) => log.write(c));
  const port = await new Promise<number>((resolvePort, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const m = /bare-server listening (\d+)/.exec(out);
      if (m) resolvePort(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`bench/bare-server.mjs exited with ${code}`)));
  });
  return {
    port,
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      await waitExit(child);
      children.delete(child);
    },
  };
}

function build(): void {
  progress('npm run build');
  const t0 = performance.now();
  const r = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) {
    throw new Error(
      `npm run build failed (status ${r.status}). Fix the errors above, or pass --no-build to benchmark the dist/ that is there now (tsc still emits on type errors), or --server bin to run the sources through tsx.`,
    );
  }
  progress(`built in ${round((performance.now() - t0) / 1000)} s`);
}

// ---------------------------------------------------------------------------------------
// Stores

interface InvariantReport {
  ok: boolean;
  /** Entries whose postings do not sum to zero in a currency. */
  unbalancedEntries: Array<{ entry_id: string; currency: string; total: number }>;
  /** Balance rows that differ from the sum of their postings. */
  balanceMismatches: Array<Record<string, string | number>>;
  /** Accounts that may not go below zero and did. */
  negativeBalances: Array<Record<string, string | number>>;
  /** Postings in another currency than their account's. */
  currencyMismatches: Array<Record<string, string | number>>;
  counts: { entries: number; postings: number; balances: number };
  transactionsByStatus: Record<string, number>;
  jobsByStatus: Record<string, number>;
  /** The due time (epoch ms; the bench's platform clock has no offset) of the earliest pending job, and when this report was read. */
  oldestPendingDueMs: number | null;
  checkedAtMs: number;
}

const INVARIANT_SQL = {
  unbalanced: `select entry_id, currency, sum(amount) as total from ledger_postings group by entry_id, currency having sum(amount) <> 0`,
  mismatched: `select b.account_id, b.currency, b.available, b.pending, b.held,
       coalesce(p.available, 0) as postings_available, coalesce(p.pending, 0) as postings_pending, coalesce(p.held, 0) as postings_held
     from ledger_balances b
     left join (select account_id,
                  sum(case when bucket = 'available' then amount else 0 end) as available,
                  sum(case when bucket = 'pending' then amount else 0 end) as pending,
                  sum(case when bucket = 'held' then amount else 0 end) as held
                from ledger_postings group by account_id) p on p.account_id = b.account_id
     where b.available <> coalesce(p.available, 0) or b.pending <> coalesce(p.pending, 0) or b.held <> coalesce(p.held, 0)`,
  negative: `select account_id, currency, available, pending, held from ledger_balances where allow_negative = 0 and (available < 0 or pending < 0 or held < 0)`,
  currency: `select p.entry_id, p.account_id, p.currency, b.currency as account_currency from ledger_postings p join ledger_balances b on b.account_id = p.account_id where p.currency <> b.currency`,
  counts: `select (select count(*) from ledger_entries) as entries, (select count(*) from ledger_postings) as postings, (select count(*) from ledger_balances) as balances`,
  transactions: `select status, count(*) as n from transactions group by status`,
  jobs: `select status, count(*) as n from jobs group by status`,
  oldestDue: `select min(run_at_ms) as due from jobs where status = 'pending'`,
};

type Rows = Array<Record<string, unknown>>;

function invariantReport(q: Record<keyof typeof INVARIANT_SQL, Rows>): InvariantReport {
  const numeric = (rows: Rows) => rows.slice(0, 20).map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'bigint' || (typeof v === 'string' && /^-?\d+$/.test(v) && k !== 'entry_id' && k !== 'account_id') ? Number(v) : (v as string | number)])));
  const byStatus = (rows: Rows) => Object.fromEntries(rows.map((r) => [String(r.status), Number(r.n)]));
  const c = q.counts[0] ?? {};
  const report: InvariantReport = {
    ok: q.unbalanced.length === 0 && q.mismatched.length === 0 && q.negative.length === 0 && q.currency.length === 0,
    unbalancedEntries: numeric(q.unbalanced) as InvariantReport['unbalancedEntries'],
    balanceMismatches: numeric(q.mismatched),
    negativeBalances: numeric(q.negative),
    currencyMismatches: numeric(q.currency),
    counts: { entries: Number(c.entries), postings: Number(c.postings), balances: Number(c.balances) },
    transactionsByStatus: byStatus(q.transactions),
    jobsByStatus: byStatus(q.jobs),
    oldestPendingDueMs: q.oldestDue[0]?.due === null || q.oldestDue[0]?.due === undefined ? null : Number(q.oldestDue[0].due),
    checkedAtMs: Date.now(),
  };
  return report;
}

/** How long the bench waits, after the payment flow, for its settlement backlog to drain. */
const DRAIN_LIMIT_MS = 60_000;

interface BenchStore {
  /** DATABASE_URL of the server. */
  url: string;
  describe: string;
  /** The ledger invariants over one consistent snapshot of the server's database. */
  checkInvariants(): Promise<InvariantReport>;
  /**
   * The database's bytes, rows and indexes: on SQLite the used bytes of every table's and
   * index's pages (`dbstat`: page size − unused), on PostgreSQL the sum of
   * `pg_total_relation_size` over the schema's tables (pages allocated: heap with its dead
   * row versions, indexes, TOAST, free-space and visibility maps). Per payment flow, the
   * difference across the measured flows and their settlement ÷ the flows.
   */
  usedBytes(): Promise<number>;
  drop(): Promise<void>;
}

function sqliteStore(dir: string): BenchStore {
  const file = join(dir, 'payments.sqlite');
  return {
    url: `sqlite:${file}`,
    describe: `SQLite file ${file}`,
    async checkInvariants() {
      const db = new Database(file, { readonly: true, fileMustExist: true });
      try {
        db.defaultSafeIntegers(true);
        // One read transaction: one snapshot of the WAL, whatever the server writes meanwhile.
        const read = db.transaction(() => Object.fromEntries(Object.entries(INVARIANT_SQL).map(([k, s]) => [k, db.prepare(s).all() as Rows])));
        return invariantReport(read() as Record<keyof typeof INVARIANT_SQL, Rows>);
      } finally {
        db.close();
      }
    },
    async usedBytes() {
      const db = new Database(file, { readonly: true, fileMustExist: true });
      try {
        return Number((db.prepare('select sum(pgsize - unused) as b from dbstat').get() as { b: number }).b);
      } finally {
        db.close();
      }
    },
    async drop() {},
  };
}

/** A fresh database in the PostgreSQL server of `baseUrl` (a fresh schema in its database without CREATEDB). */
async function postgresStore(baseUrl: string): Promise<BenchStore> {
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  const name = `bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  let url: string;
  let kind: 'database' | 'schema';
  try {
    // Databases (or schemas) of bench runs that crashed more than an hour ago.
    const stale = (born: string) => Date.now() - parseInt(born, 36) > 3_600_000;
    for (const { datname } of (await admin.query<{ datname: string }>(`select datname from pg_database where datname like 'bench\\_%'`)).rows) {
      const born = /^bench_([0-9a-z]+)_[0-9a-f]+$/.exec(datname)?.[1];
      if (born && stale(born)) await admin.query(`drop database if exists "${datname}" with (force)`).catch(() => {});
    }
    for (const { schema } of (await admin.query<{ schema: string }>(`select schema_name as schema from information_schema.schemata where schema_name like 'bench\\_%'`)).rows) {
      const born = /^bench_([0-9a-z]+)_[0-9a-f]+$/.exec(schema)?.[1];
      if (born && stale(born)) await admin.query(`drop schema if exists "${schema}" cascade`).catch(() => {});
    }
    try {
      await admin.query(`create database "${name}"`);
      const u = new URL(baseUrl);
      u.pathname = `/${name}`;
      url = u.toString();
      kind = 'database';
    } catch (err) {
      // No CREATEDB right: a fresh schema in the given database, chosen by the
      // connection's search_path (the server's DATABASE_URL carries it as `options`).
      progress(`cannot create a database (${(err as Error).message}); using schema ${name} in ${new URL(baseUrl).pathname.slice(1)}`);
      await admin.query(`create schema "${name}"`);
      const u = new URL(baseUrl);
      u.searchParams.set('options', `-c search_path=${name}`);
      url = u.toString();
      kind = 'schema';
    }
  } finally {
    await admin.end();
  }
  const redacted = url.replace(/\/\/([^:@/]+):[^@]*@/, '//$1:***@');
  return {
    url,
    describe: `PostgreSQL ${kind} ${name} (${redacted})`,
    async checkInvariants() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        await c.query('begin isolation level repeatable read read only');
        const q: Record<string, Rows> = {};
        for (const [k, s] of Object.entries(INVARIANT_SQL)) q[k] = (await c.query(s)).rows as Rows;
        await c.query('commit');
        return invariantReport(q as Record<keyof typeof INVARIANT_SQL, Rows>);
      } finally {
        await c.end();
      }
    },
    async usedBytes() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const r = await c.query<{ b: string }>(
          `select coalesce(sum(pg_total_relation_size(c.oid)), 0) as b from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = current_schema() and c.relkind in ('r', 'p', 'm')`,
        );
        return Number(r.rows[0]!.b);
      } finally {
        await c.end();
      }
    },
    async drop() {
      const c = new pg.Client({ connectionString: baseUrl });
      await c.connect();
      try {
        await c.query(kind === 'database' ? `drop database if exists "${name}" with (force)` : `drop schema if exists "${name}" cascade`);
      } finally {
        await c.end();
      }
    },
  };
}

// ---------------------------------------------------------------------------------------
// Fixtures, through the API

interface Fixtures {
  platformId: string;
  customerId: string;
  /** The payment flow's payers (--payers): each a funded USD internal account and a payee; requests take turns. */
  payers: Array<{ sourceAccountId: string; payeeAccountId: string }>;
  lookupAccountId: string;
  funded: number;
  auth: string;
  /** The customer 90 % into the platform's list (newest first): the list-deep scenario's cursor. */
  deepCustomerId: string;
}

async function call(port: number, method: string, path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; json: unknown; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

async function expectStatus(p: Promise<{ status: number; json: unknown; text: string }>, status: number, what: string): Promise<Record<string, unknown>> {
  const r = await p;
  if (r.status !== status) throw new Error(`${what}: expected ${status}, got ${r.status}: ${r.text.slice(0, 500)}`);
  return r.json as Record<string, unknown>;
}

/** The bench platform and its credentials (made on the first start, so a seed can fill it before the measured one). */
async function createPlatform(port: number, adminKey: string): Promise<{ platformId: string; auth: string }> {
  const admin = { authorization: `Bearer ${adminKey}` };
  const created = await expectStatus(call(port, 'POST', '/admin/platforms', { name: 'Bench platform', skipVerificationPaperwork: true }, admin), 201, 'POST /admin/platforms');
  const cred = created.credentials as { clientId: string; clientSecret: string };
  const platformId = (created.platform as { id: string }).id;
  return { platformId, auth: `Basic ${Buffer.from(`${cred.clientId}:${cred.clientSecret}`).toString('base64')}` };
}

async function createFixtures(port: number, platform: { platformId: string; auth: string }, fundAmount: number, payerCount: number): Promise<Omit<Fixtures, 'deepCustomerId'>> {
  const auth = platform.auth;
  const h = { authorization: auth };

  const terms = (await expectStatus(call(port, 'GET', `${V}/customers/end-user-terms`, undefined, h), 200, 'GET /customers/end-user-terms')) as { version: string };
  const beneficiary = { beneficiaryType: 'INDIVIDUAL', fullName: 'Rita Receiver', countryOfResidence: 'US' };
  // A paying customer: APPROVED, a USD internal account funded with `amount`, and a payee.
  const payer = async (fullName: string, amount: number): Promise<{ customerId: string; sourceAccountId: string; payeeAccountId: string; funded: number }> => {
    const customer = await expectStatus(
      call(
        port,
        'POST',
        `${V}/customers`,
        {
          customerType: 'INDIVIDUAL',
          fullName,
          currencies: ['USD'],
          endUserTermsConsent: { acceptedAt: '2025-10-01T00:00:00Z', ipAddress: '203.0.113.9', termsVersion: terms.version, acceptanceMethod: 'CHECKBOX' },
        },
        h,
      ),
      201,
      'POST /customers',
    );
    const customerId = customer.id as string;
    if (customer.kycStatus !== 'APPROVED') throw new Error(`the bench customer is ${String(customer.kycStatus)}, not APPROVED: ${JSON.stringify(customer)}`);
    const accounts = await expectStatus(call(port, 'GET', `${V}/customers/internal-accounts?customerId=${encodeURIComponent(customerId)}`, undefined, h), 200, 'GET /customers/internal-accounts');
    const usd = (accounts.data as Array<{ id: string; balance: { currency: { code: string } } }>).find((a) => a.balance.currency.code === 'USD');
    if (!usd) throw new Error(`the bench customer has no USD internal account: ${JSON.stringify(accounts)}`);
    let funded = 0;
    while (funded < amount) {
      const step = Math.min(MAX_FUNDING, amount - funded);
      await expectStatus(call(port, 'POST', `${V}/sandbox/internal-accounts/${encodeURIComponent(usd.id)}/fund`, { amount: step }, h), 200, 'POST /sandbox/internal-accounts/{id}/fund');
      funded += step;
    }
    // The payee: a US account whose number ends in 456 (not 002–007: the payout succeeds).
    const payee = await expectStatus(
      call(port, 'POST', `${V}/customers/external-accounts`, { customerId, currency: 'USD', accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '000123456', routingNumber: '021000021', bankName: 'Sandbox Bank', beneficiary } }, h),
      201,
      'POST /customers/external-accounts (USD)',
    );
    return { customerId, sourceAccountId: usd.id, payeeAccountId: payee.id as string, funded };
  };

  // Each payer gets an equal share of the money (the requests take turns).
  const share = Math.ceil(fundAmount / payerCount / FLOW_AMOUNT) * FLOW_AMOUNT;
  const first = await payer('Bench Sender', share);
  const customerId = first.customerId;
  const payers = [first];
  for (let i = 2; i <= payerCount; i++) payers.push(await payer(`Bench Sender ${i}`, share));

  // The lookup target: a Mexican account (priced from USD through the FX table); CLABE ends in 719, no sandbox trigger.
  const lookupAccount = await expectStatus(
    call(port, 'POST', `${V}/customers/external-accounts`, { customerId, currency: 'MXN', accountInfo: { accountType: 'MXN_ACCOUNT', clabeNumber: '032180000118359719', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Rosa Receiver' } } }, h),
    201,
    'POST /customers/external-accounts (MXN)',
  );
  return {
    platformId: platform.platformId,
    customerId,
    payers: payers.map((p) => ({ sourceAccountId: p.sourceAccountId, payeeAccountId: p.payeeAccountId })),
    lookupAccountId: lookupAccount.id as string,
    funded: payers.reduce((a, p) => a + p.funded, 0),
    auth,
  };
}

// ---------------------------------------------------------------------------------------
// Scenarios

interface Target {
  port: number;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  /** Bodies the requests take in turn (the payment flow with --payers > 1); `body` is the first. */
  bodies?: string[];
}

function targetOf(name: ScenarioName, serverPort: number, barePort: number, f: Fixtures): Target {
  switch (name) {
    case 'bare':
      return { port: barePort, method: 'GET', path: '/' };
    case 'lookup':
      return { port: serverPort, method: 'GET', path: `${V}/receiver/external-account/${encodeURIComponent(f.lookupAccountId)}?customerId=${encodeURIComponent(f.customerId)}` };
    case 'customer':
      return { port: serverPort, method: 'GET', path: `${V}/customers/${encodeURIComponent(f.customerId)}` };
    case 'list':
      return { port: serverPort, method: 'GET', path: `${V}/customers` };
    case 'list-deep':
      return { port: serverPort, method: 'GET', path: `${V}/customers?cursor=${encodeURIComponent(encodeCursor(f.deepCustomerId))}` };
    case 'transactions':
      return { port: serverPort, method: 'GET', path: `${V}/transactions` };
    case 'create':
      // Every request the same body: the generated UMA addresses share one name, so their
      // random parts collide at the birthday rate; none may answer 409 (issue 15).
      // The same body goes to Prism (bench/prism.ts).
      return { port: serverPort, method: 'POST', path: `${V}/customers`, body: JSON.stringify(CREATE_BODY) };
    case 'payment': {
      // The body Prism gets too, with our ids (bench/prism.ts).
      const bodies = f.payers.map((p) => JSON.stringify(quoteBody(p.sourceAccountId, p.payeeAccountId)));
      return { port: serverPort, method: 'POST', path: `${V}/quotes`, body: bodies[0]!, ...(bodies.length > 1 ? { bodies } : {}) };
    }
  }
}

export interface ScenarioResult {
  name: ScenarioName;
  label: string;
  method: string;
  path: string;
  /** Completed requests per second (for the payment flow: flows per second). */
  rps: number;
  requests: number;
  durationS: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  errors: { non2xx: number; connection: number; timeouts: number; total: number; statusCodes: Record<string, number> };
  /**
   * rps / the bare server's rps measured next to this scenario (the mean of the bare runs
   * just before and just after it); for the bare row 1.
   */
  ratioToBare: number | null;
  /**
   * The bare server next to this scenario: the mean of the bare run just before it and the
   * one just after it (req/s and CPU µs per request), and those two runs. For the bare row:
   * the mean, fastest and slowest of all its runs.
   */
  bare?: { rps: number; cpuUsPerRequest: number | null; runs: Array<{ rps: number; cpuUsPerRequest: number | null }>; minRps?: number; maxRps?: number };
  /**
   * CPU time (user + system, /proc/<pid>/stat) the serving process(es) spent per completed
   * request during the scenario, in microseconds; for the payment flow it includes the
   * settling jobs that ran meanwhile. Less sensitive than req/s to other load on the machine.
   */
  cpuUsPerRequest: number | null;
  /** One failing request replayed after the run, to show what went wrong. */
  sampleError?: string;
  /**
   * The peer on the same operation (the four it shares: lookup, customer, create, payment):
   * Prism's req/s, and ours ÷ Prism's. `ratio` is null, and `refused` says why, when Prism
   * answered anything but 2xx (a validation error is not a mock of the operation) or did not run.
   */
  prism?: { rps: number | null; ratio: number | null; refused: string | null };
}

/** One load run against Prism (the peer), measured like a service scenario. */
export interface PeerRun {
  name: PrismOperation;
  operationId: string;
  method: string;
  path: string;
  rps: number;
  requests: number;
  durationS: number;
  latencyMs: ScenarioResult['latencyMs'];
  errors: ScenarioResult['errors'];
  /** CPU (user + system) of the Prism process per completed request, µs. */
  cpuUsPerRequest: number | null;
  sampleError?: string;
}

export interface PrismReport {
  version: string | null;
  reference: string;
  dir: string;
  /** Milliseconds from spawn to its first answer (it parses the whole reference first). */
  startMs: number | null;
  /** Why Prism did not run, when it did not (the service's figures are reported all the same). */
  error: string | null;
  /** Each operation's status from Prism once, before any load (2xx is required to load it). */
  check: Partial<Record<PrismOperation, { status: number; body: string }>>;
  runs: PeerRun[];
}

async function load(t: Target, auth: string, connections: number, duration: number): Promise<autocannon.Result> {
  // The same client settings for every scenario, the bare server included.
  return autocannon({
    url: `http://127.0.0.1:${t.port}${t.path}`,
    method: t.method,
    headers: { authorization: auth, accept: 'application/json', ...(t.body ? { 'content-type': 'application/json' } : {}) },
    ...(t.body ? { body: t.body } : {}),
    ...(t.bodies ? { requests: [{ setupRequest: turns(t.bodies) }] } : {}),
    connections,
    duration,
    pipelining: 1,
    timeout: 10,
  });
}

/** Each request the next body in turn (over all connections). */
function turns(bodies: string[]): (req: autocannon.Request) => autocannon.Request {
  let i = 0;
  return (req) => ({ ...req, body: bodies[i++ % bodies.length]! });
}

function errorsOf(r: autocannon.Result): ScenarioResult['errors'] {
  const codes: Record<string, { count?: number } | undefined> = (r as unknown as { statusCodeStats?: Record<string, { count?: number }> }).statusCodeStats ?? {};
  return {
    non2xx: r.non2xx,
    connection: r.errors,
    timeouts: r.timeouts,
    total: r.non2xx + r.errors,
    statusCodes: Object.fromEntries(Object.entries(codes).map(([k, v]) => [k, v?.count ?? 0])),
  };
}

async function replay(t: Target, auth: string): Promise<string> {
  try {
    const r = await call(t.port, t.method, t.path, t.body ? JSON.parse(t.body) : undefined, { authorization: auth });
    return `${t.method} ${t.path} → ${r.status} ${r.text.slice(0, 300)}`;
  } catch (err) {
    return `${t.method} ${t.path} → ${(err as Error).message}`;
  }
}

// ---------------------------------------------------------------------------------------
// The run

export interface BenchResult {
  ok: boolean;
  failures: string[];
  file: string;
  date: string;
  store: string;
  processes: number;
  options: Omit<BenchOptions, 'databaseUrl' | 'out'>;
  /** The server's Node options (package.json config.serverNodeOptions, as `npm start` applies them). */
  serverNodeOptions: string[];
  machine: { node: string; cpus: number; cpuModel: string; memoryGb: number; loadavgBefore: number[]; loadavgAfter: number[] };
  git: { commit: string | null; dirty: boolean | null };
  database: string;
  startup: { firstStartMs: number; firstStopMs: number; restartMs: number };
  /** With --seed: what was seeded, how long it took, the kept counts against count(*), and the database's size after it. */
  seed: SeedResult | null;
  /** After the fixtures, before any load: the lists' totalCount through the API against the platform's rows. */
  listCheck: ListCheck;
  /** Every run of the bare server, in order (before the first service scenario, then after each one). */
  bareRuns: Array<{ after: string | null; rps: number; requests: number; cpuUsPerRequest: number | null; latencyMs: ScenarioResult['latencyMs']; errors: number }>;
  rssMb: { afterWarmup: Array<{ role: string; pid: number; mb: number | null }>; afterRun: Array<{ role: string; pid: number; mb: number | null }> };
  scenarios: ScenarioResult[];
  invariants: InvariantReport | null;
  /** After the payment flow: settlement jobs pending when the load stopped, and how long (ms) the idle server took to settle them all (null: not within DRAIN_LIMIT_MS). */
  settlement: { pendingAtEnd: number; overdueMsAtEnd: number; drainedMs: number | null; after: InvariantReport } | null;
  /** Each target this run can judge (`applies`: for this store and process count), `met` null when it was not measured. */
  targets: Array<{ name: string; target: string; value: string; met: boolean | null; applies?: boolean }>;
  stop: { code: number | null; signal: string | null; stopMs: number } | null;
  cpuProfiles?: ProfileSummary[];
  /** The peer (Prism 5 on the reference), or null with --no-prism or when no shared operation ran. */
  prism: PrismReport | null;
  /**
   * The payment flow's cost once settled: the serving processes' CPU from the start of the
   * measured flows until their settlement backlog drained ÷ the flows (request + settlement),
   * and the database's bytes over the same span ÷ the flows (BenchStore.usedBytes; null on a
   * seeded SQLite store, whose dbstat scan would take minutes).
   */
  paymentCost: { flows: number; cpuUsPerFlow: number | null; bytesPerFlow: number | null; bytesMethod: string } | null;
}

/** After the fixtures: each list's totalCount through the API against its rows (count(*)) in the database. */
interface ListCheck {
  customers: { totalCount: number; rows: number; expected: number };
  transactions: { totalCount: number; rows: number };
  ok: boolean;
}

const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;
/** The mean of the values when every one is known, else null. */
const meanOrNull = (xs: Array<number | null>) => (xs.length > 0 && xs.every((x) => x !== null) ? mean(xs as number[]) : null);

export async function runBench(opts: BenchOptions): Promise<BenchResult> {
  const started = new Date();
  const loadBefore = loadavg().map((n) => round(n, 2));
  const failures: string[] = [];
  const tmp = mkdtempSync(join(tmpdir(), 'payments-bench-'));
  const logFile = join(tmp, 'server.log');
  const log = createWriteStream(logFile);
  let store: BenchStore | undefined;
  let bare: Awaited<ReturnType<typeof startBare>> | undefined;
  let server: ServerProcess | undefined;
  let peer: PrismProcess | undefined;
  try {
    if (opts.build) build();
    const entry = opts.server === 'dist' ? join(ROOT, 'dist', 'bundle', 'main.js') : join(ROOT, 'bin', 'payments-service.js');
    if (!existsSync(entry)) throw new Error(`${entry} is missing${opts.server === 'dist' ? ': run npm run build (or drop --no-build)' : ''}`);

    store = opts.store === 'sqlite' ? sqliteStore(tmp) : await postgresStore(opts.databaseUrl);
    progress(`store: ${store.describe}`);
    const port = await freePort();
    const adminKey = randomBytes(16).toString('hex');
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: store.url, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', PAYMENTS_ADMIN_KEY: adminKey };
    delete env.PAYMENTS_API_TOKEN_ID;
    delete env.PAYMENTS_API_CLIENT_SECRET;
    delete env.NODE_OPTIONS;
    const arenas = serverMallocArenaMax();
    if (arenas) env.MALLOC_ARENA_MAX = arenas;
    // The server runs with the Node options and malloc arenas `npm start` gives it (package.json config).
    const spec: StartSpec = { args: [entry, 'serve'], env, port, processes: opts.processes, log, logFile, nodeArgs: serverNodeOptions() };

    // Start-up: once on the empty store (migrations, bootstrap; the bench platform is made
    // then), stop, [seed,] then again on the existing database: that second one is the figure.
    const first = await startServer(spec);
    let platform: { platformId: string; auth: string };
    try {
      platform = await createPlatform(port, adminKey);
    } catch (err) {
      await first.stop();
      throw err;
    }
    const firstStop = await first.stop();
    if (firstStop.code !== 0) throw new Error(`the first server start stopped with code ${firstStop.code} (signal ${firstStop.signal}); log:\n${tail(logFile)}`);
    let seeded: SeedResult | undefined;
    if (opts.seed > 0) {
      progress(`seeding ${opts.seed.toLocaleString('en-US')} customers and ${opts.seed.toLocaleString('en-US')} transactions for ${platform.platformId}`);
      seeded = await seedDatabase(store.url, platform.platformId, opts.seed);
      progress(
        `seeded in ${round(seeded.seedMs / 1000, 2)} s (customers ${round(seeded.customersMs / 1000, 2)} s, transactions ${round(seeded.transactionsMs / 1000, 2)} s); database ${seeded.databaseBytes === null ? '?' : `${round(seeded.databaseBytes / 2 ** 20)} MB`}; kept counts ${seeded.countsExact ? 'exact' : 'WRONG'}`,
      );
      if (!seeded.countsExact) failures.push(`seed: kept counts differ from count(*): ${JSON.stringify(seeded.counts)}`);
    }
    if (opts.cpuProf) mkdirSync(opts.cpuProf, { recursive: true });
    const profBefore = opts.cpuProf ? new Set(readdirSync(opts.cpuProf)) : new Set<string>();
    server = await startServer({ ...spec, ...(opts.cpuProf ? { nodeArgs: [...(spec.nodeArgs ?? []), '--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`] } : {}) });
    const startup = { firstStartMs: round(first.startMs), firstStopMs: round(firstStop.stopMs), restartMs: round(server.startMs) };
    progress(`start-up to /healthz: ${startup.restartMs} ms on the existing database (first start on an empty one: ${startup.firstStartMs} ms)`);

    bare = await startBare(log);
    // The peer: Prism on the reference, started while the fixtures are made (it parses the
    // whole document first, about 20 s on two shared cores).
    const peerOps = PRISM_OPERATIONS.filter((o) => opts.scenarios.includes(o));
    let prism: PrismReport | null = null;
    let peerStarting: Promise<PrismProcess> | undefined;
    if (opts.prism && peerOps.length > 0) {
      const reference = referencePath(opts.shared);
      prism = { version: null, reference, dir: opts.prismDir, startMs: null, error: null, check: {}, runs: [] };
      try {
        if (!existsSync(reference)) throw new Error(`${reference} is missing (--shared <dir> or BENCH_SHARED_DIR names the shared folder)`);
        prism.version = ensurePrism(opts.prismDir, progress);
        const t0 = performance.now();
        const p = await freePort();
        peerStarting = startPrism(opts.prismDir, reference, p, (c) => log.write(c)).then((proc) => {
          prism!.startMs = round(performance.now() - t0, 0);
          return proc;
        });
        peerStarting.catch(() => {});
      } catch (err) {
        prism.error = (err as Error).message;
      }
    }
    // Enough money for every flow the run could possibly make (far above what 2 cores can do).
    const maxFlows = Math.ceil((opts.duration + opts.warmup) * 20_000) + 10;
    const made = await createFixtures(port, platform, opts.scenarios.includes('payment') ? maxFlows * FLOW_AMOUNT : FLOW_AMOUNT, opts.payers);
    progress(`fixtures: customer ${made.customerId}${opts.payers > 1 ? ` and ${opts.payers - 1} more payers` : ''}, funded ${made.funded} USD minor units`);
    const deepCustomerId = (await idDeepIn(store.url, 'customers', made.platformId, 0.9)) ?? made.customerId;
    const fixtures: Fixtures = { ...made, deepCustomerId };

    // The lists' totalCount (kept counts) against the rows, before any load adds to them:
    // the platform's customers are the seeded ones and the fixture customers (the payers).
    let listCheck: ListCheck | undefined;
    {
      const rows = await countsIn(store.url, made.platformId);
      const customers = await expectStatus(call(port, 'GET', `${V}/customers`, undefined, { authorization: fixtures.auth }), 200, 'GET /customers');
      const transactions = await expectStatus(call(port, 'GET', `${V}/transactions`, undefined, { authorization: fixtures.auth }), 200, 'GET /transactions');
      const expected = opts.seed + opts.payers;
      listCheck = {
        customers: { totalCount: Number(customers.totalCount), rows: rows.customers.liveRows, expected },
        transactions: { totalCount: Number(transactions.totalCount), rows: rows.transactions.rows },
        ok: false,
      };
      listCheck.ok =
        listCheck.customers.totalCount === expected && listCheck.customers.rows === expected && listCheck.transactions.totalCount === listCheck.transactions.rows && listCheck.transactions.rows >= opts.seed;
      if (!listCheck.ok) failures.push(`list totalCount check failed (customers: seeded ${opts.seed} + ${opts.payers} fixture): ${JSON.stringify(listCheck)}`);
    }

    // Each scenario answers 2xx before any load.
    for (const name of opts.scenarios) {
      const t = targetOf(name, port, bare.port, fixtures);
      const r = await call(t.port, t.method, t.path, t.body ? JSON.parse(t.body) : undefined, { authorization: fixtures.auth });
      if (r.status < 200 || r.status > 299) throw new Error(`${name}: ${t.method} ${t.path} answered ${r.status}: ${r.text.slice(0, 500)}`);
    }

    if (opts.warmup > 0) {
      for (const name of opts.scenarios) {
        const r = await load(targetOf(name, port, bare.port, fixtures), fixtures.auth, opts.connections, opts.warmup);
        const e = errorsOf(r);
        if (e.total > 0) failures.push(`${name} (warm-up): ${e.total} errors (${JSON.stringify(e.statusCodes)} non-2xx ${e.non2xx}, connection ${e.connection})`);
      }
    }
    const peerTarget = (op: PrismOperation): Target => {
      const t = prismTargets()[op];
      return { port: peer!.port, method: t.method, path: t.path, ...(t.body ? { body: t.body } : {}) };
    };
    const peerAnswers = (op: PrismOperation) => {
      const c = prism?.check[op];
      return peer !== undefined && c !== undefined && c.status >= 200 && c.status <= 299;
    };
    if (peerStarting) {
      try {
        peer = await peerStarting;
        progress(`Prism ${prism!.version} answers on port ${peer.port} (started in ${prism!.startMs} ms)`);
        // Each of Prism's requests answers 2xx once before any load; one that does not is not loaded.
        for (const op of peerOps) {
          const t = prismTargets()[op];
          const r = await call(peer.port, t.method, t.path, t.body ? JSON.parse(t.body) : undefined, { authorization: PRISM_AUTH });
          prism!.check[op] = { status: r.status, body: r.text.slice(0, 300) };
          if (r.status < 200 || r.status > 299) progress(`Prism answered ${op} (${t.method} ${t.path}) with ${r.status}: ${r.text.slice(0, 300)}; no ratio for it`);
        }
        if (opts.warmup > 0) for (const op of peerOps) if (peerAnswers(op)) await load(peerTarget(op), PRISM_AUTH, opts.connections, opts.warmup);
      } catch (err) {
        prism!.error = (err as Error).message;
        progress(`Prism did not run: ${prism!.error}`);
      }
    }
    const pidsToMeasure = server.pids;
    const afterWarmup = pidsToMeasure.map((p) => ({ ...p, mb: rssMb(p.pid) }));

    let invariants: InvariantReport | null = null;
    let settlement: BenchResult['settlement'] = null;
    const measure = async (name: ScenarioName): Promise<ScenarioResult> => {
      const t = targetOf(name, port, bare!.port, fixtures);
      progress(`${name}: ${opts.connections} connections, ${opts.duration} s`);
      const measured = name === 'bare' ? [bare!.pid] : server!.pids.filter((p) => p.role !== 'primary').map((p) => p.pid);
      const cpuBefore = measured.map(cpuMs);
      const r = await load(t, fixtures.auth, opts.connections, opts.duration);
      const cpuAfter = measured.map(cpuMs);
      const cpuUsed = cpuBefore.every((c) => c !== null) && cpuAfter.every((c) => c !== null) ? cpuAfter.reduce((a, c, i) => a + c! - cpuBefore[i]!, 0) : null;
      const errors = errorsOf(r);
      const res: ScenarioResult = {
        name,
        label: LABELS[name],
        method: t.method,
        path: t.path,
        rps: round(r.requests.total / r.duration, 0),
        requests: r.requests.total,
        durationS: r.duration,
        latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max, mean: round(r.latency.average, 2) },
        errors,
        ratioToBare: null,
        cpuUsPerRequest: cpuUsed !== null && r.requests.total > 0 ? round((cpuUsed * 1000) / r.requests.total, 0) : null,
      };
      if (errors.total > 0) {
        res.sampleError = await replay(t, fixtures.auth);
        failures.push(`${name}${name === 'bare' ? ` (after ${bareRuns.at(-1)?.after ?? 'nothing'})` : ''}: ${errors.total} errors (non-2xx ${errors.non2xx} ${JSON.stringify(errors.statusCodes)}, connection ${errors.connection}, timeouts ${errors.timeouts}); e.g. ${res.sampleError}`);
      }
      return res;
    };

    // The bare server is measured before the first service scenario and again after each
    // one, for the same duration: each scenario's ratio uses the mean of the bare runs on
    // either side of it, measured within seconds of it, so a change of the machine's load
    // during the run moves both sides of the ratio.
    const withBare = opts.scenarios.includes('bare');
    const bareRuns: BenchResult['bareRuns'] = [];
    const bareResults: ScenarioResult[] = [];
    const measureBare = async (after: string | null) => {
      const r = await measure('bare');
      bareResults.push(r);
      bareRuns.push({ after, rps: r.rps, requests: r.requests, cpuUsPerRequest: r.cpuUsPerRequest, latencyMs: r.latencyMs, errors: r.errors.total });
      return r;
    };
    // Prism on one of the four operations, measured like a service scenario (its own CPU).
    const measurePeer = async (op: PrismOperation): Promise<PeerRun> => {
      const t = peerTarget(op);
      progress(`Prism ${op}: ${opts.connections} connections, ${opts.duration} s`);
      const c0 = cpuMs(peer!.pid);
      const r = await load(t, PRISM_AUTH, opts.connections, opts.duration);
      const c1 = cpuMs(peer!.pid);
      const run: PeerRun = {
        name: op,
        operationId: prismTargets()[op].operationId,
        method: t.method,
        path: t.path,
        rps: round(r.requests.total / r.duration, 0),
        requests: r.requests.total,
        durationS: r.duration,
        latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max, mean: round(r.latency.average, 2) },
        errors: errorsOf(r),
        cpuUsPerRequest: c0 !== null && c1 !== null && r.requests.total > 0 ? round(((c1 - c0) * 1000) / r.requests.total, 0) : null,
      };
      if (run.errors.total > 0) run.sampleError = await replay(t, PRISM_AUTH);
      return run;
    };
    const servingPids = () => server!.pids.filter((p) => p.role !== 'primary').map((p) => p.pid);
    const cpuOf = (pids: number[]) => {
      const v = pids.map(cpuMs);
      return v.every((c) => c !== null) ? v.reduce((a, c) => a + c!, 0) : null;
    };
    let paymentCost: BenchResult['paymentCost'] = null;
    const serviceResults: ScenarioResult[] = [];
    if (withBare) await measureBare(null);
    for (const name of opts.scenarios) {
      if (name === 'bare') continue;
      const before = bareResults.at(-1);
      // The payment flow's cost once settled: bytes and CPU from here until its backlog drained.
      const bytesMethod = opts.store === 'sqlite' ? 'SQLite dbstat: used bytes of every table and index' : 'PostgreSQL: sum of pg_total_relation_size over the schema (pages allocated, dead row versions included)';
      const measureBytes = name === 'payment' && !(opts.store === 'sqlite' && opts.seed > 0);
      const bytes0 = measureBytes ? await store.usedBytes() : null;
      const cpu0 = name === 'payment' ? cpuOf(servingPids()) : null;
      const res = await measure(name);
      if (name === 'payment') {
        invariants = await store.checkInvariants();
        if (!invariants.ok) failures.push(`ledger invariants broken: ${JSON.stringify({ unbalanced: invariants.unbalancedEntries, balances: invariants.balanceMismatches, negative: invariants.negativeBalances, currency: invariants.currencyMismatches })}`);
        // Settlement backlog: how long the server takes, with no load, to settle every flow
        // started (each settles a second after its flow); the invariants again then.
        const drainStart = performance.now();
        let drained = invariants;
        while ((drained.jobsByStatus.pending ?? 0) > 0 && performance.now() - drainStart < DRAIN_LIMIT_MS) {
          await sleep(250);
          drained = await store.checkInvariants();
        }
        // How late settlement ran when the load stopped: how long ago the earliest pending job came due (0: none was due yet).
        const overdueMsAtEnd = invariants.oldestPendingDueMs === null ? 0 : Math.max(0, invariants.checkedAtMs - invariants.oldestPendingDueMs);
        settlement = { pendingAtEnd: invariants.jobsByStatus.pending ?? 0, overdueMsAtEnd, drainedMs: (drained.jobsByStatus.pending ?? 0) === 0 ? Math.round(performance.now() - drainStart) : null, after: drained };
        if (!drained.ok) failures.push('ledger invariants broken after the settlement backlog drained');
        if (settlement.drainedMs === null) failures.push(`settlement backlog not drained within ${DRAIN_LIMIT_MS / 1000} s after the payment flow`);
        const cpu1 = cpuOf(servingPids());
        const bytes1 = measureBytes ? await store.usedBytes() : null;
        const flows = res.requests;
        paymentCost = {
          flows,
          cpuUsPerFlow: cpu0 !== null && cpu1 !== null && flows > 0 && settlement.drainedMs !== null ? round(((cpu1 - cpu0) * 1000) / flows, 0) : null,
          bytesPerFlow: bytes0 !== null && bytes1 !== null && flows > 0 ? round((bytes1 - bytes0) / flows, 0) : null,
          bytesMethod: measureBytes ? bytesMethod : 'not measured (seeded SQLite store)',
        };
      }
      if (withBare) {
        const after = await measureBare(name);
        const runs = [before!, after].map((b) => ({ rps: b.rps, cpuUsPerRequest: b.cpuUsPerRequest }));
        const bareRps = mean(runs.map((b) => b.rps));
        const cpu = meanOrNull(runs.map((b) => b.cpuUsPerRequest));
        res.bare = { rps: round(bareRps, 0), cpuUsPerRequest: cpu === null ? null : round(cpu, 0), runs };
        res.ratioToBare = bareRps > 0 ? round(res.rps / bareRps, 3) : null;
      }
      serviceResults.push(res);
      // The peer on the same operation, after the bare run that follows ours (the service is
      // idle by then: the payment flow's backlog has drained).
      if ((PRISM_OPERATIONS as readonly string[]).includes(name) && prism) {
        const op = name as PrismOperation;
        if (!peerAnswers(op)) {
          res.prism = { rps: null, ratio: null, refused: prism.error ? `Prism did not run: ${prism.error}` : `Prism answered ${prism.check[op]?.status ?? '?'} before the load` };
        } else {
          const run = await measurePeer(op);
          prism.runs.push(run);
          const refused = run.errors.total > 0 ? `Prism answered non-2xx: ${JSON.stringify(run.errors.statusCodes)}, connection errors ${run.errors.connection}` : null;
          res.prism = { rps: run.rps, ratio: refused === null && run.rps > 0 ? round(res.rps / run.rps, 2) : null, refused };
        }
      }
    }
    if (peer) {
      await peer.stop();
      peer = undefined;
    }
    const scenarios: ScenarioResult[] = [];
    if (withBare) {
      // The bare row: the mean of every bare run (latency: the mean of their percentiles).
      const m = (f: (r: ScenarioResult) => number) => round(mean(bareResults.map(f)), 1);
      const cpu = meanOrNull(bareResults.map((r) => r.cpuUsPerRequest));
      const errs = bareResults.map((r) => r.errors);
      const statusCodes: Record<string, number> = {};
      for (const e of errs) for (const [k, v] of Object.entries(e.statusCodes)) statusCodes[k] = (statusCodes[k] ?? 0) + v;
      const sum = (f: (e: ScenarioResult['errors']) => number) => errs.reduce((a, e) => a + f(e), 0);
      scenarios.push({
        ...bareResults[0]!,
        rps: round(mean(bareResults.map((r) => r.rps)), 0),
        requests: bareResults.reduce((a, r) => a + r.requests, 0),
        durationS: round(bareResults.reduce((a, r) => a + r.durationS, 0), 2),
        latencyMs: { p50: m((r) => r.latencyMs.p50), p90: m((r) => r.latencyMs.p90), p99: m((r) => r.latencyMs.p99), max: Math.max(...bareResults.map((r) => r.latencyMs.max)), mean: m((r) => r.latencyMs.mean) },
        errors: { non2xx: sum((e) => e.non2xx), connection: sum((e) => e.connection), timeouts: sum((e) => e.timeouts), total: sum((e) => e.total), statusCodes },
        ratioToBare: 1,
        cpuUsPerRequest: cpu === null ? null : round(cpu, 0),
        bare: {
          rps: round(mean(bareResults.map((r) => r.rps)), 0),
          cpuUsPerRequest: cpu === null ? null : round(cpu, 0),
          runs: bareResults.map((r) => ({ rps: r.rps, cpuUsPerRequest: r.cpuUsPerRequest })),
          minRps: Math.min(...bareResults.map((r) => r.rps)),
          maxRps: Math.max(...bareResults.map((r) => r.rps)),
        },
      });
    }
    scenarios.push(...serviceResults);
    const afterRun = pidsToMeasure.map((p) => ({ ...p, mb: rssMb(p.pid) }));

    const stopped = await server.stop();
    server = undefined;
    if (stopped.code !== 0) failures.push(`the server stopped with code ${stopped.code} (signal ${stopped.signal}) after SIGTERM; log:\n${tail(logFile)}`);

    let cpuProfiles: ProfileSummary[] | undefined;
    if (opts.cpuProf) {
      cpuProfiles = readdirSync(opts.cpuProf)
        .filter((f) => f.endsWith('.cpuprofile') && !profBefore.has(f))
        .map((f) => summarizeCpuProfile(join(opts.cpuProf!, f), ROOT));
    }

    const result: BenchResult = {
      ok: false,
      failures,
      file: '',
      date: started.toISOString(),
      store: opts.store,
      processes: opts.processes,
      options: { store: opts.store, processes: opts.processes, duration: opts.duration, connections: opts.connections, scenarios: opts.scenarios, warmup: opts.warmup, seed: opts.seed, payers: opts.payers, server: opts.server, build: opts.build, cpuProf: opts.cpuProf, strict: opts.strict, keep: opts.keep, prism: opts.prism, shared: opts.shared, prismDir: opts.prismDir },
      serverNodeOptions: spec.nodeArgs ?? [],
      machine: { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model ?? '?', memoryGb: round(totalmem() / 2 ** 30), loadavgBefore: loadBefore, loadavgAfter: loadavg().map((n) => round(n, 2)) },
      git: gitDescribe(),
      database: store.describe,
      startup,
      seed: seeded ?? null,
      listCheck: listCheck!,
      bareRuns,
      rssMb: { afterWarmup: afterWarmup.map(({ role, pid, mb }) => ({ role, pid, mb })), afterRun: afterRun.map(({ role, pid, mb }) => ({ role, pid, mb })) },
      scenarios,
      invariants,
      settlement,
      targets: [],
      stop: { code: stopped.code, signal: stopped.signal, stopMs: round(stopped.stopMs) },
      prism,
      paymentCost,
      ...(cpuProfiles ? { cpuProfiles } : {}),
    };
    result.targets = evaluateTargets(result);
    if (opts.strict) for (const t of result.targets) if (t.met === false) failures.push(`target missed: ${t.name} ${t.target} (measured ${t.value})`);
    result.ok = failures.length === 0;

    mkdirSync(opts.out, { recursive: true });
    const suffix = opts.processes > 1 ? `${opts.store}-${opts.processes}p` : opts.store;
    result.file = join(opts.out, `${stamp(started)}-${suffix}.json`);
    writeFileSync(result.file, `${JSON.stringify(result, null, 2)}\n`);
    return result;
  } finally {
    if (server) await server.stop().catch(() => {});
    if (bare) await bare.stop().catch(() => {});
    if (peer) await peer.stop().catch(() => {});
    await new Promise((r) => log.end(r));
    if (store && !opts.keep) await store.drop().catch((err: unknown) => progress(`could not drop the bench database: ${(err as Error).message}`));
    if (!opts.keep) rmSync(tmp, { recursive: true, force: true });
    else progress(`kept ${tmp} (server log: ${logFile})`);
  }
}

function evaluateTargets(r: BenchResult): BenchResult['targets'] {
  const sc = (n: ScenarioName) => r.scenarios.find((s) => s.name === n);
  const serving = r.rssMb.afterRun.filter((p) => p.role !== 'primary');
  const maxRss = serving.length && serving.every((p) => p.mb !== null) ? Math.max(...serving.map((p) => p.mb!)) : null;
  // Targets are for SQLite on a 2-core machine; on PostgreSQL the figures are only reported.
  const applies = r.store === 'sqlite';
  const check = (name: string, target: string, value: number | null | undefined, unit: string, met: (v: number) => boolean, extra = true) => ({
    name,
    target,
    value: value === null || value === undefined ? 'n/a' : `${value}${unit}`,
    met: !applies || value === null || value === undefined ? null : met(value) && extra,
  });
  const lookup = sc('lookup');
  const customer = sc('customer');
  const payment = sc('payment');
  const applies35 = (stores: string[], processes?: number) => stores.includes(r.store) && (processes === undefined || r.processes === processes);
  const t35 = (name: string, target: string, value: number | null | undefined, unit: string, ok: (v: number) => boolean, on: boolean, why?: string) => ({
    name,
    target,
    value: value === null || value === undefined ? (why ?? 'not measured') : `${value.toLocaleString('en-US')}${unit}`,
    met: !on || value === null || value === undefined ? null : ok(value),
    applies: on,
  });
  const vsPrism = (n: ScenarioName) => {
    const s = sc(n);
    return { value: s?.prism?.ratio, why: s === undefined ? 'scenario not run' : s.prism === undefined ? 'Prism not run (--no-prism)' : (s.prism.refused ?? undefined) };
  };
  const sqlite = applies35(['sqlite']);
  const pay = vsPrism('payment');
  const create = vsPrism('create');
  const cust = vsPrism('customer');
  const look = vsPrism('lookup');
  const cpuFlow = r.paymentCost?.cpuUsPerFlow;
  // PostgreSQL's sizes move in whole 8 KB pages per relation (and extend by several at a
  // time): over few flows the figure is mostly rounding, so it is judged from 1,000 flows.
  const fewFlows = r.store === 'postgres' && (r.paymentCost?.flows ?? 0) < PG_BYTES_MIN_FLOWS;
  const bytesFlow = fewFlows ? null : r.paymentCost?.bytesPerFlow;
  const bytesWhy = fewFlows && r.paymentCost?.bytesPerFlow != null ? `${r.paymentCost.bytesPerFlow.toLocaleString('en-US')} bytes over only ${r.paymentCost.flows} flows: not judged under ${PG_BYTES_MIN_FLOWS.toLocaleString('en-US')} flows on PostgreSQL (8 KB pages; FLOWS=1000 npx tsx bench/statements.ts measures it)` : r.paymentCost?.bytesMethod;
  const issue35 = [
    t35('payment flow vs Prism (SQLite)', `≥ ${TARGETS_35.paymentVsPrism} × Prism's POST /quotes`, pay.value, ' × Prism', (v) => v >= TARGETS_35.paymentVsPrism, sqlite, pay.why),
    t35('POST /customers vs Prism (SQLite)', `≥ ${TARGETS_35.createVsPrism} × Prism`, create.value, ' × Prism', (v) => v >= TARGETS_35.createVsPrism, sqlite, create.why),
    t35('GET /customers/{id} vs Prism (SQLite)', `≥ ${TARGETS_35.readsVsPrism} × Prism`, cust.value, ' × Prism', (v) => v >= TARGETS_35.readsVsPrism, sqlite, cust.why),
    t35('receiver lookup vs Prism (SQLite)', `≥ ${TARGETS_35.readsVsPrism} × Prism`, look.value, ' × Prism', (v) => v >= TARGETS_35.readsVsPrism, sqlite, look.why),
    t35('PostgreSQL ×1 payment flow vs Prism', `≥ ${TARGETS_35.postgresPaymentVsPrism} × Prism's POST /quotes`, pay.value, ' × Prism', (v) => v >= TARGETS_35.postgresPaymentVsPrism, applies35(['postgres'], 1), pay.why),
    t35('CPU per payment flow, request + settlement (SQLite)', `≤ ${TARGETS_35.cpuUsPerFlowSqlite.toLocaleString('en-US')} µs`, cpuFlow, ' µs', (v) => v <= TARGETS_35.cpuUsPerFlowSqlite, sqlite),
    t35('service CPU per payment flow, request + settlement (PostgreSQL)', `≤ ${TARGETS_35.cpuUsPerFlowPostgres.toLocaleString('en-US')} µs`, cpuFlow, ' µs', (v) => v <= TARGETS_35.cpuUsPerFlowPostgres, applies35(['postgres'])),
    t35('bytes written per payment flow, settled', `≤ 4 KB (${TARGETS_35.bytesPerFlow.toLocaleString('en-US')} bytes)`, bytesFlow, ' bytes', (v) => v <= TARGETS_35.bytesPerFlow, true, bytesWhy),
    t35('payment flow p99', `≤ ${TARGETS_35.paymentP99Ms} ms`, payment?.latencyMs.p99, ' ms', (v) => v <= TARGETS_35.paymentP99Ms, true),
    t35('settlement keeps up', `nothing overdue > ${TARGETS_35.overdueMs / 1000} s when the load stops`, r.settlement ? round(r.settlement.overdueMsAtEnd / 1000, 2) : null, ' s overdue', (v) => v * 1000 <= TARGETS_35.overdueMs, true),
    t35('webhook delivery keeps up', `backlog empty within ${TARGETS_35.webhookDrainS} s of the load stopping`, null, '', () => false, true, 'not measured by this run (no webhook endpoint): npx tsx bench/webhook-drain.ts'),
  ];
  const out = [
    check('lookup throughput', `≥ ${TARGETS.lookupRatio} × bare`, lookup?.ratioToBare, ' × bare', (v) => v >= TARGETS.lookupRatio),
    check('lookup p99', `< ${TARGETS.lookupP99Ms} ms at 32 connections`, r.options.connections === 32 ? lookup?.latencyMs.p99 : null, ' ms', (v) => v < TARGETS.lookupP99Ms),
    check('GET /customers/{id} throughput', `≥ ${TARGETS.customerRatio} × bare`, customer?.ratioToBare, ' × bare', (v) => v >= TARGETS.customerRatio),
    check('POST /customers throughput', `≥ ${TARGETS.createRatio} × bare, no 409`, sc('create')?.ratioToBare, ' × bare', (v) => v >= TARGETS.createRatio, (sc('create')?.errors.total ?? 0) === 0),
    check('payment flows', `≥ ${TARGETS.paymentRatio} × bare, invariants holding`, payment?.ratioToBare, ' × bare', (v) => v >= TARGETS.paymentRatio, r.invariants?.ok !== false),
    check('start-up to 200 /healthz', `< ${TARGETS.startupMs} ms on an existing database`, r.startup.restartMs, ' ms', (v) => v < TARGETS.startupMs),
    check('RSS after the run', `< ${TARGETS.rssMb} MB per server process`, maxRss, ' MB', (v) => v < TARGETS.rssMb),
  ].map((t) => ({ ...t, applies }));
  return [...out, ...issue35];
}

// ---------------------------------------------------------------------------------------
// Report

export function formatReport(r: BenchResult): string {
  const lines: string[] = [];
  const o = r.options;
  lines.push(
    `Payments Service benchmark: ${r.store}, ${r.processes} server process${r.processes > 1 ? 'es (node:cluster)' : ''}, ${o.connections} connections, ${o.duration} s per scenario (warm-up ${o.warmup} s), server ${o.server}${o.seed ? `, seeded with ${o.seed.toLocaleString('en-US')} customers and transactions` : ''}${(o.payers ?? 1) > 1 ? `, ${o.payers} payers taking turns in the payment flow` : ''}`,
  );
  lines.push(`node ${r.machine.node}, ${r.machine.cpus} CPUs (${r.machine.cpuModel}), load average ${r.machine.loadavgBefore.join(' ')} before, ${r.machine.loadavgAfter.join(' ')} after`);
  if (r.serverNodeOptions?.length) lines.push(`server Node options (package.json config.serverNodeOptions, as npm start): ${r.serverNodeOptions.join(' ')}`);
  lines.push('');
  const head = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'errors', '× bare', 'CPU µs/req', 'bare req/s', 'bare CPU µs/req'];
  const cpu = (v: number | null | undefined) => (v === null || v === undefined ? '–' : String(v));
  const rows = r.scenarios.map((s) => [
    s.label,
    `${s.rps.toLocaleString('en-US')}${s.name === 'payment' ? ' flows/s' : ''}`,
    String(s.latencyMs.p50),
    String(s.latencyMs.p99),
    String(s.errors.total),
    s.ratioToBare === null ? '–' : s.ratioToBare.toFixed(3),
    cpu(s.cpuUsPerRequest),
    // The bare figures next to the scenario (mean of the runs before and after); for the bare row, its slowest–fastest run.
    !s.bare ? '–' : s.name === 'bare' ? `${(s.bare.minRps ?? 0).toLocaleString('en-US')}–${(s.bare.maxRps ?? 0).toLocaleString('en-US')}` : s.bare.rps.toLocaleString('en-US'),
    !s.bare ? '–' : s.name === 'bare' ? `${s.bare.runs.length} runs` : cpu(s.bare.cpuUsPerRequest),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const fmt = (row: string[]) => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  lines.push(fmt(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(fmt));
  if (r.bareRuns.length > 0) {
    lines.push(
      `× bare: req/s ÷ the mean of the bare runs just before and just after the scenario (bare req/s and bare CPU µs/req are that mean; the bare row is the mean of all ${r.bareRuns.length} bare runs, its range slowest–fastest)`,
    );
  }
  if (r.prism) {
    const p = r.prism;
    lines.push('');
    if (p.error) lines.push(`Prism (the peer): did not run: ${p.error}`);
    else {
      lines.push(`against Prism ${p.version} (prism mock ${p.reference}, static examples, one process, -v warn; started in ${p.startMs} ms), the same load generator and settings, each Prism run after the bare run that follows ours:`);
      const ph = ['operation', 'ours req/s', 'Prism req/s', 'ours / Prism', 'ours / bare', 'Prism p50 / p99 ms', 'Prism CPU µs/req', 'CPU Prism / ours', 'Prism statuses'];
      const prow = PRISM_OPERATIONS.flatMap((op) => {
        const s = r.scenarios.find((x) => x.name === op);
        if (!s) return [];
        const run = p.runs.find((x) => x.name === op);
        const statuses = run ? Object.entries(run.errors.statusCodes).map(([k, v]) => `${k}: ${v.toLocaleString('en-US')}`).join(', ') + (run.errors.connection ? `, connection errors ${run.errors.connection}` : '') : `check ${p.check[op]?.status ?? '–'}`;
        return [[
          `${s.label}${op === 'payment' ? ' (Prism: the one POST /quotes)' : ''}`,
          s.rps.toLocaleString('en-US'),
          run ? run.rps.toLocaleString('en-US') : '–',
          s.prism?.ratio === null || s.prism?.ratio === undefined ? `– (${s.prism?.refused ?? 'no run'})` : s.prism.ratio.toFixed(2),
          s.ratioToBare === null ? '–' : s.ratioToBare.toFixed(3),
          run ? `${run.latencyMs.p50} / ${run.latencyMs.p99}` : '–',
          run ? cpu(run.cpuUsPerRequest) : '–',
          // The same comparison by CPU per request (moves less with the machine's other load); ours for the payment flow includes its settlement jobs of the run.
          run?.cpuUsPerRequest && s.cpuUsPerRequest ? (run.cpuUsPerRequest / s.cpuUsPerRequest).toFixed(2) : '–',
          statuses,
        ]];
      });
      const pw = ph.map((h, i) => Math.max(h.length, ...prow.map((row) => row[i]!.length)));
      const pf = (row: string[]) => row.map((c, i) => (i === 0 || i === ph.length - 1 ? c.padEnd(pw[i]!) : c.padStart(pw[i]!))).join('  ').trimEnd();
      lines.push(pf(ph), pw.map((w) => '-'.repeat(w)).join('  '), ...prow.map(pf));
      lines.push('ours / Prism: our req/s ÷ Prism\'s on the same operation, refused (–) when Prism answered anything but 2xx; CPU Prism / ours: Prism\'s CPU µs per request ÷ ours (how many times more CPU a request costs Prism)');
    }
  }
  if (r.paymentCost) {
    const c = r.paymentCost;
    lines.push(
      `payment flow once settled (${c.flows.toLocaleString('en-US')} flows): ${c.cpuUsPerFlow === null ? '?' : c.cpuUsPerFlow.toLocaleString('en-US')} µs of the serving processes' CPU per flow from the load's start until the backlog drained (request + settlement); ${c.bytesPerFlow === null ? 'bytes not measured' : `${c.bytesPerFlow.toLocaleString('en-US')} database bytes per flow`} (${c.bytesMethod})`,
    );
  }
  lines.push('');
  if (r.seed) {
    const sd = r.seed;
    lines.push(
      `seed: ${sd.customers.toLocaleString('en-US')} customers + ${sd.transactions.toLocaleString('en-US')} transactions in SQL in ${round(sd.seedMs / 1000, 2)} s (customers ${round(sd.customersMs / 1000, 2)} s, transactions ${round(sd.transactionsMs / 1000, 2)} s); database ${sd.databaseBytes === null ? '?' : `${round(sd.databaseBytes / 2 ** 20)} MB`} after it; kept counts ${sd.countsExact ? 'exact' : 'WRONG'}`,
    );
  }
  const lc = r.listCheck;
  lines.push(
    `list totalCount after the fixtures: GET /customers ${lc.customers.totalCount.toLocaleString('en-US')} (expected ${lc.customers.expected.toLocaleString('en-US')}: ${r.options.seed ? 'seeded + ' : ''}${r.options.payers ?? 1} fixture${(r.options.payers ?? 1) > 1 ? 's' : ''}), GET /transactions ${lc.transactions.totalCount.toLocaleString('en-US')} (rows ${lc.transactions.rows.toLocaleString('en-US')}): ${lc.ok ? 'exact' : 'WRONG'}`,
  );
  lines.push(`start-up to 200 /healthz: ${r.startup.restartMs} ms on the existing database (first start, empty database: ${r.startup.firstStartMs} ms; graceful stop: ${r.startup.firstStopMs} ms)`);
  const rss = (list: BenchResult['rssMb']['afterRun']) => list.map((p) => `${p.role} ${p.mb ?? '?'} MB`).join(', ');
  lines.push(`resident memory: after warm-up ${rss(r.rssMb.afterWarmup)}; after the run ${rss(r.rssMb.afterRun)}`);
  if (r.invariants) {
    const i = r.invariants;
    lines.push(
      `ledger invariants after the payment flow: ${i.ok ? 'hold' : 'BROKEN'} (${i.counts.entries} entries, ${i.counts.postings} postings, ${i.counts.balances} balance rows; transactions ${JSON.stringify(i.transactionsByStatus)}, jobs ${JSON.stringify(i.jobsByStatus)})`,
    );
  }
  if (r.settlement) {
    const st = r.settlement;
    lines.push(
      `settlement backlog: ${st.pendingAtEnd} flows pending when the load stopped, the earliest due ${round(st.overdueMsAtEnd / 1000, 2)} s before (each is due 1 s after its flow); ${st.drainedMs === null ? `NOT settled within ${DRAIN_LIMIT_MS / 1000} s` : `all settled ${round(st.drainedMs / 1000, 1)} s later`} (transactions then ${JSON.stringify(st.after.transactionsByStatus)}; invariants ${st.after.ok ? 'hold' : 'BROKEN'})`,
    );
  }
  if (r.stop) lines.push(`stop after the run: exit ${r.stop.code}${r.stop.signal ? ` (${r.stop.signal})` : ''} in ${r.stop.stopMs} ms`);
  lines.push('');
  lines.push(`targets (2-core machine; ${r.store}${r.processes > 1 ? ` ×${r.processes}` : ''}: the ones that apply):`);
  for (const t of r.targets) if (t.applies !== false) lines.push(`  ${t.met === null ? 'n/a ' : t.met ? 'PASS' : 'MISS'} ${t.name}: ${t.target}; ${t.met === null && !/\d/.test(t.value) ? t.value : `measured ${t.value}`}`);
  for (const p of r.cpuProfiles ?? []) lines.push('', formatProfileSummary(p));
  lines.push('');
  lines.push(r.ok ? `OK: results in ${r.file}` : `FAILED:\n${r.failures.map((f) => `  - ${f}`).join('\n')}\nresults in ${r.file}`);
  return lines.join('\n');
}

async function main(argv: string[]): Promise<number> {
  let opts: BenchOptions | undefined;
  try {
    opts = parseOptions(argv);
  } catch (err) {
    process.stderr.write(`bench: ${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (!opts) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const result = await runBench(opts);
  process.stdout.write(`${formatReport(result)}\n`);
  return result.ok ? 0 : 1;
}

if (process.argv[1] && /bench[/\\]run\.(ts|js)$/.test(process.argv[1])) {
  process.on('SIGINT', () => process.exit(130));
  process.on('SIGTERM', () => process.exit(143));
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
