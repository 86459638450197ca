import type { Kysely } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { TableCache } from '../../kernel/db/table-cache.js';
import { apiError, type FieldError } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { API_VERSION } from '../../config.js';
import { activeFaults, consumeCount, countSeen, deleteFault, deleteFaults, type FaultRow, insertFault } from './store.js';
import { type FaultKind, REQUEST_FAULT_KINDS, WEBHOOK_FAULT_KINDS } from './schemas.js';

// Faults on demand (issue 36; docs/sandbox/faults.md): a platform's rules that make chosen
// operations fail the way the real service can, and its webhook deliveries misbehave. The
// rules live in the store (sandbox_faults), so every process of a shared PostgreSQL server
// applies them; each process keeps the platform's active rules in memory (a TableCache of
// the table, dropped on any change of it, on PostgreSQL also another process's), so a
// request of a platform without rules costs one map look-up. A rule's count is consumed by
// one atomic update in the store; a duration rule's matching calls are counted there too.

export const VERSION_PREFIX = `/${API_VERSION}`;
/** The faults' own routes: never faulted. */
export const FAULTS_PATH = `${VERSION_PREFIX}/sandbox/faults`;

export interface FaultView {
  id: string;
  operation: string | null;
  kind: FaultKind;
  count: number | null;
  remaining: number | null;
  fraction: number | null;
  durationSeconds: number | null;
  expiresAt: string | null;
  delayMs: number | null;
  retryAfterSeconds: number | null;
  createdAt: string;
}

export interface FaultCreate {
  operation?: string | undefined;
  kind: FaultKind;
  count?: number | undefined;
  fraction?: number | undefined;
  durationSeconds?: number | undefined;
  delayMs?: number | undefined;
  retryAfterSeconds?: number | undefined;
}

// ---- The operations a rule may name --------------------------------------------------------

/** One operation served under the version prefix, as a rule names it. */
export interface Operation {
  method: string;
  /** The path template as the reference writes it (`/quotes/{quoteId}`), without the prefix. */
  path: string;
  operationId: string | undefined;
  /** A sandbox extension (x-extension): `*` does not match it. */
  extension: boolean;
}

/** The operations of an app (collected by its onRoute hook; faults.ts), per store. */
const operationsByStore = new WeakMap<Store, Operation[]>();

export function operationsOf(store: Store): Operation[] {
  let ops = operationsByStore.get(store);
  if (!ops) operationsByStore.set(store, (ops = []));
  return ops;
}

/** Fastify's `:param` → the reference's `{param}`. */
export const templateOf = (fastifyPath: string): string => fastifyPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/** Whether a rule's `operation` names this operation. */
export function names(operation: string, op: Operation): boolean {
  if (operation === '*') return !op.extension;
  const space = operation.indexOf(' ');
  if (space < 0) return op.operationId === operation;
  const method = operation.slice(0, space).toUpperCase();
  let path = operation.slice(space + 1).trim();
  if (path.startsWith(VERSION_PREFIX + '/')) path = path.slice(VERSION_PREFIX.length);
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  return method === op.method && path === op.path;
}

const isFaultsRoute = (op: Operation) => op.path === '/sandbox/faults' || op.path.startsWith('/sandbox/faults/');

// ---- Rules ---------------------------------------------------------------------------------

const isWebhookKind = (k: string) => (WEBHOOK_FAULT_KINDS as readonly string[]).includes(k);

function view(r: FaultRow): FaultView {
  return {
    id: r.id,
    operation: r.operation,
    kind: r.kind as FaultKind,
    count: r.count,
    remaining: r.remaining,
    fraction: r.fraction_ppm === null ? null : r.fraction_ppm / 1_000_000,
    durationSeconds: r.duration_seconds,
    expiresAt: r.expires_ms === null ? null : new Date(r.expires_ms).toISOString(),
    delayMs: r.delay_ms,
    retryAfterSeconds: r.retry_after_seconds,
    createdAt: r.created_at,
  };
}

/** Every field error of a rule at once (the schema has checked each field's type and range). */
function fieldErrors(store: Store, b: FaultCreate): FieldError[] {
  const errors: FieldError[] = [];
  const webhook = isWebhookKind(b.kind);
  if (webhook && b.operation !== undefined) errors.push({ field: 'operation', message: `is not taken by ${b.kind} (a webhook fault applies to the platform's deliveries)` });
  if (!webhook) {
    if (b.operation === undefined) errors.push({ field: 'operation', message: `is required for ${b.kind}: an operationId, "METHOD /path-template" or "*"` });
    else {
      const ops = operationsOf(store);
      const named = ops.filter((op) => names(b.operation!, op));
      if (named.length === 0) errors.push({ field: 'operation', message: `"${b.operation}" names no operation: give an operationId (createQuote), "METHOD /path-template" (POST /quotes) or "*"` });
      else if (b.operation !== '*' && named.every(isFaultsRoute)) errors.push({ field: 'operation', message: 'the faults\' own operations are never faulted' });
    }
  }
  if (b.count === undefined && b.durationSeconds === undefined) {
    errors.push({ field: 'count', message: 'either count or durationSeconds is required' });
  }
  if (b.count !== undefined && b.durationSeconds !== undefined) errors.push({ field: 'durationSeconds', message: 'cannot be given with count: a rule lasts a count of calls or a duration' });
  if (b.fraction !== undefined && b.durationSeconds === undefined) errors.push({ field: 'fraction', message: 'is taken only with durationSeconds' });
  const delayed = b.kind === 'DELAY' || b.kind === 'WEBHOOK_DELAY';
  if (delayed && b.delayMs === undefined) errors.push({ field: 'delayMs', message: `is required for ${b.kind}` });
  if (!delayed && b.delayMs !== undefined) errors.push({ field: 'delayMs', message: `is taken only by DELAY and WEBHOOK_DELAY, not ${b.kind}` });
  const retried = b.kind === 'SERVICE_UNAVAILABLE' || b.kind === 'RATE_LIMITED';
  if (!retried && b.retryAfterSeconds !== undefined) errors.push({ field: 'retryAfterSeconds', message: `is taken only by SERVICE_UNAVAILABLE and RATE_LIMITED, not ${b.kind}` });
  if (b.kind === 'WEBHOOK_OUT_OF_ORDER' && b.count === 1) errors.push({ field: 'count', message: 'must be at least 2: one event alone has no order to change' });
  return errors;
}

export async function createFault(store: Store, platformId: string, at: string, b: FaultCreate): Promise<FaultView> {
  const errors = fieldErrors(store, b);
  if (errors.length > 0) throw apiError(400, 'INVALID_INPUT', `Invalid fault rule: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`, { errors });
  const realNow = Date.now();
  const row = {
    id: newId('SandboxFault'),
    platform_id: platformId,
    operation: b.operation ?? null,
    kind: b.kind,
    count: b.count ?? null,
    remaining: b.count ?? null,
    fraction_ppm: b.durationSeconds === undefined ? null : Math.round((b.fraction ?? 1) * 1_000_000),
    duration_seconds: b.durationSeconds ?? null,
    expires_ms: b.durationSeconds === undefined ? null : realNow + b.durationSeconds * 1_000,
    delay_ms: b.delayMs ?? null,
    retry_after_seconds: b.kind === 'SERVICE_UNAVAILABLE' || b.kind === 'RATE_LIMITED' ? (b.retryAfterSeconds ?? 1) : null,
    created_at: at,
  };
  await insertFault(store.db, row);
  return view({ ...row, seen: 0 });
}

export async function listFaults(db: Kysely<DB>, platformId: string): Promise<{ data: FaultView[] }> {
  return { data: (await activeFaults(db, platformId, Date.now())).map(view) };
}

export async function removeFault(db: Kysely<DB>, platformId: string, id: string): Promise<void> {
  if (!(await deleteFault(db, platformId, id))) throw apiError(404, 'REFERENCE_NOT_FOUND', `Fault rule ${id} not found`);
}

export async function clearFaults(db: Kysely<DB>, platformId: string): Promise<{ deleted: number }> {
  return { deleted: await deleteFaults(db, platformId) };
}

// ---- The hot path: which rule, if any, takes a call ----------------------------------------

/** Each platform's active rules, per store, while sandbox_faults has not changed. */
const rulesCache = new TableCache<string, FaultRow[]>(['sandbox_faults']);

/** The platform's active rules: at once from memory (the usual case), else a promise of them. */
export function rulesOf(db: Kysely<DB>, platformId: string): FaultRow[] | Promise<FaultRow[]> {
  const hit = rulesCache.peek(db, platformId);
  if (hit) return hit.value;
  return rulesCache.get(db, platformId, () => activeFaults(db, platformId, Date.now()));
}

/** Whether a rule may still apply at real time `nowMs` (the store decides when it is consumed). */
export const live = (r: FaultRow, nowMs: number): boolean => (r.remaining !== null ? r.remaining > 0 : r.expires_ms !== null && r.expires_ms > nowMs);

export const isRequestRule = (r: FaultRow): boolean => (REQUEST_FAULT_KINDS as readonly string[]).includes(r.kind);
export const isWebhookRule = (r: FaultRow): boolean => isWebhookKind(r.kind);

/**
 * Whether `rule` takes this call: a count rule when one of its remaining calls could be taken
 * (atomically, in the store); a duration rule when it is still running and this call is one of
 * its fraction (the n-th matching call is faulted when floor(n·f) > floor((n−1)·f): 0.5 faults
 * every second call, 0.25 every fourth; deterministic, and counted in the store, so the same
 * across processes). `remaining` is what a count rule has left after this call.
 */
export async function takes(db: Kysely<DB>, rule: FaultRow): Promise<{ remaining: number | null } | undefined> {
  if (rule.remaining !== null) {
    const left = await consumeCount(db, rule.id);
    return left === undefined ? undefined : { remaining: left };
  }
  const n = await countSeen(db, rule.id, Date.now());
  if (n === undefined) return undefined;
  const ppm = rule.fraction_ppm ?? 1_000_000;
  return Math.floor((n * ppm) / 1_000_000) > Math.floor(((n - 1) * ppm) / 1_000_000) ? { remaining: null } : undefined;
}
