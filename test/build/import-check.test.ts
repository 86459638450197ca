import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// The import rules of src/ (scripts/check-imports.mjs, docs/architecture.md "Layers and
// imports"): the check passes on the tree as it is, and fails, naming the import, on a copy
// with one import that breaks a rule.

const root = resolve(import.meta.dirname, '../..');
const script = join(root, 'scripts/check-imports.mjs');
const temp = mkdtempSync(join(tmpdir(), 'import-check-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

function check(dir: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [script, dir], { encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** A small tree of files (path → text) under a fresh directory. */
function tree(name: string, files: Record<string, string>): string {
  const dir = join(temp, name);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

/** A copy of the real src/ with `line` appended to `file`. */
function realTreeWith(name: string, file: string, line: string): string {
  const dir = join(temp, name);
  cpSync(join(root, 'src'), dir, { recursive: true });
  appendFileSync(join(dir, file), `\n${line}\n`);
  return dir;
}

describe('the import check', () => {
  it('passes on src/ as it is', () => {
    const r = check(join(root, 'src'));
    expect(r.out).toMatch(/no broken rule/);
    expect(r.status).toBe(0);
  });

  it('fails on an upward import added to the real tree (kernel → app.ts), naming it', () => {
    const r = check(realTreeWith('upward', 'kernel/ids.ts', "import type { AppDeps } from '../app.js';"));
    expect(r.status).toBe(1);
    expect(r.out).toMatch(/upward: src\/kernel\/ids\.ts:\d+ imports src\/app\.ts \(kernel → app/);
    // app.ts imports the kernel: the same line also closes a circle.
    expect(r.out).toMatch(/circle: \d+ files import each other/);
  });

  it('fails on an area importing app.ts (type-only imports count)', () => {
    const r = check(realTreeWith('area-up', 'operator/ops/service.ts', "import type { buildApp } from '../../app.js';"));
    expect(r.status).toBe(1);
    expect(r.out).toMatch(/upward: src\/operator\/ops\/service\.ts:\d+ imports src\/app\.ts \(areas → app/);
  });

  it('fails on an import circle, naming each import of it', () => {
    const r = check(
      tree('circle', {
        'kernel/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
        'kernel/b.ts': "import type { a } from './a.js';\nexport const b = 1 as unknown as typeof a;\n",
        'kernel/c.ts': "export const c = import('./c.js');\n",
      }),
    );
    expect(r.status).toBe(1);
    expect(r.out).toContain('circle: 2 files import each other');
    expect(r.out).toMatch(/src\/kernel\/a\.ts:1 → src\/kernel\/b\.ts/);
    expect(r.out).toMatch(/src\/kernel\/b\.ts:1 → src\/kernel\/a\.ts/);
    expect(r.out).toMatch(/circle: 1 files import each other:\s+src\/kernel\/c\.ts:1 → src\/kernel\/c\.ts/);
  });

  it("fails on a route file importing another area's routes or service, and on an unlisted area", () => {
    const r = check(
      tree('routes', {
        'kernel/http.ts': 'export const h = 1;\n',
        'areas.ts': "import { quotesArea } from './api/quotes/area.js';\nexport const AREAS = [quotesArea];\n",
        'api/quotes/area.ts': "import { quotesRoutes } from './routes.js';\nexport const quotesArea = { name: 'quotes', api: [quotesRoutes] };\n",
        'api/quotes/routes.ts': [
          "import { h } from '../../kernel/http.js';",
          "import { Wallet } from '../../sandbox/wallets/schemas.js';",
          "import { walletRoutes } from '../../sandbox/wallets/routes.js';",
          "import { authorize } from '../../sandbox/wallets/service.js';",
          'export const quotesRoutes = [h, Wallet, walletRoutes, authorize];',
        ].join('\n'),
        'sandbox/wallets/routes.ts': 'export const walletRoutes = 1;\n',
        'sandbox/wallets/schemas.ts': 'export const Wallet = 1;\n',
        'sandbox/wallets/service.ts': 'export const authorize = 1;\n',
      }),
    );
    expect(r.status).toBe(1);
    expect(r.out).toMatch(/surface: src\/api\/quotes\/routes\.ts:3 imports src\/sandbox\/wallets\/routes\.ts/);
    expect(r.out).toMatch(/routes: src\/api\/quotes\/routes\.ts:4 imports src\/sandbox\/wallets\/service\.ts/);
    expect(r.out).toMatch(/routes: src\/api\/quotes\/routes\.ts:2 imports src\/sandbox\/wallets\/schemas\.ts/);
    expect(r.out).toMatch(/registered: src\/sandbox\/wallets\/ has routes or pages but no area\.ts/);
  });
});
