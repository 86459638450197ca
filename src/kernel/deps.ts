import type { Config } from '../config.js';
import type { AgentResolver } from './auth.js';
import type { Clock } from './clock.js';
import type { Store } from './db/connect.js';
import type { Hooks } from './hooks.js';
import type { JobQueue } from './jobs.js';
import type { Sealer } from './sealed.js';

/**
 * The dependency container: what server.ts (or a test) builds once and every area reads as
 * `app.deps`. It lives in the kernel so areas can name it without importing app.ts. An
 * area that owns a member of the container adds it by module augmentation in its own
 * `area.ts` (the webhooks area adds `webhooks`, its deliverer), so the kernel never
 * imports an area.
 */
export interface AppDeps {
  store: Store;
  clock: Clock;
  config: Config;
  jobs: JobQueue;
  hooks: Hooks;
  /** Seals sensitive values kept at rest (kernel/sealed.ts). */
  sealer: Sealer;
  /** Resolves AgentAuth bearer tokens; absent until the agents area exists. */
  agentResolver?: AgentResolver;
}

declare module 'fastify' {
  interface FastifyInstance {
    deps: AppDeps;
  }
}
