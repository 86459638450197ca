import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { ensureDefaultPlatform, type BootstrapResult } from './areas/platforms/service.js';
import { API_VERSION, type Config } from './config.js';
import { type Clock, systemClock } from './kernel/clock.js';
import { openStore, parseDatabaseUrl, type OpenOptions, type Store } from './kernel/db/connect.js';
import { migrate } from './kernel/db/migrations.js';
import { JobQueue } from './kernel/jobs.js';

export interface Running {
  app: FastifyInstance;
  store: Store;
  jobs: JobQueue;
  bootstrap: BootstrapResult;
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
  /** Run the job worker loop (default true). */
  worker?: boolean;
}

/** Open the store, migrate, make sure the default platform exists, build the app. */
export async function startServer(config: Config, opts: StartOptions = {}): Promise<Running> {
  const clock = opts.clock ?? systemClock;
  const store = opts.store ?? (await openStore(parseDatabaseUrl(config.databaseUrl), opts.storeOptions));
  await migrate(store);
  const bootstrap = await ensureDefaultPlatform(store, clock, { tokenId: config.apiTokenId, clientSecret: config.apiClientSecret });
  const jobs = new JobQueue(store, clock);
  const app = await buildApp({ store, clock, config, jobs }, opts.logger !== undefined ? { logger: opts.logger } : {});
  jobs.useLogger(app.log);
  await app.ready();
  if (opts.listen !== false) await app.listen({ port: config.port, host: config.host });
  if (opts.worker !== false) jobs.start();
  let closed = false;
  return {
    app,
    store,
    jobs,
    bootstrap,
    async close() {
      if (closed) return;
      closed = true;
      await app.close();
      await jobs.stop();
      await store.close();
    },
  };
}

export function baseUrl(app: FastifyInstance): string {
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') return `/${API_VERSION}`;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return `http://${host}:${addr.port}/${API_VERSION}`;
}
