import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// Keeps the benchmark harness (bench/run.ts, `npm run bench`) working: one short run of
// every scenario, about a second each with few connections, on SQLite. No timing is
// asserted, only that the run completes, reports every scenario with zero errors, finds
// the ledger invariants holding and writes its results JSON. The server runs from the
// sources (--server bin) so the test does not pay for a build. Once per suite: the harness
// makes its own store, so the PostgreSQL project skips it. A second, shorter run seeds 2,000
// customers and transactions (--seed) and checks what the seed reports and the lists count.
// Both runs pass --no-prism: npm test never installs Prism (the bench's peer); its requests
// are checked against the reference in prism-requests.test.ts.

const ROOT = resolve(import.meta.dirname, '..', '..');
const STORE = process.env.TEST_STORE ?? 'sqlite';

interface Result {
  ok: boolean;
  failures: string[];
  scenarios: Array<{
    name: string;
    requests: number;
    rps: number;
    errors: { total: number };
    ratioToBare: number | null;
    cpuUsPerRequest: number | null;
    bare?: { rps: number; cpuUsPerRequest: number | null; runs: Array<{ rps: number }> };
  }>;
  bareRuns: Array<{ after: string | null; rps: number }>;
  seed: {
    customers: number;
    transactions: number;
    seedMs: number;
    databaseBytes: number | null;
    countsExact: boolean;
    counts: { customers: { rows: number; kept: number }; transactions: { rows: number; kept: number } };
  } | null;
  listCheck: { customers: { totalCount: number; expected: number }; transactions: { totalCount: number; rows: number }; ok: boolean };
  invariants: { ok: boolean } | null;
  settlement: { pendingAtEnd: number; overdueMsAtEnd: number; drainedMs: number | null; after: { ok: boolean; jobsByStatus: Record<string, number> } } | null;
  startup: { restartMs: number };
  rssMb: { afterRun: Array<{ mb: number | null }> };
  prism: unknown;
  paymentCost: { flows: number; cpuUsPerFlow: number | null; bytesPerFlow: number | null } | null;
  targets: Array<{ name: string; value: string; met: boolean | null; applies?: boolean }>;
}

function run(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    execFile(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'run.ts'), ...args], { cwd: ROOT, timeout: 110_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      done({ code, output: `${stdout}\n${stderr}` });
    });
  });
}

describe.skipIf(STORE !== 'sqlite')('benchmark harness (smoke)', () => {
  it('runs every scenario briefly with no errors and writes a results JSON', async () => {
    const out = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
    try {
      const { code, output } = await run(['--server', 'bin', '--duration', '1', '--warmup', '0', '--connections', '4', '--no-prism', '--out', out]);
      expect(code, output).toBe(0);
      const files = readdirSync(out).filter((f) => f.endsWith('-sqlite.json'));
      expect(files, output).toHaveLength(1);
      const result = JSON.parse(readFileSync(join(out, files[0]!), 'utf8')) as Result;
      expect(result.failures).toEqual([]);
      expect(result.ok).toBe(true);
      const services = ['lookup', 'customer', 'list', 'list-deep', 'transactions', 'create', 'payment'];
      expect(result.scenarios.map((s) => s.name)).toEqual(['bare', ...services]);
      for (const s of result.scenarios) {
        expect(s.errors.total, s.name).toBe(0);
        expect(s.requests, s.name).toBeGreaterThan(0);
        expect(s.cpuUsPerRequest, s.name).toBeGreaterThan(0);
      }
      // The bare server runs before the first service scenario and after each one; each ratio
      // divides by the mean of the two bare runs around its scenario.
      expect(result.bareRuns.map((b) => b.after)).toEqual([null, ...services]);
      for (const [i, s] of result.scenarios.slice(1).entries()) {
        const around = [result.bareRuns[i]!.rps, result.bareRuns[i + 1]!.rps];
        expect(s.bare?.runs.map((b) => b.rps), s.name).toEqual(around);
        expect(s.ratioToBare, s.name).toBeCloseTo(s.rps / ((around[0]! + around[1]!) / 2), 2);
      }
      expect(result.seed).toBeNull();
      expect(result.listCheck.ok).toBe(true);
      expect(result.listCheck.customers.totalCount).toBe(1);
      expect(result.invariants?.ok).toBe(true);
      // The settlement backlog drained after the payment flow, the invariants holding then too.
      expect(result.settlement?.drainedMs).toBeGreaterThanOrEqual(0);
      // How late the earliest pending settlement was when the load stopped: a duration, 0 when none was due.
      expect(result.settlement?.overdueMsAtEnd).toBeGreaterThanOrEqual(0);
      expect(result.settlement?.overdueMsAtEnd).toBeLessThan(60_000);
      expect(result.settlement?.after.ok).toBe(true);
      expect(result.settlement?.after.jobsByStatus.pending ?? 0).toBe(0);
      expect(result.startup.restartMs).toBeGreaterThan(0);
      expect(result.rssMb.afterRun[0]?.mb).toBeGreaterThan(0);
      // The payment flow once settled: CPU and database bytes per flow, both measured.
      expect(result.paymentCost?.flows).toBe(result.scenarios.find((s) => s.name === 'payment')!.requests);
      expect(result.paymentCost?.cpuUsPerFlow).toBeGreaterThan(0);
      expect(result.paymentCost?.bytesPerFlow).toBeGreaterThan(500);
      // Issue 35's targets are judged where measured; without Prism its ratios are not.
      expect(result.prism).toBeNull();
      const target = (n: string) => result.targets.find((x) => x.name === n);
      expect(target('payment flow vs Prism (SQLite)')).toMatchObject({ met: null, value: 'Prism not run (--no-prism)' });
      expect(target('bytes written per payment flow, settled')?.met).toEqual(expect.any(Boolean));
      expect(target('settlement keeps up')?.met).toEqual(expect.any(Boolean));
      expect(target('CPU per payment flow, request + settlement (SQLite)')?.value).toBe(`${result.paymentCost!.cpuUsPerFlow!.toLocaleString('en-US')} µs`);
      expect(target('service CPU per payment flow, request + settlement (PostgreSQL)')?.applies).toBe(false);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);

  it('--seed fills the bench platform in SQL before the measured start, and the lists count the seeded rows exactly', async () => {
    const out = mkdtempSync(join(tmpdir(), 'bench-smoke-seed-'));
    try {
      const { code, output } = await run(['--server', 'bin', '--duration', '0.5', '--warmup', '0', '--connections', '4', '--no-prism', '--seed', '2000', '--scenarios', 'bare,list,list-deep,transactions', '--out', out]);
      expect(code, output).toBe(0);
      const files = readdirSync(out).filter((f) => f.endsWith('-sqlite.json'));
      expect(files, output).toHaveLength(1);
      const result = JSON.parse(readFileSync(join(out, files[0]!), 'utf8')) as Result;
      expect(result.failures).toEqual([]);
      expect(result.seed).toMatchObject({ customers: 2000, transactions: 2000, countsExact: true });
      expect(result.seed!.counts.customers).toEqual(expect.objectContaining({ rows: 2000, kept: 2000 }));
      expect(result.seed!.counts.transactions).toEqual(expect.objectContaining({ rows: 2000, kept: 2000 }));
      expect(result.seed!.seedMs).toBeGreaterThan(0);
      expect(result.seed!.databaseBytes).toBeGreaterThan(0);
      // Through the API after the fixtures: the seeded customers and the fixture customer; the
      // seeded transactions and the fixture's funding.
      expect(result.listCheck.ok).toBe(true);
      expect(result.listCheck.customers).toEqual({ totalCount: 2001, rows: 2001, expected: 2001 });
      expect(result.listCheck.transactions.totalCount).toBe(result.listCheck.transactions.rows);
      expect(result.listCheck.transactions.totalCount).toBeGreaterThan(2000);
      expect(result.scenarios.map((s) => s.name)).toEqual(['bare', 'list', 'list-deep', 'transactions']);
      for (const s of result.scenarios) {
        expect(s.errors.total, s.name).toBe(0);
        expect(s.requests, s.name).toBeGreaterThan(0);
      }
      expect(result.startup.restartMs).toBeGreaterThan(0);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);
});
