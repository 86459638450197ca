import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, sleep, STORE, V } from '../helpers.js';

// The one-file server of `npm run build` (scripts/bundle.mjs → dist/bundle/main.js), which
// the benchmark starts: built into a scratch directory under dist/ (its CommonJS
// dependencies resolve from the project's node_modules), then run as a real process that
// serves the API and stops on SIGTERM. Once per suite: the PostgreSQL project skips it.

const ROOT = resolve(import.meta.dirname, '..', '..');

describe.skipIf(STORE !== 'sqlite')('the bundled server (dist/bundle/main.js)', () => {
  let out: string;
  let data: string;
  beforeAll(() => {
    mkdirSync(join(ROOT, 'dist'), { recursive: true });
    out = mkdtempSync(join(ROOT, 'dist', '.bundle-test-'));
    data = mkdtempSync(join(tmpdir(), 'bundle-test-'));
  });
  afterAll(() => {
    rmSync(out, { recursive: true, force: true });
    rmSync(data, { recursive: true, force: true });
  });

  it('bundles our sources and the ES-module dependencies, keeps the CommonJS ones external, and serves', async () => {
    const outfile = join(out, 'main.js');
    await new Promise<void>((done, fail) =>
      execFile(process.execPath, [join(ROOT, 'scripts', 'bundle.mjs'), '--outfile', outfile], { cwd: ROOT, timeout: 60_000 }, (err, _o, stderr) =>
        err ? fail(new Error(`${err.message}\n${stderr}`)) : done(),
      ),
    );
    expect(existsSync(`${outfile}.map`)).toBe(true);
    const code = readFileSync(outfile, 'utf8');
    // typebox and kysely are inside; fastify and better-sqlite3 are imported from node_modules.
    expect(code).not.toMatch(/^import [^;]* from ["'](typebox|kysely)["']/m);
    expect(code).toMatch(/^import [^;]* from ["']fastify["']/m);
    expect(code).toMatch(/^import [^;]* from ["']better-sqlite3["']/m);

    await serveAndCheck([outfile, 'serve'], { PAYMENTS_API_TOKEN_ID: 'bundle-token', PAYMENTS_API_CLIENT_SECRET: 'bundle-secret' }, join(data, 'a.sqlite'));
  }, 90_000);

  it('npm start builds the bundle and serves from it; unset credentials are generated and printed', async () => {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const output = await serveAndCheck([], {}, join(data, 'b.sqlite'), npm, ['start']);
    expect(output).toMatch(/PAYMENTS_API_TOKEN_ID=\S+/);
    expect(existsSync(join(ROOT, 'dist', 'bundle', 'main.js'))).toBe(true);
  }, 90_000);
});

/**
 * Runs the server (`node <args>` or `<command> <args>`) on a free port and the SQLite file
 * `db`, waits for /healthz, creates and reads a customer (with the given credentials, or
 * with the pair the server printed), checks a validation error, stops it with SIGTERM and
 * expects exit 0. Answers the server's output.
 */
async function serveAndCheck(args: string[], creds: Record<string, string>, db: string, command = process.execPath, commandArgs: string[] = []): Promise<string> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const env: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', DATABASE_URL: `sqlite:${db}` };
  for (const k of ['PAYMENTS_API_TOKEN_ID', 'PAYMENTS_API_CLIENT_SECRET', 'PAYMENTS_ADMIN_KEY', 'NODE_OPTIONS']) delete env[k];
  Object.assign(env, creds);
  const child = spawn(command, [...commandArgs, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (output += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (output += s));
  const exited = new Promise<number | string>((ok) => child.on('exit', (c, signal) => ok(c ?? signal ?? -1)));
  try {
    const base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const ok = await fetch(`${base}/healthz`).then((r) => r.status === 200, () => false);
      if (ok) break;
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the server did not become healthy:\n${output}`);
      await sleep(50);
    }
    const user = creds.PAYMENTS_API_TOKEN_ID ?? /PAYMENTS_API_TOKEN_ID=(\S+)/.exec(output)?.[1] ?? '';
    const secret = creds.PAYMENTS_API_CLIENT_SECRET ?? /PAYMENTS_API_CLIENT_SECRET=(\S+)/.exec(output)?.[1] ?? '';
    const auth = { authorization: basic(user, secret) };
    const created = await fetch(`${base}${V}/customers`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ customerType: 'INDIVIDUAL', fullName: 'Bundle Test' }),
    });
    expect(created.status, output).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const read = await fetch(`${base}${V}/customers/${id}`, { headers: auth });
    expect(read.status).toBe(200);
    expect(((await read.json()) as { fullName: string }).fullName).toBe('Bundle Test');
    const invalid = await fetch(`${base}${V}/customers`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' });
    expect(invalid.status).toBe(400);
    expect(((await invalid.json()) as { code: string }).code).toBe('INVALID_INPUT');
  } finally {
    child.kill('SIGTERM');
  }
  expect(await exited, output).toBe(0);
  return output;
}
