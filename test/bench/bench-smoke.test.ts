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
// makes its own store, so the PostgreSQL project skips it.

const ROOT = resolve(import.meta.dirname, '..', '..');
const STORE = process.env.TEST_STORE ?? 'sqlite';

interface Result {
  ok: boolean;
  failures: string[];
  scenarios: Array<{ name: string; requests: number; rps: number; errors: { total: number } }>;
  invariants: { ok: boolean } | null;
  startup: { restartMs: number };
  rssMb: { afterRun: Array<{ mb: number | null }> };
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
      const { code, output } = await run(['--server', 'bin', '--duration', '1', '--warmup', '0', '--connections', '4', '--out', out]);
      expect(code, output).toBe(0);
      const files = readdirSync(out).filter((f) => f.endsWith('-sqlite.json'));
      expect(files, output).toHaveLength(1);
      const result = JSON.parse(readFileSync(join(out, files[0]!), 'utf8')) as Result;
      expect(result.failures).toEqual([]);
      expect(result.ok).toBe(true);
      expect(result.scenarios.map((s) => s.name)).toEqual(['bare', 'lookup', 'customer', 'list', 'create', 'payment']);
      for (const s of result.scenarios) {
        expect(s.errors.total, s.name).toBe(0);
        expect(s.requests, s.name).toBeGreaterThan(0);
      }
      expect(result.invariants?.ok).toBe(true);
      expect(result.startup.restartMs).toBeGreaterThan(0);
      expect(result.rssMb.afterRun[0]?.mb).toBeGreaterThan(0);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);
});
