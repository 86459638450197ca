import { translateCommitError } from './db/commit-errors.js';
import { createHash } from 'node:crypto';
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { apiError } from './errors.js';
import { isUniqueViolation } from './db/connect.js';
import { allowLateMoves, isLateMoveRefused, leftCheckToCommit } from './db/late-move.js';
import type { DB } from './db/schema.js';

// Idempotency-Key on POST. The first request with a key claims it (a row in
// 'in_progress'); its response is stored when it finishes. A later request with the same
// key and the same method, path and body gets the stored response; with anything else it
// gets 400 INVALID_INPUT naming the key. A duplicate that arrives while the first is still
// running waits for it, so the two never both execute. Keys are honoured for 24 hours of
// the platform's clock. A 5xx is not stored: retrying such a request executes it again.
//
// Exactly once (docs/reliability.md): a claim carries a random token and a lease. The
// claiming request runs in an AsyncLocalStorage context holding the claim; a service that
// moves money opens its transaction with `effectTransaction`, which stores the request's
// answer (the route's success status and serialized body) in the key's row INSIDE the
// effect's transaction, fenced on the claim token. So the effect and its answer commit
// together or not at all: after any crash the key is either 'done' with the answer of the
// committed effect (a retry replays it), or 'in_progress' with no effect (a retry may run
// it on a clean slate). Such a claim is taken over only once its lease has lapsed (its
// process renews it every second while the request runs), and the takeover changes the
// token, so a request that was only slow can no longer commit its effect (its fenced write
// finds no row and rolls its transaction back).

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60_000;
/** A claiming process renews the leases of its running requests this often (real time). */
export const LEASE_RENEW_MS = 1_000;
/** A claim whose lease was not renewed for this long belongs to a process that is gone. */
export const LEASE_LAPSE_MS = 5_000;

/** The claim a request holds: what its effect transaction fences on. */
export interface HeldClaim {
  platformId: string;
  key: string;
  token: string;
}

/** The per-request context of a claiming request (set around the route's handler). */
export interface IdempotencyContext extends HeldClaim {
  /** The route's answer to a successful call, as stored: status, body text, content type; undefined when the route has no single success status. */
  render?: (value: unknown) => { status: number; body: string; contentType: string | null };
  /** Set once the answer has been stored with the effect. */
  answered: boolean;
}

const context = new AsyncLocalStorage<IdempotencyContext>();

/** Run `fn` (a route handler) as the claiming request of `ctx`. */
export function runClaimed<T>(ctx: IdempotencyContext, fn: () => T): T {
  return context.run(ctx, fn);
}

/**
 * Test seams: throw at a point of an effect transaction to simulate a crash there.
 * `beforeEffectCommit` gets the transaction and may return a promise the COMMIT waits for
 * (a test cuts the transaction's connection there: a commit whose outcome is unknown).
 */
export const idempotencyFaults: { beforeEffectCommit?: (trx: Transaction<DB>) => void | Promise<void>; afterEffectCommit?: () => void; afterEffectStep?: () => void } = {};

/**
 * Open the transaction of a request's effect (money moving, a resource created). Inside an
 * Idempotency-Key request, the value `fn` returns is the route's answer: it is serialized
 * with the route's response schema and stored under the key in this same transaction,
 * fenced on the claim (a claim taken over rolls the effect back: 409 CONFLICT). Outside one
 * it is a plain transaction.
 */
export async function effectTransaction<T>(db: Kysely<DB>, fn: (trx: Transaction<DB>) => Promise<T>, answerOf: (value: T) => unknown = (value) => value): Promise<T> {
  const ctx = context.getStore();
  let stored = false;
  // PostgreSQL may move a balance row with the commit (db/late-move.ts); a move refused
  // there fails the commit, and nothing of the first run stays: it runs again, the move
  // sent at once, so the ledger refuses it with its own error as it always did.
  let late = true;
  let last: object | undefined;
  const run = () => db.transaction().execute(async (trx) => {
    stored = false;
    last = trx;
    if (late) allowLateMoves(trx);
    const value = await fn(trx);
    // `answerOf` names the route's answer in the transaction's result; undefined: this
    // transaction committed no answer (it ends in an error the route answers, a 4xx that
    // onSend stores, or its effect is not the request's).
    const answerValue = ctx && ctx.render && !ctx.answered ? answerOf(value) : undefined;
    if (ctx && ctx.render && !ctx.answered && answerValue !== undefined) {
      const answer = ctx.render(answerValue);
      const written = await trx
        .updateTable('idempotency_keys')
        .set({ state: 'done', response_status: answer.status, response_body: answer.body, response_content_type: answer.contentType })
        .where('platform_id', '=', ctx.platformId)
        .where('key', '=', ctx.key)
        .where('claim_token', '=', ctx.token)
        .where('state', '=', 'in_progress')
        .executeTakeFirst();
      if (Number(written.numUpdatedRows) !== 1) {
        throw apiError(409, 'CONFLICT', `The claim of Idempotency-Key "${ctx.key}" was taken over by a retry; nothing was done by this request`);
      }
      stored = true;
    }
    const beforeCommit = idempotencyFaults.beforeEffectCommit;
    if (beforeCommit) await beforeCommit(trx);
    return value;
  });
  const result = await run()
    .catch((err: unknown) => {
      // A late move refused or in the way, or any failure of a run that left a check to its
      // commit (db/late-move.ts): once more, with moves sent and checks made at once.
      if (!isLateMoveRefused(err) && !(last !== undefined && leftCheckToCommit(last))) throw err;
      late = false;
      return run();
    })
    .catch((err: unknown) => {
      // A check deferred to commit (PostgreSQL) refused it: the area's answer, not a 500.
      throw translateCommitError(err);
    });
  if (ctx && stored) ctx.answered = true;
  idempotencyFaults.afterEffectCommit?.();
  return result;
}

/**
 * Run `fn` outside any Idempotency-Key claim: work a request starts that is not its own
 * effect (the sandbox clock advance running other requests' due jobs) must never store its
 * result as the request's answer.
 */
export function outsideClaim<T>(fn: () => T): T {
  return context.exit(fn);
}

/**
 * The plan of an effect that commits in several steps (the sandbox clock advance moves the
 * clock job by job), kept in the claim's row (`progress`, migration 0019): the first run
 * computes and stores it (fenced on the claim token); a retry that took over the claim of a
 * process that died midway reads the same plan back and finishes it, instead of planning
 * again from where the first run stopped. Outside a claim it is just `compute()`.
 */
export async function claimPlan<T>(db: Kysely<DB>, compute: () => Promise<T>): Promise<T> {
  const ctx = context.getStore();
  if (!ctx) return compute();
  const row = await db
    .selectFrom('idempotency_keys')
    .select('progress')
    .where('platform_id', '=', ctx.platformId)
    .where('key', '=', ctx.key)
    .where('claim_token', '=', ctx.token)
    .where('state', '=', 'in_progress')
    .executeTakeFirst();
  if (!row) throw apiError(409, 'CONFLICT', `The claim of Idempotency-Key "${ctx.key}" was taken over by a retry; nothing was done by this request`);
  if (row.progress !== null) return JSON.parse(row.progress) as T;
  const plan = await compute();
  const written = await db
    .updateTable('idempotency_keys')
    .set({ progress: JSON.stringify(plan) })
    .where('platform_id', '=', ctx.platformId)
    .where('key', '=', ctx.key)
    .where('claim_token', '=', ctx.token)
    .where('state', '=', 'in_progress')
    .executeTakeFirst();
  if (Number(written.numUpdatedRows) !== 1) {
    throw apiError(409, 'CONFLICT', `The claim of Idempotency-Key "${ctx.key}" was taken over by a retry; nothing was done by this request`);
  }
  return plan;
}

export type Claim =
  | { kind: 'new'; token: string }
  | { kind: 'replay'; status: number; body: string; contentType: string | null }
  | { kind: 'mismatch' }
  | { kind: 'busy' };

function stable(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'undefined';
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`;
  const keys = Object.keys(value as Record<string, unknown>).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stable((value as Record<string, unknown>)[k])}`).join(',')}}`;
}

export function requestHash(method: string, url: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${url}\n${stable(body)}`).digest('hex');
}

async function readKey(db: Kysely<DB>, platformId: string, key: string) {
  return db.selectFrom('idempotency_keys').selectAll().where('platform_id', '=', platformId).where('key', '=', key).executeTakeFirst();
}

/**
 * Try to claim a key; tells the caller what to do. `realNowMs` is real time (leases are
 * about processes, not about the platform's sandbox clock).
 */
export async function claimKey(db: Kysely<DB>, platformId: string, key: string, hash: string, nowMs: number, realNowMs: number): Promise<Claim> {
  // Past its 24 hours a key is forgotten, unless a live request still holds it.
  await db
    .deleteFrom('idempotency_keys')
    .where('platform_id', '=', platformId)
    .where('key', '=', key)
    .where('created_ms', '<', nowMs - IDEMPOTENCY_TTL_MS)
    .where((eb) => eb.or([eb('state', '=', 'done'), eb('lease_ms', 'is', null), eb('lease_ms', '<', realNowMs - LEASE_LAPSE_MS)]))
    .execute();
  const token = randomUUID();
  try {
    await db
      .insertInto('idempotency_keys')
      .values({
        platform_id: platformId,
        key,
        request_hash: hash,
        state: 'in_progress',
        response_status: null,
        response_body: null,
        response_content_type: null,
        created_ms: nowMs,
        claim_token: token,
        lease_ms: realNowMs,
        progress: null,
      })
      .execute();
    return { kind: 'new', token };
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
  }
  const row = await readKey(db, platformId, key);
  if (!row) return { kind: 'busy' }; // released between our insert and read: let the caller retry
  if (row.request_hash !== hash) return { kind: 'mismatch' };
  if (row.state === 'done') return { kind: 'replay', status: Number(row.response_status), body: row.response_body ?? '', contentType: row.response_content_type };
  if (row.lease_ms === null || Number(row.lease_ms) < realNowMs - LEASE_LAPSE_MS) {
    // The first request's process is gone (killed, or stalled past its lease) and its effect
    // did not commit (it would have stored the answer with it): take the claim over with a
    // new token. Conditional on the old token and state, so of two retries one wins, and a
    // stalled original can no longer commit (its fenced write finds the token changed).
    const taken = await db
      .updateTable('idempotency_keys')
      .set({ claim_token: token, lease_ms: realNowMs, created_ms: nowMs })
      .where('platform_id', '=', platformId)
      .where('key', '=', key)
      .where('state', '=', 'in_progress')
      .where((eb) => (row.claim_token === null ? eb('claim_token', 'is', null) : eb('claim_token', '=', row.claim_token)))
      .executeTakeFirst();
    if (Number(taken.numUpdatedRows) === 1) return { kind: 'new', token };
  }
  return { kind: 'busy' };
}

/** Store the answer of a request whose effect did not store it already (fenced on its claim). */
export async function completeKey(db: Kysely<DB>, claim: HeldClaim, status: number, body: string, contentType: string | null): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ state: 'done', response_status: status, response_body: body, response_content_type: contentType })
    .where('platform_id', '=', claim.platformId)
    .where('key', '=', claim.key)
    .where('claim_token', '=', claim.token)
    .where('state', '=', 'in_progress')
    .execute();
}

/**
 * Free the key of a request that failed (5xx) without a committed effect. A claim with a
 * plan (claimPlan) may have committed some of its steps: it stays in progress, and once its
 * lease lapses a retry takes it over and finishes that plan.
 */
export async function releaseKey(db: Kysely<DB>, claim: HeldClaim): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('platform_id', '=', claim.platformId)
    .where('key', '=', claim.key)
    .where('claim_token', '=', claim.token)
    .where('state', '=', 'in_progress')
    .where('progress', 'is', null)
    .execute();
}

/** Renew the leases of the claims this process's requests hold (every LEASE_RENEW_MS). */
export async function renewLeases(db: Kysely<DB>, tokens: readonly string[], realNowMs: number): Promise<void> {
  if (tokens.length === 0) return;
  await db.updateTable('idempotency_keys').set({ lease_ms: realNowMs }).where('claim_token', 'in', tokens).where('state', '=', 'in_progress').execute();
}
