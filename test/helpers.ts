import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { expect } from 'vitest';
import { type Config, loadConfig } from '../src/config.js';
import { type Clock, ManualClock } from '../src/kernel/clock.js';
import { openStore, type Store } from '../src/kernel/db/connect.js';
import { type Running, startServer } from '../src/server.js';

// Black-box test harness. Each app gets its own store: an in-memory SQLite database, or
// (TEST_STORE=postgres) a fresh schema in TEST_DATABASE_URL that is dropped afterwards.

export const STORE = (process.env.TEST_STORE ?? 'sqlite') as 'sqlite' | 'postgres';
export const V = '/2025-10-13';
export const DEFAULT_TOKEN_ID = 'test-token-id';
export const DEFAULT_SECRET = 'test-client-secret';
export const ADMIN_KEY = 'test-admin-key';

export function basic(user: string, secret: string): string {
  return `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`;
}

export const DEFAULT_AUTH = basic(DEFAULT_TOKEN_ID, DEFAULT_SECRET);

export interface TestStore {
  store: Store;
  /** Drop what the test created (PostgreSQL schema). */
  drop(): Promise<void>;
  /** For PostgreSQL: the connection string and schema, to open a second store on the same data. */
  schema?: string;
}

/** A fresh, empty store for the configured test store kind. */
export async function freshStore(): Promise<TestStore> {
  if (STORE === 'postgres') {
    const url = process.env.TEST_DATABASE_URL;
    if (!url) throw new Error('TEST_STORE=postgres needs TEST_DATABASE_URL');
    // The name carries its creation time so test/global-setup.ts can drop abandoned ones.
    const schema = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
    const store = await openStore({ kind: 'postgres', location: url }, { schema, poolSize: 5 });
    return {
      store,
      schema,
      async drop() {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        try {
          await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        } finally {
          await c.end();
        }
      },
    };
  }
  const store = await openStore({ kind: 'sqlite', location: ':memory:' });
  return { store, drop: async () => {} };
}

/** Open another connection to the same PostgreSQL schema (a second server process). */
export async function openSameSchema(schema: string): Promise<Store> {
  return openStore({ kind: 'postgres', location: process.env.TEST_DATABASE_URL! }, { schema, poolSize: 5 });
}

export interface TestApp {
  app: FastifyInstance;
  running: Running;
  store: Store;
  clock: ManualClock;
  config: Config;
  /** Request with the default platform's credentials unless headers.authorization is given. */
  call(method: InjectOptions['method'], url: string, body?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string | undefined>;
  clock?: ManualClock;
  worker?: boolean;
  testStore?: TestStore;
}

export async function makeApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const ts = opts.testStore ?? (await freshStore());
  const clock = opts.clock ?? new ManualClock(Date.now());
  const config = loadConfig({
    PAYMENTS_API_TOKEN_ID: DEFAULT_TOKEN_ID,
    PAYMENTS_API_CLIENT_SECRET: DEFAULT_SECRET,
    PAYMENTS_ADMIN_KEY: ADMIN_KEY,
    LOG_LEVEL: 'silent',
    ...opts.env,
  });
  const running = await startServer(config, { clock: clock as Clock, store: ts.store, listen: false, worker: opts.worker ?? false, logger: false });
  const app = running.app;
  return {
    app,
    running,
    store: ts.store,
    clock,
    config,
    async call(method, url, body, headers = {}) {
      const h: Record<string, string> = { authorization: DEFAULT_AUTH, ...headers };
      if (headers.authorization === '') delete h.authorization;
      const req: InjectOptions = { method, url: url.startsWith('/') && !url.startsWith(V) && !url.startsWith('/admin') && !url.startsWith('/healthz') && !url.startsWith('/docs') ? `${V}${url}` : url, headers: h };
      if (body !== undefined) {
        req.payload = typeof body === 'string' ? body : JSON.stringify(body);
        if (!('content-type' in h)) h['content-type'] = 'application/json';
      }
      return app.inject(req);
    },
    async close() {
      await running.close();
      await ts.drop();
    },
  };
}

/** Assert the error envelope and return it. */
export function envelope(res: LightMyRequestResponse, status: number, code?: string): { status: number; code: string; message: string; details?: Record<string, unknown> } {
  const body = res.json() as { status: number; code: string; message: string; details?: Record<string, unknown> };
  if (res.statusCode !== status || body.status !== status || (code !== undefined && body.code !== code) || typeof body.message !== 'string') {
    throw new Error(`expected ${status} ${code ?? ''}, got ${res.statusCode}: ${res.body}`);
  }
  return body;
}

/** A store whose data outlives an app: open it again to restart on the same data. */
export interface StoreSeries {
  /** A store on the same data each time; closing the app closes it but keeps the data. */
  open(): Promise<TestStore>;
  drop(): Promise<void>;
}

/** For restart tests: a temp SQLite file, or one PostgreSQL schema opened again. */
export async function storeSeries(): Promise<StoreSeries> {
  if (STORE === 'postgres') {
    const first = await freshStore();
    let used = false;
    return {
      async open() {
        if (!used) {
          used = true;
          return { store: first.store, drop: async () => {} };
        }
        return { store: await openSameSchema(first.schema!), drop: async () => {} };
      },
      drop: () => first.drop(),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'payments-series-'));
  const file = join(dir, 'store.sqlite');
  return {
    open: async () => ({ store: await openStore({ kind: 'sqlite', location: file }), drop: async () => {} }),
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

export const sleep = (ms: number): Promise<void> => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `cond` every `everyMs` until it holds; throws after `timeoutMs`. */
export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 5_000, everyMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(everyMs);
  }
}

/**
 * Advance the app's sandbox clock, then send the webhooks that came due: the advance answers
 * before any webhook goes out, and no delivery worker runs in tests.
 */
export async function advanceAndDeliver(t: TestApp, seconds: number, headers?: Record<string, string>): Promise<void> {
  const res = await t.call('POST', '/sandbox/clock/advance', { seconds }, headers);
  expect(res.statusCode, res.body).toBe(200);
  await t.running.webhooks.runDue();
}
