import type { Kysely, Transaction } from 'kysely';
import { iso } from '../../kernel/clock.js';
import { findCurrency } from '../../kernel/currencies.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, type FieldError } from '../../kernel/errors.js';
import { type LimitKind, sandboxDefaultLimit, usdCentsIn } from '../../sandbox/rules/limits.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type { LimitOverrides, LimitOverridesPatch, PlatformLimits, PlatformLimitsPatch } from './schemas.js';
import { armDailyVolumeLimit, DAILY_VOLUME_SQLSTATE, dayVolumeArmedIfFits, dayVolumeArmedOrRefusedWithNext, outgoingVolume } from './store.js';
import { onCommitError } from '../../kernel/db/commit-errors.js';
import { checkMayWaitForCommit, noteCheckAtCommit } from '../../kernel/db/late-move.js';

// Transaction limits: the single-transaction maximum per trade corridor or withdrawal
// currency (400 TRANSACTION_SIZE_LIMIT_EXCEEDED, checked when a quote is created) and the
// daily volume (429 DAILY_VOLUME_LIMIT_EXCEEDED, checked when money moves). A corridor is
// sendingCurrency → receivingCurrency; when both are the same it is a withdrawal in that
// currency.
//
// Both are measured in the sending currency's smallest unit (the quote's
// totalSendingAmount, fees included). The limit of a corridor is, first found:
//   1. the platform's override for the corridor (`corridors["USD:EUR"]`) or, for a
//      withdrawal, for the currency (`withdrawals["USD"]`), in the sending currency;
//   2. the platform's `default`, in US cents, converted at the sandbox mid rate (floor);
//   3. the sandbox default for the sending currency (src/sandbox/rules/limits.ts).
// The overrides live in the platform's `options` JSON under `limits` (see schemas.ts).
//
// The day's volume is the sum of the platform's OUTGOING transactions in the corridor created
// on the same UTC day of the platform's clock, except those that failed or were refunded,
// rejected or expired (store.ts), plus the amount about to move.

type Db = Kysely<DB> | Transaction<DB>;

const DAY_MS = 86_400_000;

export interface LimitSubject {
  platform: PlatformRow;
  sendingCurrency: string;
  receivingCurrency: string;
  /** Smallest unit of sendingCurrency. */
  sendingAmount: number;
  /** Smallest unit of receivingCurrency. */
  receivingAmount: number;
  /** The platform's now (ms). */
  nowMs: number;
}

// ---- Overrides ---------------------------------------------------------------------------

const KINDS: readonly LimitKind[] = ['transactionSize', 'dailyVolume'];

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isLimitAmount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** A corridor key: "USD:EUR" (sending:receiving). */
export function corridorKey(sendingCurrency: string, receivingCurrency: string): string {
  return `${sendingCurrency}:${receivingCurrency}`;
}

function cleanMap(v: unknown): Record<string, number> | undefined {
  if (!isRecord(v)) return undefined;
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(v)) if (isLimitAmount(n)) out[k] = n;
  return Object.keys(out).length > 0 ? out : undefined;
}

function cleanOverrides(v: unknown): LimitOverrides | undefined {
  if (!isRecord(v)) return undefined;
  const out: LimitOverrides = {};
  if (isLimitAmount(v.default)) out.default = v.default;
  const corridors = cleanMap(v.corridors);
  if (corridors) out.corridors = corridors;
  const withdrawals = cleanMap(v.withdrawals);
  if (withdrawals) out.withdrawals = withdrawals;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** A platform's limit overrides from its options JSON (`limits`); undefined when it has none. */
export function limitOverridesOf(options: Record<string, unknown>): PlatformLimits | undefined {
  const raw = options.limits;
  if (!isRecord(raw)) return undefined;
  const out: PlatformLimits = {};
  for (const kind of KINDS) {
    const o = cleanOverrides(raw[kind]);
    if (o) out[kind] = o;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

function platformOverrides(platform: PlatformRow): PlatformLimits | undefined {
  try {
    return limitOverridesOf(JSON.parse(platform.options) as Record<string, unknown>);
  } catch {
    return undefined;
  }
}

function mergeMap(current: Record<string, number> | undefined, patch: Record<string, number | null> | null | undefined): Record<string, number> | undefined {
  if (patch === undefined) return current;
  if (patch === null) return undefined;
  const out: Record<string, number> = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

function mergeOverrides(current: LimitOverrides | undefined, patch: LimitOverridesPatch | null | undefined): LimitOverrides | undefined {
  if (patch === undefined) return current;
  if (patch === null) return undefined;
  const next: LimitOverrides = {};
  const def = patch.default === undefined ? current?.default : patch.default;
  if (def !== null && def !== undefined) next.default = def;
  const corridors = mergeMap(current?.corridors, patch.corridors);
  if (corridors) next.corridors = corridors;
  const withdrawals = mergeMap(current?.withdrawals, patch.withdrawals);
  if (withdrawals) next.withdrawals = withdrawals;
  return Object.keys(next).length > 0 ? next : undefined;
}

/**
 * Apply a `limits` change (a merge: a value sets, null clears, absent leaves alone; `limits:
 * null` clears every override) to a platform's overrides. Undefined when none remain.
 */
export function mergeLimitOverrides(current: PlatformLimits | undefined, patch: PlatformLimitsPatch | null): PlatformLimits | undefined {
  if (patch === null) return undefined;
  const out: PlatformLimits = {};
  for (const kind of KINDS) {
    const o = mergeOverrides(current?.[kind], patch[kind]);
    if (o) out[kind] = o;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

const CURRENCY_CODE = /^[A-Z]{3,4}$/;
const OVERRIDE_FIELDS = ['default', 'corridors', 'withdrawals'];

function amountErrors(field: string, v: unknown): FieldError[] {
  if (typeof v !== 'number' || !Number.isInteger(v)) return [{ field, message: 'must be an integer (smallest unit), or null to clear' }];
  if (v < 0) return [{ field, message: 'must be >= 0' }];
  if (v > Number.MAX_SAFE_INTEGER) return [{ field, message: `must be <= ${Number.MAX_SAFE_INTEGER}` }];
  return [];
}

function unknownFields(base: string, v: Record<string, unknown>, known: readonly string[]): FieldError[] {
  return Object.keys(v)
    .filter((k) => !known.includes(k))
    .map((k) => ({ field: `${base}.${k}`, message: 'is not a recognised field' }));
}

/**
 * Every problem of a PATCH `limits` value (absent: none): the shape (objects or null, amounts
 * integers from 0 to 2^53 − 1, no other fields), corridor keys "SENDING:RECEIVING" of two
 * different known currencies, withdrawal keys a known currency.
 */
export function limitsPatchErrors(limits: unknown, base = 'limits'): FieldError[] {
  if (limits === undefined || limits === null) return [];
  if (!isRecord(limits)) return [{ field: base, message: 'must be an object, or null to clear every override' }];
  const errors = unknownFields(base, limits, KINDS);
  const known = (code: string) => CURRENCY_CODE.test(code) && findCurrency(code) !== undefined;
  for (const kind of KINDS) {
    const o = limits[kind];
    const at = `${base}.${kind}`;
    if (o === undefined || o === null) continue;
    if (!isRecord(o)) {
      errors.push({ field: at, message: 'must be an object, or null to clear' });
      continue;
    }
    errors.push(...unknownFields(at, o, OVERRIDE_FIELDS));
    if (o.default !== undefined && o.default !== null) errors.push(...amountErrors(`${at}.default`, o.default));
    for (const map of ['corridors', 'withdrawals'] as const) {
      const m = o[map];
      if (m === undefined || m === null) continue;
      if (!isRecord(m)) {
        errors.push({ field: `${at}.${map}`, message: 'must be an object, or null to clear' });
        continue;
      }
      for (const [key, value] of Object.entries(m)) {
        const field = `${at}.${map}.${key}`;
        if (map === 'corridors') {
          const pair = /^([^:]+):([^:]+)$/.exec(key);
          if (!pair) errors.push({ field, message: 'must be a corridor key "SENDING:RECEIVING" of two currency codes, e.g. "USD:EUR"' });
          else {
            const unknown = [pair[1]!, pair[2]!].filter((c) => !known(c));
            if (unknown.length > 0) errors.push({ field, message: `names an unknown currency: ${unknown.join(', ')}` });
            else if (pair[1] === pair[2]) errors.push({ field, message: `is a withdrawal: set ${at}.withdrawals.${pair[1]} instead` });
          }
        } else if (!known(key)) {
          errors.push({ field, message: 'must be a known currency code, e.g. "USD"' });
        }
        if (value !== null) errors.push(...amountErrors(field, value));
      }
    }
  }
  return errors;
}

// ---- Resolution --------------------------------------------------------------------------

export type LimitSource = 'PLATFORM_CORRIDOR' | 'PLATFORM_WITHDRAWAL' | 'PLATFORM_DEFAULT' | 'SANDBOX_DEFAULT';

export interface ResolvedLimit {
  /** Smallest unit of the sending currency; null: no limit applies. */
  amount: bigint | null;
  source: LimitSource;
}

/** The limit of `kind` for the platform's corridor sendingCurrency → receivingCurrency. */
export function resolveLimit(platform: PlatformRow, kind: LimitKind, sendingCurrency: string, receivingCurrency: string): ResolvedLimit {
  const o = platformOverrides(platform)?.[kind];
  if (sendingCurrency === receivingCurrency) {
    const w = o?.withdrawals?.[sendingCurrency];
    if (w !== undefined) return { amount: BigInt(w), source: 'PLATFORM_WITHDRAWAL' };
  } else {
    const c = o?.corridors?.[corridorKey(sendingCurrency, receivingCurrency)];
    if (c !== undefined) return { amount: BigInt(c), source: 'PLATFORM_CORRIDOR' };
  }
  if (o?.default !== undefined) {
    const converted = usdCentsIn(BigInt(o.default), sendingCurrency);
    if (converted !== null) return { amount: converted, source: 'PLATFORM_DEFAULT' };
  }
  return { amount: sandboxDefaultLimit(kind, sendingCurrency), source: 'SANDBOX_DEFAULT' };
}

/** The UTC day of the platform clock that contains nowMs: [start, end) as ISO text. */
function dayOf(nowMs: number): { day: string; fromAt: string; toAt: string } {
  const start = Math.floor(nowMs / DAY_MS) * DAY_MS;
  const fromAt = iso(start);
  return { day: fromAt.slice(0, 10), fromAt, toAt: iso(start + DAY_MS) };
}

async function usedToday(db: Db, subject: LimitSubject): Promise<bigint> {
  const { fromAt, toAt } = dayOf(subject.nowMs);
  return outgoingVolume(db, {
    platformId: subject.platform.id,
    sendingCurrency: subject.sendingCurrency,
    receivingCurrency: subject.receivingCurrency,
    fromAt,
    toAt,
  });
}

/** A bigint amount as a JSON number (limits and sums of safe amounts stay far below 2^63). */
const num = (v: bigint): number => Number(v);

function baseDetails(subject: Pick<LimitSubject, 'sendingCurrency' | 'receivingCurrency'>): Record<string, unknown> {
  const withdrawal = subject.sendingCurrency === subject.receivingCurrency;
  return {
    corridor: corridorKey(subject.sendingCurrency, subject.receivingCurrency),
    sendingCurrency: subject.sendingCurrency,
    receivingCurrency: subject.receivingCurrency,
    withdrawal,
    currency: subject.sendingCurrency,
  };
}

// ---- The checks --------------------------------------------------------------------------

/** At quote creation (and transfer-out): above the single-transaction maximum → 400 TRANSACTION_SIZE_LIMIT_EXCEEDED. */
export async function checkTransactionSize(db: Db, subject: LimitSubject): Promise<void> {
  const limit = resolveLimit(subject.platform, 'transactionSize', subject.sendingCurrency, subject.receivingCurrency);
  const requested = BigInt(subject.sendingAmount);
  if (limit.amount === null || requested <= limit.amount) return;
  const used = await usedToday(db, subject);
  const corridor = corridorKey(subject.sendingCurrency, subject.receivingCurrency);
  const what = subject.sendingCurrency === subject.receivingCurrency ? `${subject.sendingCurrency} withdrawals` : `the ${corridor} corridor`;
  throw apiError(
    400,
    'TRANSACTION_SIZE_LIMIT_EXCEEDED',
    `The amount ${requested} ${subject.sendingCurrency} (smallest unit) is above the single-transaction maximum of ${limit.amount} for ${what}`,
    {
      ...baseDetails(subject),
      limit: num(limit.amount),
      maximum: num(limit.amount),
      requestedAmount: num(requested),
      usedToday: num(used),
      limitSource: limit.source,
    },
  );
}

/** When money moves (execute, immediatelyExecute, transfer-out), before the transaction row is written: over the day's volume → 429 DAILY_VOLUME_LIMIT_EXCEEDED. */
export async function checkDailyVolume(db: Db, subject: LimitSubject): Promise<void> {
  const limit = resolveLimit(subject.platform, 'dailyVolume', subject.sendingCurrency, subject.receivingCurrency);
  if (limit.amount === null) return;
  const requested = BigInt(subject.sendingAmount);
  const { day, toAt } = dayOf(subject.nowMs);
  const volume = { platformId: subject.platform.id, sendingCurrency: subject.sendingCurrency, receivingCurrency: subject.receivingCurrency, day, requested, limit: limit.amount, source: limit.source };
  // PostgreSQL, an effect transaction's first run: the same read and arming, written with the
  // transaction's next statement (no round trip of its own); over the limit it fails that
  // statement instead, and the run is repeated with the check made here (db/late-move.ts),
  // which answers the 429 below before anything else, as always.
  if (checkMayWaitForCommit(db) && (await dayVolumeArmedOrRefusedWithNext(db, volume))) {
    noteCheckAtCommit(db);
    return;
  }
  // PostgreSQL: the read and the arming in one statement (armed there when the payment fits).
  const read = await dayVolumeArmedIfFits(db, volume);
  const used = read ?? (await usedToday(db, subject));
  if (read !== undefined && used + requested <= limit.amount) return;
  if (used + requested <= limit.amount) {
    // Payments committing meanwhile (other requests, other processes) are checked at commit (PostgreSQL).
    await armDailyVolumeLimit(db, { sendingCurrency: subject.sendingCurrency, receivingCurrency: subject.receivingCurrency, limit: limit.amount, source: limit.source, day });
    return;
  }
  throw dailyVolumeExceeded({ sendingCurrency: subject.sendingCurrency, receivingCurrency: subject.receivingCurrency, limit: limit.amount, source: limit.source, used, requested, day, toAt });
}

function dailyVolumeExceeded(a: { sendingCurrency: string; receivingCurrency: string; limit: bigint; source: string; used: bigint; requested: bigint; day: string; toAt: string }) {
  const corridor = corridorKey(a.sendingCurrency, a.receivingCurrency);
  const what = a.sendingCurrency === a.receivingCurrency ? `${a.sendingCurrency} withdrawals` : `the ${corridor} corridor`;
  const remaining = a.limit > a.used ? a.limit - a.used : 0n;
  return apiError(
    429,
    'DAILY_VOLUME_LIMIT_EXCEEDED',
    `${a.requested} ${a.sendingCurrency} (smallest unit) would exceed the daily volume limit of ${a.limit} for ${what}: ${a.used} used on ${a.day} (UTC, sandbox clock)`,
    {
      ...baseDetails({ sendingCurrency: a.sendingCurrency, receivingCurrency: a.receivingCurrency }),
      limit: num(a.limit),
      usedToday: num(a.used),
      requestedAmount: num(a.requested),
      remaining: num(remaining),
      day: a.day,
      resetsAt: a.toAt,
      limitSource: a.source,
    },
  );
}

// The check deferred to commit (PostgreSQL, limits/store.ts armDailyVolumeLimit) refused the
// payment: payments of other requests committed first and used the room. The same 429, from
// the totals the database saw at commit.
onCommitError((err) => {
  const e = err as { code?: string; detail?: string };
  if (e?.code !== DAILY_VOLUME_SQLSTATE || typeof e.detail !== 'string') return undefined;
  const d = JSON.parse(e.detail) as { total: number | string; amount: number | string; limit: string; source: string; day: string; sendingCurrency: string; receivingCurrency: string };
  const requested = BigInt(d.amount);
  const used = BigInt(d.total) - requested;
  return dailyVolumeExceeded({
    sendingCurrency: d.sendingCurrency,
    receivingCurrency: d.receivingCurrency,
    limit: BigInt(d.limit),
    source: d.source,
    used,
    requested,
    day: d.day,
    toAt: iso(Date.parse(`${d.day}T00:00:00.000Z`) + DAY_MS),
  });
});
