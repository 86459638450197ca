import type { FastifyInstance } from 'fastify';
import { createServer, type Server } from 'node:http';
import { isStoreUnavailable } from './kernel/db/unavailable.js';
import { buildApp } from './app.js';
import { ensureDefaultPlatform, type BootstrapResult } from './operator/platforms/service.js';
import { backfillAccounts } from './api/internal-accounts/service.js';
import { API_VERSION, type Config } from './config.js';
import { type Clock, systemClock } from './kernel/clock.js';
import { openStore, parseDatabaseUrl, type OpenOptions, type Store } from './kernel/db/connect.js';
import { migrate } from './kernel/db/migrations.js';
import { Hooks } from './kernel/hooks.js';
import { apiError } from './kernel/errors.js';
import { JobQueue } from './kernel/jobs.js';
import { loadSealer, type SecretSource } from './kernel/sealed.js';
import { ownersSealedWithOtherKeys } from './api/beneficial-owners/store.js';
import { resealWebhookKeys, WebhookDeliverer } from './api/webhooks/service.js';
import { resolveAgentToken } from './api/agents/agent-auth.js';
import { type Resolver, WebhookTargets } from './api/webhooks/targets.js';

/** How long a stop waits for requests in flight before it closes their connections. */
export const SHUTDOWN_GRACE_MS = 10_000;

export interface Running {
  app: FastifyInstance;
  store: Store;
  jobs: JobQueue;
  /** Webhook delivery; `runDue()` sends what is due (tests run it by hand: no worker there). */
  webhooks: WebhookDeliverer;
  bootstrap: BootstrapResult;
  /** Where the server secret sealing values at rest comes from (kernel/sealed.ts loadSealer). */
  secretSource: SecretSource;
  /** The secret's file when it is kept in the data directory. */
  secretFile?: string;
  /** Stop accepting, finish in-flight requests, stop the job loop, close the store. */
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: Clock;
  store?: Store;
  storeOptions?: OpenOptions;
  logger?: boolean | { level: string };
  /** Listen on config.host:config.port (default true). */
  listen?: boolean;
  /** Run the job worker loop and the webhook delivery loop (default true). */
  worker?: boolean;
  /** Webhook request timeout (default 30 s, the hosted docs' limit); tests lower it. */
  webhookTimeoutMs?: number;
  /** How webhook host names are resolved (default node:dns lookup); tests give names their addresses. */
  webhookResolver?: Resolver;
}

/** Open the store, migrate, make sure the default platform exists, build the app. */
export async function startServer(config: Config, opts: StartOptions = {}): Promise<Running> {
  const clock = opts.clock ?? systemClock;
  const store = opts.store ?? (await openWhenReachable(config, { backgroundCheckpoints: true, statementTimeoutMs: config.dbStatementTimeoutMs, acquireTimeoutMs: config.dbAcquireTimeoutMs, ...opts.storeOptions }, opts.listen !== false));
  if (opts.store) await migrate(store);
  // The key sealing sensitive values at rest, from the one server secret (kernel/sealed.ts).
  const { sealer, source: keySource, secretFile, keyIds } = await loadSealer(store, { secretKey: config.secretKey, dataKey: config.dataKey }, new Date(clock.nowMs()).toISOString());
  // Webhook private keys at rest: seal plaintext ones (rows from before sealing) and those sealed with an older key.
  const keys = await resealWebhookKeys(store.db, sealer);
  const bootstrap = await ensureDefaultPlatform(store, clock, sealer, { tokenId: config.apiTokenId, clientSecret: config.apiClientSecret });
  // Accounts of platforms and customers that predate them (one query when none is missing).
  await backfillAccounts(store, clock);
  const jobs = new JobQueue(store, clock);
  const hooks = new Hooks();
  const targets = new WebhookTargets(config.webhookAllowPrivate, opts.webhookResolver);
  const webhooks = new WebhookDeliverer(store, clock, undefined, { targets, ...(opts.webhookTimeoutMs !== undefined ? { timeoutMs: opts.webhookTimeoutMs } : {}) });
  const app = await buildApp({ store, clock, config, jobs, hooks, webhooks, sealer, agentResolver: resolveAgentToken }, opts.logger !== undefined ? { logger: opts.logger } : {});
  jobs.useLogger(app.log);
  webhooks.useLogger(app.log);
  const unreadable = await ownersSealedWithOtherKeys(store.db, keyIds);
  if (unreadable > 0) {
    app.log.warn(
      { keySource, unreadable },
      `${unreadable} beneficial owner identification numbers were sealed with another server secret (PAYMENTS_SECRET_KEY changed?); they are answered masked`,
    );
  }
  if (keys.resealed > 0) app.log.info({ resealed: keys.resealed }, 'webhook signing keys sealed at rest');
  if (keys.unreadable > 0) {
    app.log.warn(
      { keySource, unreadable: keys.unreadable },
      `${keys.unreadable} platforms' webhook signing keys were sealed with another server secret (PAYMENTS_SECRET_KEY changed?); their webhooks cannot be signed`,
    );
  }
  // Graceful stop: Node closes idle keep-alive connections when the server closes, but a
  // connection whose request is still in flight would stay open (keepAliveTimeout, 72 s)
  // after its answer. Once stopping, answers carry Connection: close, so each such
  // connection ends with its response; after SHUTDOWN_GRACE_MS the rest are cut.
  // A request that arrives while stopping (on a connection that was busy when the stop
  // began) is answered 503 SERVICE_UNAVAILABLE in the envelope, so the client retries
  // elsewhere; Fastify itself adds Connection: close to it.
  let stopping = false;
  // Callback hooks (no promise per request): they run on every request.
  app.addHook('onRequest', (_req, _reply, done) => {
    if (stopping) done(apiError(503, 'SERVICE_UNAVAILABLE', 'The server is shutting down; retry the request'));
    else done();
  });
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (stopping) reply.header('connection', 'close');
    done(null, payload);
  });
  await app.ready();
  if (opts.listen !== false) {
    await app.listen({ port: config.port, host: config.host });
    // Webhooks never go to this address (api/webhooks/targets.ts).
    targets.setListening(app.server.address());
  }
  if (opts.worker !== false) {
    jobs.start();
    webhooks.start();
  }
  let closed = false;
  return {
    app,
    store,
    jobs,
    webhooks,
    bootstrap,
    secretSource: keySource,
    ...(secretFile !== undefined ? { secretFile } : {}),
    async close() {
      if (closed) return;
      closed = true;
      stopping = true;
      const force = setTimeout(() => app.server.closeAllConnections(), SHUTDOWN_GRACE_MS);
      try {
        await app.close();
      } finally {
        clearTimeout(force);
      }
      await jobs.stop();
      await webhooks.stop();
      await store.close();
    },
  };
}

/** The first pause between attempts to reach the database at start-up, doubling up to START_RETRY_MAX_MS. */
const START_RETRY_MS = 250;
const START_RETRY_MAX_MS = 2_000;

/**
 * Open the store and migrate it. A PostgreSQL server that cannot be reached (not started yet,
 * restarting) is waited for, retrying with back-off for up to PAYMENTS_DB_CONNECT_TIMEOUT_MS:
 * stderr says so once, and the port answers every request 503 SERVICE_UNAVAILABLE meanwhile
 * (when `listen`), /healthz included. Past the limit, one error line (the process then exits
 * non-zero, main.ts). Any other failure (a wrong password, no such database) is thrown at once.
 */
async function openWhenReachable(config: Config, options: OpenOptions, listen: boolean): Promise<Store> {
  const target = parseDatabaseUrl(config.databaseUrl);
  const deadline = Date.now() + config.dbConnectTimeoutMs;
  let delay = START_RETRY_MS;
  let waiting: Server | undefined;
  try {
    for (;;) {
      let store: Store | undefined;
      try {
        store = await openStore(target, options);
        await migrate(store);
        return store;
      } catch (err) {
        await store?.close().catch(() => {});
        if (target.kind !== 'postgres' || !isStoreUnavailable(err)) throw err;
        const reason = err instanceof Error ? err.message || (err as { code?: string }).code || err.name : String(err);
        if (Date.now() >= deadline) {
          throw new Error(`the database could not be reached within ${config.dbConnectTimeoutMs} ms (PAYMENTS_DB_CONNECT_TIMEOUT_MS): ${reason}`);
        }
        if (delay === START_RETRY_MS) {
          process.stderr.write(`Waiting for the database (${reason}); retrying for up to ${config.dbConnectTimeoutMs} ms (PAYMENTS_DB_CONNECT_TIMEOUT_MS)\n`);
          if (listen) waiting = await answerUnavailable(config);
        }
        await new Promise((r) => setTimeout(r, Math.max(0, Math.min(delay, deadline - Date.now()))));
        delay = Math.min(delay * 2, START_RETRY_MAX_MS);
      }
    }
  } finally {
    if (waiting) await closeNow(waiting);
  }
}

/** Until the store opens: every request on the port is answered 503 in the envelope (undefined when the port cannot be taken). */
async function answerUnavailable(config: Config): Promise<Server | undefined> {
  const body = JSON.stringify({ status: 503, code: 'SERVICE_UNAVAILABLE', message: 'Starting: waiting for the database' });
  const server = createServer((_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1', connection: 'close', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  return new Promise((resolve) => {
    server.once('error', () => resolve(undefined));
    server.listen(config.port, config.host, () => resolve(server));
  });
}

function closeNow(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export function baseUrl(app: FastifyInstance): string {
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') return `/${API_VERSION}`;
  // A wildcard address is no address a client can use: show the loopback one.
  const address = addr.address === '0.0.0.0' ? '127.0.0.1' : addr.address === '::' ? '::1' : addr.address;
  const host = addr.family === 'IPv6' ? `[${address}]` : address;
  return `http://${host}:${addr.port}/${API_VERSION}`;
}
