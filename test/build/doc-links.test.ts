import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The documentation's relative links (issue 34): scripts/check-doc-links.mjs, which CI runs
// after the type check, must pass on the repository, and must catch what it is for: a link
// to a missing file or to a heading that does not exist (GitHub's slug rules).

const ROOT = resolve(import.meta.dirname, '..', '..');
const SCRIPT = join(ROOT, 'scripts', 'check-doc-links.mjs');

function check(root?: string): Promise<{ code: number; out: string }> {
  return new Promise((done) => {
    execFile(process.execPath, root === undefined ? [SCRIPT] : [SCRIPT, root], { timeout: 60_000 }, (err, stdout) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout }),
    );
  });
}

describe('documentation links', () => {
  it('every relative link of README.md and docs/ resolves to a file and, with an anchor, a heading', async () => {
    const { code, out } = await check();
    expect(out).toMatch(/doc links: \d+ checked, 0 broken/);
    expect(code).toBe(0);
  });

  it('docs/README.md lists every page under docs/', () => {
    const index = readFileSync(join(ROOT, 'docs', 'README.md'), 'utf8');
    const pages: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (name.endsWith('.md')) pages.push(relative(join(ROOT, 'docs'), path));
      }
    };
    walk(join(ROOT, 'docs'));
    const missing = pages.filter((page) => !index.includes(`](${page})`));
    expect(missing).toEqual([]);
  });

  describe('on a tree with broken links', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'doc-links-'));
      mkdirSync(join(dir, 'docs', 'sub'), { recursive: true });
      writeFileSync(
        join(dir, 'docs', 'target.md'),
        [
          '# Target',
          '## `POST /sandbox/send`: real-time funding',
          '## Issue 19: cards',
          '## Repeated',
          '## Repeated',
          '## The **bold** and [linked](https://example.com) heading',
          '<a id="kept-anchor"></a>',
          '```md',
          '## Not a heading inside a code block',
          '```',
        ].join('\n'),
      );
      writeFileSync(
        join(dir, 'README.md'),
        [
          '[ok](docs/target.md) [ok](docs/target.md#post-sandboxsend-real-time-funding)',
          '[ok](docs/target.md#issue-19-cards) [ok](docs/target.md#repeated-1) [ok](docs/target.md#kept-anchor)',
          '[ok](docs/target.md#the-bold-and-linked-heading) [elsewhere](https://example.com/x.md#nothing)',
          '`[in code](docs/missing.md)`',
          '[missing file](docs/missing.md)',
        ].join('\n'),
      );
      writeFileSync(
        join(dir, 'docs', 'sub', 'page.md'),
        [
          '# Page',
          '[ok](../target.md#repeated) [ok](#page) [ok](../../README.md)',
          '[missing heading](../target.md#repeated-2)',
          '[inside a code block is a heading only there](../target.md#not-a-heading-inside-a-code-block)',
          '```',
          '[ignored](nowhere.md)',
          '```',
          '[wrong level](target.md)',
        ].join('\n'),
      );
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('fails and names each broken link, and only those', async () => {
      const { code, out } = await check(dir);
      expect(code).toBe(1);
      const broken = out.trim().split('\n').slice(0, -1).sort();
      expect(broken).toEqual(
        [
          'README.md:5: docs/missing.md: no such file',
          'docs/sub/page.md:3: ../target.md#repeated-2: no heading #repeated-2 in docs/target.md',
          'docs/sub/page.md:4: ../target.md#not-a-heading-inside-a-code-block: no heading #not-a-heading-inside-a-code-block in docs/target.md',
          'docs/sub/page.md:8: target.md: no such file',
        ].sort(),
      );
      expect(out).toMatch(/doc links: 13 checked, 4 broken/);
    });
  });
});
