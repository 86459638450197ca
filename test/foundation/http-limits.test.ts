import { type ChildProcess, spawn } from 'node:child_process';
import { createConnection, createServer, type Socket } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, STORE, V } from '../helpers.js';

// Issue 14: what the HTTP layer refuses before an operation runs, seen from a raw socket on
// a real server process: headers too large (431) and a request that does not arrive in time
// (408), each in the error envelope with Connection: close and a gentle close (the answer is
// read, not reset). On both stores: sqlite::memory: in the sqlite project, a fresh PostgreSQL
// database (dropped afterwards) in the postgres one. Ports come from this file's range,
// 18250-18299: 18250+ on SQLite, 18275+ on PostgreSQL, so the two projects never share one.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = join(ROOT, 'bin', 'payments-service.js');
const TIMEOUT_MS = 2_000;
const TOKEN = 'limits-token';
const SECRET = 'limits-secret';

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const srv = createServer();
    srv.once('error', () => ok(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => ok(true)));
  });
}

async function pickPort(): Promise<number> {
  const base = STORE === 'postgres' ? 18275 : 18250;
  for (let p = base + Math.floor(Math.random() * 15); p < base + 25; p++) if (await portFree(p)) return p;
  throw new Error(`no free port in ${base}-${base + 24}`);
}

async function pgAdmin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

interface Raw {
  sock: Socket;
  answer(): string;
  closed: Promise<void>;
  /** The socket ended with an error (a reset) rather than a clean close. */
  errored(): string | undefined;
}

async function raw(port: number): Promise<Raw> {
  const sock = createConnection({ port, host: '127.0.0.1' });
  let answer = '';
  let error: string | undefined;
  sock.setEncoding('utf8').on('data', (s: string) => (answer += s));
  sock.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
  const closed = new Promise<void>((ok) => sock.on('close', () => ok()));
  await new Promise<void>((ok) => sock.once('connect', () => ok()));
  return { sock, answer: () => answer, closed, errored: () => error };
}

/** The last response of a raw answer: status, lower-cased headers, parsed body. */
function lastResponse(text: string): { status: number; headers: string; body: Record<string, unknown> } {
  const at = text.lastIndexOf('HTTP/1.1 ');
  const r = text.slice(at);
  const split = r.indexOf('\r\n\r\n');
  return { status: Number(r.slice(9, 12)), headers: r.slice(0, split).toLowerCase(), body: JSON.parse(r.slice(split + 4)) as Record<string, unknown> };
}

describe(`HTTP-layer limits of a server process (${STORE})`, () => {
  let child: ChildProcess;
  let port: number;
  let stdout = '';
  let stderr = '';
  let database: string | undefined;

  beforeAll(async () => {
    port = await pickPort();
    let databaseUrl = 'sqlite::memory:';
    if (STORE === 'postgres') {
      database = `limits_${randomBytes(6).toString('hex')}`;
      await pgAdmin(`CREATE DATABASE "${database}"`);
      const u = new URL(process.env.TEST_DATABASE_URL!);
      u.pathname = `/${database}`;
      databaseUrl = u.toString();
    }
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of ['PAYMENTS_ADMIN_KEY', 'DATABASE_URL', 'PORT', 'HOST']) delete env[k];
    child = spawn(process.execPath, [BIN, 'serve'], {
      cwd: ROOT,
      env: {
        ...env,
        HOST: '127.0.0.1',
        PORT: String(port),
        DATABASE_URL: databaseUrl,
        PAYMENTS_API_TOKEN_ID: TOKEN,
        PAYMENTS_API_CLIENT_SECRET: SECRET,
        PAYMENTS_REQUEST_TIMEOUT_MS: String(TIMEOUT_MS),
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const deadline = Date.now() + 25_000;
    for (;;) {
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200) break;
      } catch {
        /* not yet */
      }
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`server not ready\n${stdout}\n${stderr}`);
      await sleep(100);
    }
  }, 30_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((ok) => child.once('exit', ok));
    }
    if (database) await pgAdmin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  });

  it('oversized headers: 431 in the envelope with Connection: close, after a keep-alive answer, and no reset', async () => {
    const c = await raw(port);
    c.sock.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    while (!c.answer().includes('"status":"ok"')) await sleep(10);
    c.sock.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`);
    await c.closed;
    expect(c.answer()).toMatch(/^HTTP\/1\.1 200 /);
    const r = lastResponse(c.answer());
    expect(r.status).toBe(431);
    expect(r.headers).toContain('connection: close');
    expect(r.headers).toContain('content-type: application/json');
    expect(r.body).toMatchObject({ status: 431, code: 'REQUEST_HEADER_FIELDS_TOO_LARGE', message: expect.any(String) });
    expect(c.errored()).toBeUndefined();
  });

  it('a body that trickles in a byte a second: 408 in the envelope at the limit, nothing created, and the server still serves', async () => {
    const body = JSON.stringify({ name: 'trickled token', permissions: ['VIEW'] });
    const c = await raw(port);
    const started = Date.now();
    c.sock.write(
      `POST ${V}/tokens HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic(TOKEN, SECRET)}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
    );
    let sent = 0;
    const drip = setInterval(() => {
      if (!c.sock.destroyed && c.sock.writable && sent < body.length - 1) c.sock.write(body[sent++]!);
    }, 1_000);
    try {
      await c.closed;
    } finally {
      clearInterval(drip);
    }
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
    expect(elapsed).toBeLessThan(TIMEOUT_MS + 2_500);
    const r = lastResponse(c.answer());
    expect(r.status).toBe(408);
    expect(r.headers).toContain('connection: close');
    expect(r.body).toMatchObject({ status: 408, code: 'REQUEST_TIMEOUT', details: { timeoutMs: TIMEOUT_MS } });
    expect(c.errored()).toBeUndefined();

    const list = await fetch(`http://127.0.0.1:${port}${V}/tokens?name=${encodeURIComponent('trickled token')}`, { headers: { authorization: basic(TOKEN, SECRET) } });
    expect(list.status).toBe(200);
    expect(((await list.json()) as { totalCount: number }).totalCount).toBe(0);
  }, 10_000);

  it('headers that never end: 408 in the envelope too', async () => {
    const c = await raw(port);
    c.sock.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
    const drip = setInterval(() => {
      if (!c.sock.destroyed && c.sock.writable) c.sock.write('X-Slow: 1\r\n');
    }, 500);
    try {
      await c.closed;
    } finally {
      clearInterval(drip);
    }
    const r = lastResponse(c.answer());
    expect(r.status).toBe(408);
    expect(r.body).toMatchObject({ status: 408, code: 'REQUEST_TIMEOUT' });
  }, 10_000);

  it('NUL (U+0000) in a JSON string, a path id, a query value or a Basic credential: 400 / 401 envelopes from the real process, nothing logged as an error', async () => {
    const url = (path: string) => `http://127.0.0.1:${port}${V}${path}`;
    const auth = { authorization: basic(TOKEN, SECRET) };
    const body = await fetch(url('/customers'), { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ customerType: 'INDIVIDUAL', fullName: 'Nul\u0000Byte' }) });
    expect(body.status).toBe(400);
    expect(await body.json()).toMatchObject({ status: 400, code: 'INVALID_INPUT', details: { errors: [{ field: 'fullName' }] } });
    const path = await fetch(url('/customers/Customer:019a%00'), { headers: auth });
    expect(path.status).toBe(400);
    expect(await path.json()).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    const query = await fetch(url('/customers?platformCustomerId=a%00b'), { headers: auth });
    expect(query.status).toBe(400);
    expect(await query.json()).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    // Before authentication: the user name itself holds the NUL.
    const user = await fetch(url('/customers'), { headers: { authorization: `Basic ${Buffer.from(`lim\u0000its:${SECRET}`).toString('base64')}` } });
    expect(user.status).toBe(401);
    expect(await user.json()).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
  });

  it('logged no error stack for any of them', () => {
    expect(stdout).not.toMatch(/"level":50/);
    expect(stderr).not.toMatch(/at .*\(.*\.ts:\d+/);
  });
});
