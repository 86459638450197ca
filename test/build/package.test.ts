import { execFile } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE } from '../helpers.js';

// The package as a platform installs it (issue 21): `verifyWebhookSignature` importable right
// after `npm install`, without a separate build. `prepare` (run by `npm install` in a checkout,
// for a git dependency and before `npm pack`) builds dist/bundle/, and the package's "files"
// ship it in the tarball. Once per suite: the PostgreSQL project skips it.

const ROOT = resolve(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  exports: Record<string, { types: string; default: string }>;
};

function run(cmd: string, args: string[], cwd: string, input?: string): Promise<string> {
  return new Promise((done, fail) => {
    const child = execFile(cmd, args, { cwd, timeout: 60_000, maxBuffer: 8 << 20 }, (err, stdout, stderr) =>
      err ? fail(new Error(`${err.message}\n${stderr}`)) : done(stdout),
    );
    if (input !== undefined) child.stdin!.end(input);
  });
}

describe.skipIf(STORE !== 'sqlite')('the payments-service package', () => {
  let app: string;
  beforeAll(async () => {
    // What `npm install` runs in the package before a platform imports it.
    await run('npm', ['run', '--silent', 'prepare'], ROOT);
    // A platform's project with the package installed as `npm install <folder>` does (a link).
    app = mkdtempSync(join(tmpdir(), 'package-test-'));
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'platform-app', private: true, type: 'module' }));
    mkdirSync(join(app, 'node_modules'));
    symlinkSync(ROOT, join(app, 'node_modules', 'payments-service'), 'dir');
  });
  afterAll(() => rmSync(app, { recursive: true, force: true }));

  it('prepare builds the bundle the package entry points at', () => {
    expect(pkg.scripts.prepare).toBe('node scripts/bundle.mjs');
    expect(pkg.exports['.']!.default).toBe('./dist/bundle/index.js');
    expect(pkg.exports['./testing']).toEqual({ types: './dist/bundle/testing.d.ts', default: './dist/bundle/testing.js' });
  });

  it('verifyWebhookSignature imports from the package and checks a real signature', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const body = JSON.stringify({ type: 'TEST', data: { n: 1 } });
    const signature = sign('sha256', Buffer.from(body), privateKey).toString('base64');
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const script = `
      import { verifyWebhookSignature, SIGNATURE_HEADER } from 'payments-service';
      const { body, signature, pem } = JSON.parse(await new Promise((r) => { let s = ''; process.stdin.on('data', (c) => (s += c)).on('end', () => r(s)); }));
      console.log(JSON.stringify({
        header: SIGNATURE_HEADER,
        good: verifyWebhookSignature(body, signature, pem),
        tampered: verifyWebhookSignature(body.replace('1', '2'), signature, pem),
        garbage: verifyWebhookSignature(body, 'not-a-signature', pem),
      }));`;
    const out = await run(process.execPath, ['--input-type=module', '-e', script], app, JSON.stringify({ body, signature, pem }));
    expect(JSON.parse(out)).toEqual({ header: 'X-Service-Signature', good: true, tampered: false, garbage: false });
  });

  it('the packed tarball ships the built entry, the server bundle and the command, and no data or tests', async () => {
    const [packed] = JSON.parse(await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], ROOT)) as [{ files: Array<{ path: string }> }];
    const files = packed.files.map((f) => f.path);
    expect(files).toEqual(expect.arrayContaining(['dist/bundle/index.js', 'dist/bundle/main.js', 'dist/bundle/testing.js', 'dist/bundle/testing.d.ts', 'bin/payments-service.js', 'scripts/bundle.mjs', 'src/index.ts', 'package.json', 'README.md', 'LICENSE']));
    expect(files.filter((f) => /^(test|data|bench|node_modules|docs|\.ci)\//.test(f) || f.startsWith('dist/src/') || f.includes('.bundle-test-'))).toEqual([]);
    // The command tells a checkout from an installed package by this file (issue 36).
    expect(files).not.toContain('package-lock.json');
  });

  it('carries the metadata a registry expects, and the MIT license text (issue 36)', () => {
    const meta = pkg as unknown as { license: string; author: string; keywords: string[]; engines: { node: string }; bin: Record<string, string> };
    expect(meta).toMatchObject({ license: 'MIT', author: 'Payments Service contributors', engines: { node: '>=20.19' }, bin: { 'payments-service': 'bin/payments-service.js' } });
    expect(meta.keywords).toEqual(expect.arrayContaining(['payments', 'sandbox']));
    const license = readFileSync(join(ROOT, 'LICENSE'), 'utf8');
    expect(license).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} Payments Service contributors\n/);
  });
});
