import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from '@readme/openapi-parser';
import { afterAll, describe, expect, it } from 'vitest';
import { makeApp, STORE } from '../helpers.js';

// docs/operations.md is generated from the served OpenAPI document by
// scripts/operations-table.ts; CI (.ci/run) runs its --check, and so does this test.

const ROOT = resolve(import.meta.dirname, '..', '..');
const SCRIPT = join(ROOT, 'scripts', 'operations-table.ts');

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) =>
    execFile(process.execPath, ['--import', 'tsx', SCRIPT, ...args], { cwd: ROOT, timeout: 120_000 }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

describe(`docs/operations.md (${STORE} run)`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'operations-table-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is what the script generates (--check exits 0), and --check exits 1 on a file that differs', async () => {
    const ok = await run(['--check']);
    expect(ok.code, ok.stderr).toBe(0);
    const stale = join(dir, 'operations.md');
    writeFileSync(stale, readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8').replace('| GET | `/customers` |', '| GET | `/clients` |'));
    const bad = await run(['--check', '--out', stale]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/npm run docs:operations/);
  }, 240_000);

  it('lists every operation of the served document once, each with its area folder', async () => {
    const text = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
    const t = await makeApp();
    try {
      const doc = (await t.app.inject({ method: 'GET', url: '/2025-10-13/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
      const served = Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`));
      const rows = [...text.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \| [^|]+ \| `src\/[^`]+` \|/gm)].map((m) => `${m[1]} ${m[2]}`);
      expect(rows.slice().sort()).toEqual(served.slice().sort());
    } finally {
      await t.close();
    }
  });
});

// The table tells the sandbox's extensions apart by `x-extension: true` in the served
// document (it never reads the reference): every operation not in the reference must
// carry it, and no operation of the reference may.
const REFERENCE = [join(ROOT, '..', 'shared', 'reference', 'openapi.yaml'), '/work/shared/reference/openapi.yaml'].find((p) => existsSync(p));

describe(`x-extension marks exactly the operations the reference lacks (${STORE})`, () => {
  it(`the served document against ${REFERENCE ? 'the reference' : 'the reference (absent here: every extension must at least be marked)'}`, async () => {
    const t = await makeApp();
    try {
      const doc = (await t.app.inject({ method: 'GET', url: '/2025-10-13/openapi.json' })).json() as { paths: Record<string, Record<string, { 'x-extension'?: boolean }>> };
      const marked = new Set<string>();
      const all: string[] = [];
      for (const [p, item] of Object.entries(doc.paths))
        for (const [m, op] of Object.entries(item)) {
          all.push(`${m.toUpperCase()} ${p}`);
          if (op['x-extension'] === true) marked.add(`${m.toUpperCase()} ${p}`);
        }
      expect(marked.size).toBeGreaterThan(0);
      if (!REFERENCE) return;
      const ref = (await parse(REFERENCE)) as unknown as { paths: Record<string, Record<string, unknown>> };
      const inRef = new Set(Object.entries(ref.paths).flatMap(([p, item]) => Object.keys(item).filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m)).map((m) => `${m.toUpperCase()} ${p}`)));
      expect(all.filter((o) => !inRef.has(o)).sort()).toEqual([...marked].sort());
    } finally {
      await t.close();
    }
  });
});
