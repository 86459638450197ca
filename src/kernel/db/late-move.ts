// PostgreSQL, issue 35: a payment's hold moves the payer's balance row, and the row stays
// locked from that statement to the commit, so one payer's payments wait for each other for
// as long as that is. Sent as soon as the hold is posted, the move kept the row locked
// across this process's round trip and its event loop's turn back to the request, then the
// rest of the request's statements and the commit. A late move is sent instead with the
// commit (connect.ts `heldStatement`, pg-pipeline.ts): the row is locked only while the
// server runs the transaction's last statement and commits.
//
// What it takes:
// - the move's outcome is not known when the hold is posted, so the balances it returns are
//   LATE_VALUES (numbers no balance can be in an answer: below any account that may not go
//   negative), which only the account's INTERNAL_ACCOUNT.BALANCE_UPDATED event shows; the
//   events' insert writes that event's body with the move's real figures (events.ts,
//   event-bodies.ts `lateTemplate`);
// - a refused move (not enough available, a bucket out of range, no such row) is known only
//   at commit: the statement fails there (`payments_one_row`, migration 0041) and the effect
//   transaction runs again with the move sent at once (idempotency.ts `effectTransaction`),
//   which refuses it with the ledger's own error and figures, exactly as before; the same
//   when the transaction reads or moves a balance again after the late move (LateMoveRetry),
//   which would not see it;
// - only where both hold: an effect transaction (which runs again) whose events are written
//   together at its end (events.ts `emitEventsTogether`).

import type { Transaction } from 'kysely';
import type { DB } from './schema.js';

type Trx = Transaction<DB>;

/** Stand-ins of a late move's figures in the events: available, then total (available + pending + held). */
export const LATE_VALUES = [-9_007_199_254_740_991, -9_007_199_254_740_990] as const;

/** A balance row's move, written with the events' insert at the commit. */
export interface LateMove {
  /** `update … returning available, pending, held`, its parameters numbered from $1. */
  sql: string;
  parameters: readonly unknown[];
  /** The moved account: only events about it can show the move's figures. */
  resourceId: string;
}

/** The SQL expressions over the move's returned row whose values replace LATE_VALUES, in order. */
export const LATE_EXPRESSIONS = ['available', 'available + pending + held'] as const;

/** The error the late move's check raises when the move changed no row (migration 0041). */
export const LATE_MOVE_REFUSED = 'payments: late balance move refused';

const allowed = new WeakSet<object>();
const moves = new WeakMap<object, LateMove>();

/** Transactions that may move a balance late (an effect transaction's first run). */
export function allowLateMoves(trx: Trx): void {
  allowed.add(trx);
}

/** Whether a balance move of `trx` may wait for its commit: allowed, and none waiting already. */
export function lateMoveAllowed(trx: Trx): boolean {
  return allowed.has(trx) && !moves.has(trx);
}

export function holdLateMove(trx: Trx, move: LateMove): void {
  moves.set(trx, move);
}

/** Whether `trx` has a late move waiting (its events show LATE_VALUES). */
export function hasLateMove(trx: Trx): boolean {
  return moves.has(trx);
}

/** The waiting move's account, if one waits: the resource whose events show its figures. */
export function lateMoveResource(trx: Trx): string | undefined {
  return moves.get(trx)?.resourceId;
}

/** The waiting move, handed to the events' insert that writes it. */
export function takeLateMove(trx: Trx): LateMove | undefined {
  const m = moves.get(trx);
  moves.delete(trx);
  return m;
}

/**
 * Thrown by the ledger when the transaction reads or moves a balance again while a move waits
 * for its commit (it would not see that move): the transaction runs again without late moves.
 */
export class LateMoveRetry extends Error {
  constructor() {
    super('a balance was read or moved after a move waiting for the commit; run again without');
  }
}

// A check may wait too (limits/service.ts: the daily volume, issue 35): in an effect
// transaction's first run its statement is written with the transaction's next one
// (connect.ts `withNextStatement`; for a payment, with the commit: the request is then one
// round trip), and fails that statement when the check does not pass. A run that left a
// check so and then fails in any way, at commit or before, is run again with the check made
// at once (effectTransaction): the answer is the one the check made first gives (its 429
// before any later error, as always).
const checked = new WeakSet<object>();

/** Whether a check in `db` may wait for the commit: an effect transaction's first run. */
export function checkMayWaitForCommit(db: object): boolean {
  return allowed.has(db);
}

/** `trx` left a check to its commit: if the run fails, it runs again with the check made first. */
export function noteCheckAtCommit(trx: object): void {
  checked.add(trx);
}

/** Whether `trx` left a check to its commit. */
export function leftCheckToCommit(trx: object): boolean {
  return checked.has(trx);
}

/** Whether `err` is a late move refused at commit, or one in the way (the transaction runs again without one). */
export function isLateMoveRefused(err: unknown): boolean {
  if (err instanceof LateMoveRetry) return true;
  const e = err as { code?: string; message?: string } | undefined;
  return e?.code === 'P0001' && e.message === LATE_MOVE_REFUSED;
}
