import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { AppDeps } from './deps.js';

// Plugins are typed loosely here: each area's plugin carries its own type provider.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AreaPlugin = FastifyPluginAsync<any>;

/**
 * How an area is mounted: the one registration object each area exports from its
 * `area.ts`, collected in src/areas.ts. app.ts knows that list, never an area.
 * A new area is its folder plus one line in the list.
 */
export interface Area {
  /** The area's folder under src/ (`api/<area>`, `sandbox/<area>`, `operator/<area>`, or `dashboard`). */
  readonly name: string;
  /**
   * Hooks on kernel seams (kernel/hooks.ts), job handlers, listeners: called once per app,
   * in list order, before anything is mounted.
   */
  readonly wire?: (deps: AppDeps) => void;
  /**
   * App-wide Fastify hooks (every route of every scope): called in list order after the
   * OpenAPI document is registered and before any plugin is mounted.
   */
  readonly install?: (app: FastifyInstance, deps: AppDeps) => void;
  /** Plugins under the version prefix (/2025-10-13): authenticated, in list order (the OpenAPI document's order). */
  readonly api?: readonly AreaPlugin[];
  /** Plugins under /admin, the operator API: mounted only when PAYMENTS_ADMIN_KEY is set. */
  readonly admin?: readonly AreaPlugin[];
  /** Public pages at the root (pages the API links to, the dashboard). */
  readonly pages?: readonly AreaPlugin[];
}
