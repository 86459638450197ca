import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { insertToken } from '../src/api/tokens/store.js';
import { newId } from '../src/kernel/ids.js';
import { type Running, startServer } from '../src/server.js';
import { basic, STORE, V } from './helpers.js';

// The payments-service command, run for real (node bin/payments-service.js) against a
// store of its own, and shared with a server on the same store.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'payments-service.js');

interface Db {
  url: string;
  drop(): Promise<void>;
}

/** A fresh store: a temporary SQLite file, or a new PostgreSQL database. */
async function freshDatabase(): Promise<Db> {
  if (STORE === 'postgres') {
    const admin = process.env.TEST_DATABASE_URL!;
    const name = `cli_${randomBytes(6).toString('hex')}`;
    const run = async (q: string) => {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      try {
        await c.query(q);
      } finally {
        await c.end();
      }
    };
    await run(`CREATE DATABASE "${name}"`);
    const u = new URL(admin);
    u.pathname = `/${name}`;
    return { url: u.toString(), drop: () => run(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
  }
  const dir = mkdtempSync(join(tmpdir(), 'payments-cli-'));
  return { url: `sqlite:${join(dir, 'cli.sqlite')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

function childEnv(databaseUrl: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', ...extra };
  for (const k of ['PAYMENTS_API_TOKEN_ID', 'PAYMENTS_API_CLIENT_SECRET', 'PAYMENTS_ADMIN_KEY', 'PORT', 'HOST']) if (!(k in extra)) delete env[k];
  return env;
}

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(databaseUrl: string, ...args: string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: childEnv(databaseUrl), timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

function ok(r: Result): string {
  expect(r.stderr, r.stderr).toBe('');
  expect(r.code).toBe(0);
  return r.stdout;
}

interface PlatformOut {
  platform: { id: string; name: string; regulated: boolean; isDefault: boolean; skipVerificationPaperwork: boolean };
  credentials: { tokenId: string; clientId: string; clientSecret: string };
}
interface TokenOut {
  id: string;
  name: string;
  permissions: string[];
  clientId: string;
  clientSecret?: string;
  createdAt: string;
  updatedAt: string;
}

const USAGE = /Usage: payments-service <command>[\s\S]*token revoke \[--platform <id>\] <tokenId>/;

describe(`payments-service command (${STORE})`, { timeout: 90_000 }, () => {
  let db: Db;
  let server: Running | undefined;
  let x: PlatformOut;
  let viewToken: TokenOut;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await server?.close();
    await db.drop();
  });

  it('prints the usage on help, and exits 2 with the usage on bad usage', async () => {
    const help = await cli(db.url, 'help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(USAGE);
    const cases: Array<[string[], RegExp]> = [
      [['bogus'], /unknown command "bogus"/],
      [['platform'], /unknown command "platform"/],
      [['platform', 'create'], /platform create needs --name/],
      [['platform', 'list', '--bogus'], /Unknown option '--bogus'/],
      [['token', 'create', '--name', 'x', '--permissions', 'VIEW,ROOT'], /--permissions takes VIEW, TRANSACT, MANAGE; got "ROOT"/],
      [['token', 'revoke'], /token revoke needs the token id/],
    ];
    const results: Result[] = [];
    for (const [args] of cases) results.push(await cli(db.url, ...args));
    results.forEach((r, i) => {
      const [args, message] = cases[i]!;
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout, args.join(' ')).toBe('');
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr, args.join(' ')).toMatch(USAGE);
    });
  });

  it('explains that token commands need a default platform or --platform', async () => {
    const r = await cli(db.url, 'token', 'create', '--name', 'early');
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/No default platform yet/);
    expect(r.stderr).not.toMatch(/Usage:/);
  });

  it('creates a regulated platform and prints its credentials', async () => {
    x = JSON.parse(ok(await cli(db.url, 'platform', 'create', '--name', 'X', '--regulated'))) as PlatformOut;
    expect(x.platform).toMatchObject({ name: 'X', regulated: true, isDefault: false, skipVerificationPaperwork: false });
    expect(x.platform.id).toMatch(/^Platform:/);
    expect(x.credentials.tokenId).toMatch(/^Token:/);
    expect(x.credentials.clientId).toMatch(/^[0-9a-f]{32}$/);
    expect(x.credentials.clientSecret).toMatch(/^[0-9a-f]{48}$/);
    const y = JSON.parse(ok(await cli(db.url, 'platform', 'create', '--name', 'Y', '--skip-verification-paperwork'))) as PlatformOut;
    expect(y.platform).toMatchObject({ name: 'Y', regulated: false, skipVerificationPaperwork: true });
  });

  it('lists the platforms', async () => {
    const list = JSON.parse(ok(await cli(db.url, 'platform', 'list'))) as Array<PlatformOut['platform']>;
    expect(list.map((p) => p.name).sort()).toEqual(['X', 'Y']);
    expect(list.find((p) => p.id === x.platform.id)).toEqual(x.platform);
    // Each platform shows the public key that verifies its webhooks (X-Service-Signature).
    for (const p of list) expect((p as { webhookPublicKey?: string }).webhookPublicKey).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
  });

  it('creates, lists and revokes tokens of a platform', async () => {
    viewToken = JSON.parse(ok(await cli(db.url, 'token', 'create', '--platform', x.platform.id, '--name', 'n', '--permissions', 'VIEW'))) as TokenOut;
    expect(viewToken).toMatchObject({ name: 'n', permissions: ['VIEW'] });
    expect(viewToken.id).toMatch(/^Token:/);
    expect(viewToken.clientSecret).toMatch(/^[0-9a-f]{48}$/);

    const doomed = JSON.parse(ok(await cli(db.url, 'token', 'create', '--platform', x.platform.id, '--name', 'doomed', '--permissions', 'view, transact'))) as TokenOut;
    expect(doomed.permissions).toEqual(['VIEW', 'TRANSACT']);

    const listed = await cli(db.url, 'token', 'list', '--platform', x.platform.id);
    const tokens = JSON.parse(ok(listed)) as TokenOut[];
    expect(tokens.map((t) => t.id)).toEqual([doomed.id, viewToken.id, x.credentials.tokenId]);
    const { clientSecret, ...shown } = viewToken;
    expect(tokens[1]).toEqual(shown);
    for (const t of tokens) expect(t).not.toHaveProperty('clientSecret');
    expect(listed.stdout).not.toContain(clientSecret!);

    expect(ok(await cli(db.url, 'token', 'revoke', '--platform', x.platform.id, doomed.id))).toBe(`Revoked ${doomed.id}\n`);
    const after = JSON.parse(ok(await cli(db.url, 'token', 'list', '--platform', x.platform.id))) as TokenOut[];
    expect(after.map((t) => t.id)).toEqual([viewToken.id, x.credentials.tokenId]);

    const again = await cli(db.url, 'token', 'revoke', '--platform', x.platform.id, doomed.id);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(new RegExp(`API token ${doomed.id} not found`));
    const wrongPlatform = await cli(db.url, 'token', 'list', '--platform', 'Platform:nope');
    expect(wrongPlatform.code).toBe(1);
    expect(wrongPlatform.stderr).toMatch(/No platform Platform:nope/);
  });

  it('shares the store with a server: CLI tokens authenticate, CLI revocations stop them', async () => {
    server = await startServer(
      loadConfig({ DATABASE_URL: db.url, PAYMENTS_API_TOKEN_ID: 'srv-token', PAYMENTS_API_CLIENT_SECRET: 'srv-secret', LOG_LEVEL: 'silent' }),
      { listen: false, worker: false, logger: false },
    );
    const app = server.app;
    const get = (url: string, auth: string) => app.inject({ method: 'GET', url: `${V}${url}`, headers: { authorization: auth } });

    // The platform and token the CLI made.
    const cfg = await get('/config', basic(x.credentials.clientId, x.credentials.clientSecret));
    expect(cfg.statusCode).toBe(200);
    expect(cfg.json().isRegulatedFinancialInstitution).toBe(true);
    const viewAuth = basic(viewToken.clientId, viewToken.clientSecret!);
    expect((await get('/config', viewAuth)).statusCode).toBe(200);
    const forbidden = await app.inject({ method: 'POST', url: `${V}/tokens`, headers: { authorization: viewAuth, 'content-type': 'application/json' }, payload: '{"name":"x","permissions":["VIEW"]}' });
    // createToken declares no 403: the missing permission is a 401 naming it.
    expect(forbidden.statusCode).toBe(401);
    expect(forbidden.json().details.required).toBe('MANAGE');

    // The server made the default platform: token commands now work without --platform.
    const made = JSON.parse(ok(await cli(db.url, 'token', 'create', '--name', 'cli-default', '--permissions', 'VIEW,MANAGE'))) as TokenOut;
    const madeAuth = basic(made.clientId, made.clientSecret!);
    const list = await get('/tokens', madeAuth);
    expect(list.statusCode).toBe(200);
    expect((list.json() as { data: TokenOut[] }).data.map((t) => t.name).sort()).toEqual(['Default sandbox token', 'cli-default']);
    // ... by its Token: id as well.
    expect((await get('/config', basic(made.id, made.clientSecret!))).statusCode).toBe(200);

    // A token the server made shows in the CLI list.
    const viaHttp = await app.inject({ method: 'POST', url: `${V}/tokens`, headers: { authorization: madeAuth, 'content-type': 'application/json' }, payload: '{"name":"via-http","permissions":["TRANSACT"]}' });
    expect(viaHttp.statusCode).toBe(201);
    const cliList = JSON.parse(ok(await cli(db.url, 'token', 'list'))) as TokenOut[];
    expect(cliList.map((t) => t.name)).toEqual(['via-http', 'cli-default', 'Default sandbox token']);

    // Revoked by the CLI: refused by the running server at once.
    ok(await cli(db.url, 'token', 'revoke', made.id));
    const refused = await get('/config', madeAuth);
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toMatchObject({ status: 401, code: 'UNAUTHORIZED', details: { reason: 'Unknown API token id or wrong client secret' } });
    ok(await cli(db.url, 'token', 'revoke', '--platform', x.platform.id, viewToken.id));
    expect((await get('/config', viewAuth)).statusCode).toBe(401);
  });

  it('lists every token, past the 100 of one page', async () => {
    const app = server!.app;
    const auth = basic('srv-token', 'srv-secret');
    // 101 more tokens on the default platform, written straight to the store (hashing 101
    // secrets through POST /tokens is slow and beside the point here).
    const platformId = server!.bootstrap.platform.id;
    const at = new Date().toISOString();
    for (let i = 0; i < 101; i++) {
      await insertToken(server!.store.db, {
        id: newId('Token'), platform_id: platformId, name: `bulk-${i}`, permissions: '["VIEW"]', client_id: `bulk-${i}-${randomBytes(4).toString('hex')}`,
        secret_hash: 'scrypt$unused', is_bootstrap: 0, created_at: at, updated_at: at, deleted_at: null,
      });
    }
    const total = (await app.inject({ method: 'GET', url: `${V}/tokens?limit=1`, headers: { authorization: auth } })).json().totalCount as number;
    expect(total).toBe(103);
    const cliList = JSON.parse(ok(await cli(db.url, 'token', 'list'))) as TokenOut[];
    expect(cliList).toHaveLength(103);
    expect(new Set(cliList.map((t) => t.id)).size).toBe(103);
  });
});

describe(`payments-service serve (${STORE})`, { timeout: 90_000 }, () => {
  let db: Db;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  it('prints generated credentials once, serves CLI-made tokens, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [BIN, 'serve'], { cwd: ROOT, env: childEnv(db.url, { PORT: '0', HOST: '127.0.0.1' }), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    // The banner is on stderr; stdout carries only the logger's JSON lines.
    child.stderr.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stdout.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 30_000;
      while (!/PAYMENTS_API_CLIENT_SECRET=\S+\n/.test(stdout)) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`serve did not start: ${stdout}${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(stdout).toMatch(/Operator API \(\/admin\): disabled/);
      const api = /API:\s+(http:\/\/127\.0\.0\.1:\d+\/2025-10-13)\n/.exec(stdout)?.[1];
      expect(api).toBeDefined();
      const id = /PAYMENTS_API_TOKEN_ID=(\S+)\n/.exec(stdout)![1]!;
      const secret = /PAYMENTS_API_CLIENT_SECRET=(\S+)\n/.exec(stdout)![1]!;

      const cfg = await fetch(`${api}/config`, { headers: { authorization: basic(id, secret) } });
      expect(cfg.status).toBe(200);
      const bad = await fetch(`${api}/config`, { headers: { authorization: basic(id, `${secret}x`) } });
      expect(bad.status).toBe(401);

      const made = JSON.parse(ok(await cli(db.url, 'token', 'create', '--name', 'while-serving', '--permissions', 'VIEW'))) as TokenOut;
      const res = await fetch(`${api}/tokens`, { headers: { authorization: basic(made.clientId, made.clientSecret!) } });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { data: TokenOut[] };
      expect(body.data.map((t) => t.name)).toEqual(['while-serving', 'Default sandbox token']);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(stderr).toBe('');

    // A second start on the same store generates nothing.
    const again = await new Promise<Result>((resolve) => {
      const c = spawn(process.execPath, [BIN, 'serve'], { cwd: ROOT, env: childEnv(db.url, { PORT: '0', HOST: '127.0.0.1' }), stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      c.stderr.on('data', (b: Buffer) => {
        out += b.toString();
        if (/Operator API/.test(out)) setTimeout(() => c.kill('SIGTERM'), 100);
      });
      c.stdout.on('data', (b: Buffer) => (err += b.toString()));
      c.on('exit', (code) => resolve({ code: code ?? -1, stdout: out, stderr: err }));
    });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/Platform: Platform:/);
    expect(again.stdout).not.toMatch(/Generated API credentials/);
  });
});
