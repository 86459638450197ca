import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, STORE, V } from '../helpers.js';

// The server as a real process on a real port: `node bin/payments-service.js serve`,
// started, probed over HTTP with fetch, stopped with SIGTERM. On the sqlite project the
// store is a temporary SQLite file; on the postgres project it is a fresh PostgreSQL
// database, where two processes also start together on one database.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = join(ROOT, 'bin', 'payments-service.js');
const START_TIMEOUT_MS = 25_000;

/** A port nobody listens on right now: listen on 0, read the number, close. */
async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => ok(port));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

interface Proc {
  child: ChildProcess;
  port: number;
  base: string;
  /** What the server wrote on stderr: its start banner (stdout carries only JSON logs). */
  banner(): string;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal name) once the process has ended. */
  exited: Promise<number | string>;
  done: boolean;
}

const started: Proc[] = [];

/** Env of the child: ours without any PAYMENTS_* / DATABASE_URL / PORT we might have. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ['PAYMENTS_API_TOKEN_ID', 'PAYMENTS_API_CLIENT_SECRET', 'PAYMENTS_ADMIN_KEY', 'PAYMENTS_SECRET_KEY', 'PAYMENTS_DATA_KEY', 'PAYMENTS_WEBHOOK_ALLOW_PRIVATE', 'DATABASE_URL', 'PORT', 'HOST']) delete env[k];
  return { ...env, HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...extra };
}

async function spawnServer(env: Record<string, string>): Promise<Proc> {
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, 'serve'], { cwd: ROOT, env: childEnv({ PORT: String(port), ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (err += s));
  const proc: Proc = {
    child,
    port,
    base: `http://127.0.0.1:${port}`,
    banner: () => err,
    stdout: () => out,
    stderr: () => err,
    done: false,
    exited: new Promise((ok) =>
      child.on('exit', (code, signal) => {
        proc.done = true;
        ok(code ?? signal ?? -1);
      }),
    ),
  };
  started.push(proc);
  return proc;
}

/** Wait for GET /healthz 200 and the banner's API line on stderr. */
async function waitReady(p: Proc): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (p.done) throw new Error(`server exited before it was ready\nstdout:\n${p.stdout()}\nstderr:\n${p.stderr()}`);
    try {
      const res = await fetch(`${p.base}/healthz`);
      if (res.status === 200 && p.banner().includes(`${p.base}${V}`)) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`server not ready in ${START_TIMEOUT_MS} ms\nstdout:\n${p.stdout()}\nstderr:\n${p.stderr()}`);
    await sleep(100);
  }
}

async function startServer(env: Record<string, string>): Promise<Proc> {
  const p = await spawnServer(env);
  await waitReady(p);
  return p;
}

async function stop(p: Proc): Promise<number | string> {
  if (!p.done) p.child.kill('SIGTERM');
  return p.exited;
}

function generatedPair(p: Proc): { id: string; secret: string } | undefined {
  const id = /PAYMENTS_API_TOKEN_ID=(\S+)/.exec(p.banner())?.[1];
  const secret = /PAYMENTS_API_CLIENT_SECRET=(\S+)/.exec(p.banner())?.[1];
  return id && secret ? { id, secret } : undefined;
}

async function getConfig(p: Proc, id: string, secret: string): Promise<Response> {
  return fetch(`${p.base}${V}/config`, { headers: { authorization: basic(id, secret) } });
}

/** True when nothing accepts connections on the port any more. */
async function portClosed(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const s = createConnection({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      ok(false);
    });
    s.once('error', () => ok(true));
  });
}

// ---- PostgreSQL: one fresh database per use, dropped afterwards ----

const PG_URL = process.env.TEST_DATABASE_URL;

function pgUrlFor(database: string): string {
  const u = new URL(PG_URL!);
  u.pathname = `/${database}`;
  return u.toString();
}

async function pgAdmin<T>(fn: (c: pg.Client) => Promise<T>, database?: string): Promise<T> {
  const c = new pg.Client({ connectionString: database ? pgUrlFor(database) : PG_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

async function createDatabase(): Promise<string> {
  const name = `srv_${randomBytes(6).toString('hex')}`;
  await pgAdmin((c) => c.query(`CREATE DATABASE "${name}"`));
  return name;
}

async function dropDatabase(name: string): Promise<void> {
  await pgAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

// ---- the tests ----

const tmp = mkdtempSync(join(tmpdir(), 'payments-srv-'));
const databases: string[] = [];

/** The store of this project: a temporary SQLite file, or a fresh PostgreSQL database. */
async function projectStoreUrl(): Promise<string> {
  if (STORE === 'postgres') {
    const db = await createDatabase();
    databases.push(db);
    return pgUrlFor(db);
  }
  return `sqlite:${join(tmp, `payments-${randomBytes(4).toString('hex')}.sqlite`)}`;
}

afterAll(async () => {
  for (const p of started) {
    if (!p.done) {
      p.child.kill('SIGKILL');
      await p.exited;
    }
  }
  for (const db of databases) await dropDatabase(db);
  rmSync(tmp, { recursive: true, force: true });
});

describe(`server process (${STORE})`, () => {
  let databaseUrl: string;
  let first: Proc;
  let pair: { id: string; secret: string };

  beforeAll(async () => {
    databaseUrl = await projectStoreUrl();
    first = await startServer({ DATABASE_URL: databaseUrl });
    pair = generatedPair(first)!;
  }, START_TIMEOUT_MS + 5_000);

  it('prints the base URL, the store and the generated credentials on first start', () => {
    const out = first.banner();
    expect(out).toContain(`http://127.0.0.1:${first.port}/2025-10-13`);
    if (STORE === 'postgres') {
      expect(out).toMatch(/Store:\s+PostgreSQL postgres(ql)?:\/\/.*srv_/);
    } else {
      expect(out).toContain(`Store:  SQLite ${databaseUrl.slice('sqlite:'.length)}`);
    }
    expect(out).toMatch(/^\s*PAYMENTS_API_TOKEN_ID=\S+$/m);
    expect(out).toMatch(/^\s*PAYMENTS_API_CLIENT_SECRET=\S+$/m);
    expect(pair).toBeDefined();
  });

  it('answers /healthz and accepts the generated pair on GET /config', async () => {
    const h = await fetch(`${first.base}/healthz`);
    expect(h.status).toBe(200);
    expect(await h.json()).toEqual({ status: 'ok' });

    const res = await getConfig(first, pair.id, pair.secret);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { id: string; isRegulatedFinancialInstitution: boolean };
    expect(body.id).toMatch(/^PlatformConfig:/);
    expect(body.isRegulatedFinancialInstitution).toBe(false);

    const bad = await getConfig(first, pair.id, 'not-the-secret');
    expect(bad.status).toBe(401);
    expect(((await bad.json()) as { code: string }).code).toBe('UNAUTHORIZED');
  });

  it('serves the OpenAPI 3.1 document generated from the routes', async () => {
    const res = await fetch(`${first.base}${V}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const doc = (await res.json()) as {
      openapi: string;
      servers: Array<{ url: string }>;
      paths: Record<string, unknown>;
      components: { securitySchemes: Record<string, { type: string; scheme: string }> };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers[0]!.url).toBe('/2025-10-13');
    const paths = Object.keys(doc.paths);
    for (const p of ['/tokens', '/tokens/{tokenId}', '/config']) expect(paths).toContain(p);
    for (const p of paths) {
      expect(p.startsWith('/2025-10-13')).toBe(false);
      expect(p.startsWith('/admin')).toBe(false);
      expect(p).not.toBe('/healthz');
      expect(p).not.toBe('/openapi.json');
    }
    expect(doc.components.securitySchemes.BasicAuth).toMatchObject({ type: 'http', scheme: 'basic' });
    expect(doc.components.securitySchemes.AgentAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('serves Swagger UI under /docs/', async () => {
    const res = await fetch(`${first.base}/docs/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(await res.text()).toMatch(/swagger/i);
  });

  it('answers 404 under /admin when PAYMENTS_ADMIN_KEY is unset', async () => {
    const res = await fetch(`${first.base}/admin/platforms`, { headers: { authorization: 'Bearer anything' } });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { code: string }).code).toBe('REFERENCE_NOT_FOUND');
  });

  /** A raw HTTP/1.1 connection that collects everything the server sends until it closes. */
  async function rawConnection(port: number) {
    const sock = createConnection({ port, host: '127.0.0.1' });
    let answer = '';
    sock.setEncoding('utf8').on('data', (s: string) => (answer += s));
    sock.on('error', () => {});
    const closed = new Promise<void>((ok) => sock.on('close', () => ok()));
    await new Promise<void>((ok) => sock.once('connect', () => ok()));
    return { sock, closed, answer: () => answer };
  }

  it('on SIGTERM finishes the request in flight, refuses new ones with 503, exits 0 and closes the port', async () => {
    const auth = basic(pair.id, pair.secret);
    // In flight: its headers have arrived, its body is still coming.
    const body = JSON.stringify({ name: 'in flight at shutdown', permissions: ['VIEW'] });
    const a = await rawConnection(first.port);
    a.sock.write(
      `POST ${V}/tokens HTTP/1.1\r\nHost: 127.0.0.1:${first.port}\r\nAuthorization: ${auth}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
    );
    // Busy but not yet a request: its headers are incomplete when the stop begins.
    const b = await rawConnection(first.port);
    b.sock.write(`GET ${V}/config HTTP/1.1\r\nHost: 127.0.0.1:${first.port}\r\n`);
    await sleep(300);

    first.child.kill('SIGTERM');
    await sleep(300);
    expect(first.done).toBe(false); // still waiting for the request in flight

    b.sock.write(`Authorization: ${auth}\r\n\r\n`);
    await b.closed;
    expect(b.answer()).toMatch(/^HTTP\/1\.1 503 /);
    expect(b.answer().toLowerCase()).toContain('connection: close');
    const refused = JSON.parse(b.answer().slice(b.answer().indexOf('\r\n\r\n') + 4)) as { status: number; code: string };
    expect(refused).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });

    a.sock.write(body.slice(10)); // not end(): Node aborts a request whose client half-closes
    await a.closed; // the server ends the connection after its answer (Connection: close)
    expect(a.answer()).toMatch(/^HTTP\/1\.1 201 /);
    expect(a.answer().toLowerCase()).toContain('connection: close');
    expect(a.answer()).toContain('"name":"in flight at shutdown"');

    expect(await first.exited).toBe(0);
    expect(await portClosed(first.port)).toBe(true);
  }, 20_000);

  it('a second start on the same store prints no credentials and keeps the first pair working', async () => {
    const second = await startServer({ DATABASE_URL: databaseUrl });
    try {
      expect(second.banner()).toContain(`http://127.0.0.1:${second.port}/2025-10-13`);
      expect(second.banner()).not.toContain('PAYMENTS_API_TOKEN_ID=');
      expect(second.banner()).not.toContain('PAYMENTS_API_CLIENT_SECRET=');
      expect(second.banner()).toMatch(/Platform: Platform:\S+/);
      const res = await getConfig(second, pair.id, pair.secret);
      expect(res.status).toBe(200);
      // The token created by the request that was in flight at shutdown was committed.
      const list = await fetch(`${second.base}${V}/tokens?name=${encodeURIComponent('in flight at shutdown')}`, {
        headers: { authorization: basic(pair.id, pair.secret) },
      });
      expect(((await list.json()) as { totalCount: number }).totalCount).toBe(1);
    } finally {
      expect(await stop(second)).toBe(0);
    }
  }, START_TIMEOUT_MS + 10_000);

  it('refuses to start with PAYMENTS_API_TOKEN_ID but no PAYMENTS_API_CLIENT_SECRET', async () => {
    const p = await spawnServer({ DATABASE_URL: databaseUrl, PAYMENTS_API_TOKEN_ID: 'lonely-token-id' });
    const code = await p.exited;
    expect(code).not.toBe(0);
    expect(typeof code).toBe('number');
    expect(p.stderr()).toContain('PAYMENTS_API_CLIENT_SECRET');
    expect(p.stderr()).toMatch(/Set both PAYMENTS_API_TOKEN_ID and PAYMENTS_API_CLIENT_SECRET/);
    expect(p.banner()).not.toContain('2025-10-13');
  }, START_TIMEOUT_MS);
});

if (STORE === 'sqlite') {
  describe('server process on sqlite::memory:', () => {
    it('starts, accepts the configured pair, and stops with exit 0', async () => {
      const p = await startServer({ DATABASE_URL: 'sqlite::memory:', PAYMENTS_API_TOKEN_ID: 'mem-token', PAYMENTS_API_CLIENT_SECRET: 'mem-secret' });
      try {
        expect(p.banner()).toContain('Store:  SQLite (in memory)');
        expect(p.banner()).not.toContain('PAYMENTS_API_CLIENT_SECRET=');
        expect(p.banner()).toContain('Server secret: generated for this in-memory store (set PAYMENTS_SECRET_KEY to keep it)');
        expect((await getConfig(p, 'mem-token', 'mem-secret')).status).toBe(200);
        expect((await getConfig(p, 'mem-token', 'other-secret')).status).toBe(401);
      } finally {
        expect(await stop(p)).toBe(0);
      }
      expect(await portClosed(p.port)).toBe(true);
    }, START_TIMEOUT_MS + 10_000);

    it('takes PAYMENTS_DATA_KEY, and refuses to start with one that is not 32 bytes', async () => {
      const p = await startServer({ DATABASE_URL: 'sqlite::memory:', PAYMENTS_DATA_KEY: 'ab'.repeat(32) });
      try {
        expect(p.banner()).toContain('Server secret: PAYMENTS_DATA_KEY (deprecated: set PAYMENTS_SECRET_KEY)');
      } finally {
        expect(await stop(p)).toBe(0);
      }
      const bad = await spawnServer({ DATABASE_URL: 'sqlite::memory:', PAYMENTS_DATA_KEY: 'ab'.repeat(16) });
      const code = await bad.exited;
      expect(code).not.toBe(0);
      expect(typeof code).toBe('number');
      expect(bad.stderr()).toMatch(/PAYMENTS_DATA_KEY must be 32 bytes .*decodes to 16 bytes/);
      expect(bad.stderr()).not.toContain('ab'.repeat(16));
      expect(bad.banner()).not.toContain('2025-10-13');
    }, START_TIMEOUT_MS + 10_000);
  });
}

if (STORE === 'postgres') {
  describe('two server processes starting together on one PostgreSQL database', () => {
    it('both become ready, migrations run once, one default platform, both accept the env pair', async () => {
      const db = await createDatabase();
      databases.push(db);
      const env = { DATABASE_URL: pgUrlFor(db), PAYMENTS_API_TOKEN_ID: 'shared-token', PAYMENTS_API_CLIENT_SECRET: 'shared-secret' };
      const [a, b] = await Promise.all([spawnServer(env), spawnServer(env)]);
      try {
        await Promise.all([waitReady(a!), waitReady(b!)]);
        expect(a!.port).not.toBe(b!.port);

        const [ra, rb] = await Promise.all([getConfig(a!, 'shared-token', 'shared-secret'), getConfig(b!, 'shared-token', 'shared-secret')]);
        expect(ra.status).toBe(200);
        expect(rb.status).toBe(200);
        const [ca, cb] = (await Promise.all([ra.json(), rb.json()])) as Array<{ id: string }>;
        expect(ca!.id).toBe(cb!.id); // the same platform behind both

        await pgAdmin(async (c) => {
          const migrations = await c.query<{ name: string; n: string }>('select name, count(*) as n from kysely_migration group by name order by name');
          expect(migrations.rows.length).toBeGreaterThan(0);
          for (const m of migrations.rows) expect(Number(m.n)).toBe(1);
          const platforms = await c.query<{ n: string }>('select count(*) as n from platforms where is_default = 1');
          expect(Number(platforms.rows[0]!.n)).toBe(1);
          const all = await c.query<{ n: string }>('select count(*) as n from platforms');
          expect(Number(all.rows[0]!.n)).toBe(1);
          const tokens = await c.query<{ n: string }>("select count(*) as n from api_tokens where client_id = 'shared-token'");
          expect(Number(tokens.rows[0]!.n)).toBe(1);
        }, db);
      } finally {
        const codes = await Promise.all([stop(a!), stop(b!)]);
        expect(codes).toEqual([0, 0]);
      }
    }, 2 * START_TIMEOUT_MS);
  });
}
