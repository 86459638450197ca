import { createHash } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { findCurrency } from '../../kernel/currencies.js';
import { newId } from '../../kernel/ids.js';
import { hasLateMove, holdLateMove, LATE_VALUES, lateMoveAllowed, LateMoveRetry } from '../../kernel/db/late-move.js';
import { collectingEvents } from '../../kernel/events.js';
import {
  type BalanceRow,
  type EntryRow,
  entriesWithIdempotencyKeys,
  findEntryByIdempotencyKey,
  insertEntries,
  insertBalanceRows,
  insertEntry,
  insertPostings,
  lockBalanceRows,
  moveBalanceRow,
  moveBalanceStatement,
  type PostingRow,
  postingsOfEntry,
  postingTotals,
  selectBalanceRows,
  updateBalanceRow,
  updateBalanceRows,
} from './store.js';

// The double-entry ledger (docs/ledger.md). Every balance change is a journal entry whose
// postings sum to zero per currency, written in the caller's transaction together with
// the balance rows it moves, which are locked first. Internal accounts never go below
// zero in any bucket; counter-accounts (the platform's per-currency 'outside world') may.

type Db = Kysely<DB> | Transaction<DB>;

export const BUCKETS = ['available', 'pending', 'held'] as const;
export type Bucket = (typeof BUCKETS)[number];

export type LedgerAccountKind = 'INTERNAL' | 'WORLD' | 'CLEARING';

export interface Posting {
  accountId: string;
  currency: string;
  /** Signed minor units: positive raises the bucket, negative lowers it. Never 0. */
  amount: number;
  /** Default 'available'. */
  bucket?: Bucket;
}

export interface EntryInput {
  platformId: string;
  /** What the entry is: FUNDING, HOLD, RELEASE, CAPTURE, PAYOUT, REFUND, … */
  kind: string;
  postings: Posting[];
  /** The platform's now (ISO 8601). */
  at: string;
  /** The resource the entry belongs to (Transaction:…, Quote:…). */
  referenceId?: string | undefined;
  /** The entry this one settles or reverses (a release names its hold). */
  relatedEntryId?: string | undefined;
  /** At most one entry per (platform, key): posting the same key again returns the first entry and moves nothing. */
  idempotencyKey?: string | undefined;
  /**
   * The caller knows no entry can have `idempotencyKey` yet (its resource was created in this
   * same database transaction): the look-up of an earlier entry is skipped (issue 35). The
   * unique index still refuses a second entry under the key.
   */
  keyIsNew?: boolean | undefined;
  /**
   * The caller reads the entry's balances only to emit the accounts' balance events
   * (emitBalanceUpdates): on PostgreSQL a one-account move may then wait for the commit,
   * its balances stand-ins until the events are written (kernel/db/late-move.ts).
   */
  balancesForEventsOnly?: boolean | undefined;
  memo?: string | undefined;
}

export interface Balance {
  accountId: string;
  currency: string;
  available: number;
  pending: number;
  held: number;
  /** available + pending + held. */
  total: number;
}

export interface PostedEntry {
  id: string;
  platformId: string;
  kind: string;
  referenceId: string | null;
  relatedEntryId: string | null;
  createdAt: string;
  postings: Array<Required<Posting>>;
  /** The balances of every touched account after the entry. */
  balances: Balance[];
  /** True when the idempotency key named an existing entry: nothing was posted now. */
  replayed: boolean;
}

// ---- Errors ---------------------------------------------------------------------------
// Not ApiErrors: the ledger does not know the HTTP answer. The money-movement area maps
// InsufficientFundsError to its own 4xx; every other LedgerError is a bug of the caller
// (an unbalanced or malformed entry) and surfaces as 500.

export type LedgerErrorCode = 'UNBALANCED_ENTRY' | 'INVALID_POSTING' | 'UNKNOWN_ACCOUNT' | 'CURRENCY_MISMATCH' | 'INSUFFICIENT_FUNDS' | 'CONCURRENT_UPDATE';

export class LedgerError extends Error {
  constructor(
    readonly code: LedgerErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'LedgerError';
  }
}

export class UnbalancedEntryError extends LedgerError {
  constructor(readonly sums: Record<string, number>) {
    super('UNBALANCED_ENTRY', `Ledger entry does not sum to zero: ${Object.entries(sums).map(([c, s]) => `${c} ${s}`).join(', ')}`);
    this.name = 'UnbalancedEntryError';
  }
}

/** A posting would take an account's bucket below zero. Nothing was written. */
export class InsufficientFundsError extends LedgerError {
  constructor(
    readonly accountId: string,
    readonly currency: string,
    readonly bucket: Bucket,
    /** The bucket's balance before the entry. */
    readonly balance: number,
    /** The entry's net change to the bucket (negative). */
    readonly change: number,
  ) {
    super('INSUFFICIENT_FUNDS', `Account ${accountId} has ${balance} ${currency} ${bucket}; the entry needs ${-change}`);
    this.name = 'InsufficientFundsError';
  }

  /** How much is missing, in minor units. */
  get shortfall(): number {
    return -(this.balance + this.change);
  }
}

export function isInsufficientFunds(err: unknown): err is InsufficientFundsError {
  return err instanceof InsufficientFundsError;
}

// ---- Accounts -------------------------------------------------------------------------

/** Open the ledger account of an internal account (same id), in the caller's transaction. Idempotent. */
export async function openInternalLedgerAccounts(db: Db, platformId: string, accounts: Array<{ id: string; currency: string }>, at: string): Promise<void> {
  await insertBalanceRows(
    db,
    accounts.map((a) => ({
      account_id: a.id,
      platform_id: platformId,
      kind: 'INTERNAL',
      currency: a.currency,
      allow_negative: 0,
      available: 0,
      pending: 0,
      held: 0,
      version: 0,
      created_at: at,
      updated_at: at,
    })),
  );
}

/** A deterministic uuid-shaped id from a name (version nibble 8: custom). */
function nameUuid(name: string): string {
  const h = createHash('sha256').update(name).digest();
  h[6] = 0x80 | (h[6]! & 0x0f);
  h[8] = 0x80 | (h[8]! & 0x3f);
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/**
 * How many ledger accounts the outside world is split into, per platform and currency. Every
 * posting locks the balance rows it changes until its transaction commits (PostgreSQL), so
 * with one world account every payout, deposit and settlement of a platform in a currency
 * would queue on that one row (issue 15: settlements ran one at a time). A movement names
 * its `spread` key (its transaction's id) and uses the part that key hashes to; nothing
 * reads the world's balance but the ledger invariants, which hold per account.
 */
export const WORLD_ACCOUNT_PARTS = 16;

/**
 * The id of a platform's 'outside world' counter-account in a currency (fixed: no lookup
 * needed); `part` 0 (the default) is the one a platform starts with, 1 … WORLD_ACCOUNT_PARTS − 1 the others.
 */
export function worldAccountId(platformId: string, currency: string, part = 0): string {
  const name = part === 0 ? `world|${platformId}|${currency}` : `world|${platformId}|${currency}|${part}`;
  let id = worldIds.get(name);
  if (id === undefined) {
    id = `LedgerAccount:${nameUuid(name)}`;
    // A bound on a long-lived process's memory: the ids are recomputed after a clear.
    if (worldIds.size >= WORLD_IDS_MAX) worldIds.clear();
    worldIds.set(name, id);
  }
  return id;
}

/**
 * World account ids by name: each is a SHA-256 (nameUuid), and a settlement batch asked for
 * one per payment, a sixth of the settlement's CPU (issue 35). A platform has
 * WORLD_ACCOUNT_PARTS per currency, so the map stays small; the bound is for many platforms.
 */
const worldIds = new Map<string, string>();
const WORLD_IDS_MAX = 10_000;

/** The part of the world account a movement with this key uses (see WORLD_ACCOUNT_PARTS). */
export function worldPartOf(spread: string): number {
  return createHash('sha256').update(spread).digest().readUInt32BE(0) % WORLD_ACCOUNT_PARTS;
}

/**
 * The platform's 'outside world' account in a currency, opened when missing: the other
 * side of every deposit and payout (funding = world −x, customer +x). It may go negative:
 * minus its balance (summed over its parts) is what came in from outside, net of what went
 * out. With `spread` (the id of the payment or movement), the part that key falls on; without, part 0.
 */
export async function ensureWorldAccount(db: Db, platformId: string, currency: string, at: string, spread?: string): Promise<string> {
  const id = worldAccountId(platformId, currency, spread === undefined ? 0 : worldPartOf(spread));
  await insertBalanceRows(db, [
    { account_id: id, platform_id: platformId, kind: 'WORLD', currency, allow_negative: 1, available: 0, pending: 0, held: 0, version: 0, created_at: at, updated_at: at },
  ]);
  return id;
}

/**
 * The platform's world accounts for many movements at once (one statement): per movement,
 * the part its `spread` key falls on in its currency, opened when missing. Answers the ids in
 * the movements' order.
 */
export async function ensureWorldAccounts(db: Db, platformId: string, movements: ReadonlyArray<{ currency: string; spread: string }>, at: string): Promise<string[]> {
  const ids = movements.map((m) => worldAccountId(platformId, m.currency, worldPartOf(m.spread)));
  const rows = new Map<string, BalanceRow>();
  movements.forEach((m, i) => {
    const id = ids[i]!;
    if (!rows.has(id)) rows.set(id, { account_id: id, platform_id: platformId, kind: 'WORLD', currency: m.currency, allow_negative: 1, available: 0, pending: 0, held: 0, version: 0, created_at: at, updated_at: at });
  });
  await insertBalanceRows(db, [...rows.values()]);
  return ids;
}

/** The id of a platform's clearing account in a currency (fixed: no lookup needed). */
export function clearingAccountId(platformId: string, currency: string): string {
  return `LedgerAccount:${nameUuid(`clearing|${platformId}|${currency}`)}`;
}

/**
 * The platform's clearing account in a currency, opened when missing: money that arrived
 * from outside for one payment (real-time funding) waits here, held, until the payment
 * settles or is refunded to the sender. It never goes negative.
 */
export async function ensureClearingAccount(db: Db, platformId: string, currency: string, at: string): Promise<string> {
  const id = clearingAccountId(platformId, currency);
  await insertBalanceRows(db, [
    { account_id: id, platform_id: platformId, kind: 'CLEARING', currency, allow_negative: 0, available: 0, pending: 0, held: 0, version: 0, created_at: at, updated_at: at },
  ]);
  return id;
}

// ---- Posting --------------------------------------------------------------------------

function normalise(input: EntryInput): Array<Required<Posting>> {
  if (input.postings.length < 2) throw new LedgerError('INVALID_POSTING', 'A ledger entry needs at least two postings');
  const sums = new Map<string, number>();
  const out = input.postings.map((p, i) => {
    const bucket = p.bucket ?? 'available';
    if (!BUCKETS.includes(bucket)) throw new LedgerError('INVALID_POSTING', `Posting ${i}: unknown bucket ${String(bucket)}`);
    if (!Number.isSafeInteger(p.amount) || p.amount === 0) throw new LedgerError('INVALID_POSTING', `Posting ${i}: amount must be a non-zero safe integer of minor units, got ${p.amount}`);
    if (!findCurrency(p.currency)) throw new LedgerError('INVALID_POSTING', `Posting ${i}: unknown currency ${p.currency}`);
    sums.set(p.currency, (sums.get(p.currency) ?? 0) + p.amount);
    return { accountId: p.accountId, currency: p.currency, amount: p.amount, bucket };
  });
  const off = [...sums].filter(([, s]) => s !== 0);
  if (off.length > 0) throw new UnbalancedEntryError(Object.fromEntries(off));
  return out;
}

function balanceOf(row: BalanceRow): Balance {
  const available = Number(row.available);
  const pending = Number(row.pending);
  const held = Number(row.held);
  return { accountId: row.account_id, currency: row.currency, available, pending, held, total: available + pending + held };
}

/** The entry row an input makes (a new id; the entry's own columns). */
function newEntryRow(platformId: string, input: EntryInput): EntryRow {
  return {
    id: newId('LedgerEntry'),
    platform_id: platformId,
    kind: input.kind,
    reference_id: input.referenceId ?? null,
    related_entry_id: input.relatedEntryId ?? null,
    idempotency_key: input.idempotencyKey ?? null,
    memo: input.memo ?? null,
    created_at: input.at,
  };
}

/**
 * Post one journal entry inside the caller's transaction: check that it sums to zero per
 * currency, lock the balance rows it touches, refuse it (InsufficientFundsError, nothing
 * written) when an internal account's bucket would go below zero, then write the entry,
 * its postings and the new balances. The caller commits, together with whatever else the
 * money movement changes (transaction rows, events).
 */
export async function postEntry(trx: Transaction<DB>, store: Pick<Store, 'kind'>, input: EntryInput): Promise<PostedEntry> {
  afterNoLateMove(trx);
  const postings = normalise(input);

  // Net change per account and bucket.
  const deltas = new Map<string, Record<Bucket, number>>();
  for (const p of postings) {
    const d = deltas.get(p.accountId) ?? { available: 0, pending: 0, held: 0 };
    d[p.bucket] += p.amount;
    deltas.set(p.accountId, d);
  }
  const ids = [...deltas.keys()].sort();
  // One account (a hold: its available into its held) and nothing to replay: moved in one
  // statement, checks included, before the entry is written (postOnOneAccount).
  if (ids.length === 1 && (input.idempotencyKey === undefined || input.keyIsNew) && postings.every((p) => p.currency === postings[0]!.currency)) {
    return postOnOneAccount(trx, store, input, postings, ids[0]!, deltas.get(ids[0]!)!);
  }
  const rows = await lockBalanceRows(trx, input.platformId, ids, store.kind === 'postgres');
  const byId = new Map(rows.map((r) => [r.account_id, r]));
  // After the lock: a concurrent entry with the same key (same accounts) has committed by now.
  if (input.idempotencyKey !== undefined && !input.keyIsNew) {
    const existing = await findEntryByIdempotencyKey(trx, input.platformId, input.idempotencyKey);
    if (existing) return replay(trx, existing);
  }

  // Every check before the first write: a refused entry leaves no trace.
  const next = checkedBalances(input.platformId, postings, ids, byId, deltas);

  const entry = await writeEntry(trx, input, postings);
  const balances: Balance[] = [];
  for (const id of ids) {
    const row = byId.get(id)!;
    const v = next.get(id)!;
    if (!(await updateBalanceRow(trx, id, Number(row.version), { ...v, updated_at: input.at }))) {
      throw new LedgerError('CONCURRENT_UPDATE', `Balance of ${id} changed under its lock`);
    }
    balances.push({ accountId: id, currency: row.currency, ...v, total: v.available + v.pending + v.held });
  }
  return postedView(entry, postings, balances, false);
}

/**
 * The balances after `deltas` (per account id of `ids`), or the LedgerError that refuses
 * them: an account unknown to the platform (in `byId`), a posting in another currency than
 * its account's, a bucket leaving the safe integer range, or an internal account's bucket
 * lowered below zero (InsufficientFundsError).
 */
function checkedBalances(platformId: string, postings: Required<Posting>[], ids: string[], byId: Map<string, BalanceRow>, deltas: Map<string, Record<Bucket, number>>): Map<string, Record<Bucket, number>> {
  for (const p of postings) {
    const row = byId.get(p.accountId);
    // Another platform's account is as unknown as one that does not exist.
    if (!row) throw new LedgerError('UNKNOWN_ACCOUNT', `Ledger account ${p.accountId} does not exist on platform ${platformId}`);
    if (row.currency !== p.currency) throw new LedgerError('CURRENCY_MISMATCH', `Ledger account ${p.accountId} holds ${row.currency}, not ${p.currency}`);
  }
  const next = new Map<string, Record<Bucket, number>>();
  for (const id of ids) {
    const row = byId.get(id)!;
    const d = deltas.get(id)!;
    const values = { available: Number(row.available) + d.available, pending: Number(row.pending) + d.pending, held: Number(row.held) + d.held };
    for (const b of BUCKETS) {
      if (!Number.isSafeInteger(values[b])) throw new LedgerError('INVALID_POSTING', `Balance of ${id} ${b} would leave the safe integer range`);
      if (row.allow_negative !== 1 && d[b] < 0 && values[b] < 0) throw new InsufficientFundsError(id, row.currency, b, Number(row[b]), d[b]);
    }
    next.set(id, values);
  }
  return next;
}

/** The entry's row and its postings' rows, written. */
async function writeEntry(trx: Transaction<DB>, input: EntryInput, postings: Required<Posting>[]): Promise<EntryRow> {
  const entry = newEntryRow(input.platformId, input);
  await insertEntry(trx, entry);
  await insertPostings(
    trx,
    postings.map((p, line) => ({
      entry_id: entry.id,
      line,
      account_id: p.accountId,
      currency: p.currency,
      bucket: p.bucket,
      amount: p.amount,
    })),
  );
  return entry;
}

/**
 * postEntry for an entry on one account with nothing to replay (issue 35): the balance row is
 * moved first, in one statement that makes postEntry's checks itself (moveBalanceRow), instead
 * of a locking read, the checks here and a write. On PostgreSQL the row stays locked from that
 * statement to the commit, so a payer's hold keeps other payments from the same account
 * waiting one round trip less. Refused (no row moved, nothing written): the row is read again
 * to tell which check, with the same LedgerError postEntry throws.
 */
async function postOnOneAccount(trx: Transaction<DB>, store: Pick<Store, 'kind'>, input: EntryInput, postings: Required<Posting>[], accountId: string, delta: Record<Bucket, number>): Promise<PostedEntry> {
  const currency = postings[0]!.currency;
  if (input.balancesForEventsOnly === true && store.kind === 'postgres' && lateMoveAllowed(trx) && collectingEvents(trx)) {
    // PostgreSQL: the move goes with the commit (kernel/db/late-move.ts); its figures are
    // stand-ins that only the account's balance event shows, filled in as it is written. A
    // refused move fails the commit and the effect runs again, moving the row here at once.
    holdLateMove(trx, { ...moveBalanceStatement(trx, input.platformId, accountId, currency, delta, input.at), resourceId: accountId });
    const entry = await writeEntry(trx, input, postings);
    const [available, total] = LATE_VALUES;
    return postedView(entry, postings, [{ accountId, currency, available, pending: 0, held: 0, total }], false);
  }
  const moved = await moveBalanceRow(trx, input.platformId, accountId, currency, delta, input.at);
  if (!moved) {
    const rows = await lockBalanceRows(trx, input.platformId, [accountId], store.kind === 'postgres');
    checkedBalances(input.platformId, postings, [accountId], new Map(rows.map((r) => [r.account_id, r])), new Map([[accountId, delta]]));
    throw new LedgerError('CONCURRENT_UPDATE', `Balance of ${accountId} refused a move its checks allow`);
  }
  const entry = await writeEntry(trx, input, postings);
  const balance: Balance = { accountId, currency, ...moved, total: moved.available + moved.pending + moved.held };
  return postedView(entry, postings, [balance], false);
}

/**
 * A balance read or moved after a move that waits for the commit (kernel/db/late-move.ts)
 * would not see it: the transaction runs again with every move sent at once instead.
 */
function afterNoLateMove(trx: Transaction<DB>): void {
  if (hasLateMove(trx)) throw new LateMoveRetry();
}

/**
 * Post many journal entries of one platform at once, in the caller's transaction, with the
 * outcome of posting them one after the other with postEntry: each checked (sums, accounts,
 * currencies, no internal bucket below zero after the entries before it), each with its own
 * id (in order) and the balances after it. Set-based: one statement locks every balance row
 * they touch, one inserts the entries, one their postings, one writes each row's final
 * values. An entry whose idempotency key names an existing entry is not replayed here:
 * nothing is written and a LedgerError is thrown (the caller posts one at a time instead),
 * as for any refused entry.
 */
export async function postEntries(trx: Transaction<DB>, store: Pick<Store, 'kind'>, platformId: string, inputs: EntryInput[]): Promise<PostedEntry[]> {
  afterNoLateMove(trx);
  if (inputs.length === 0) return [];
  const all = inputs.map((input) => {
    if (input.platformId !== platformId) throw new LedgerError('INVALID_POSTING', 'postEntries takes the entries of one platform');
    return normalise(input);
  });
  // The keys first, before the balance rows are locked (the lock is held to the commit): a
  // key can only be taken by an entry this one would replay, which the caller rules out; two
  // such entries at once meet the keys' unique index instead.
  const keys = inputs.map((i) => i.idempotencyKey).filter((k): k is string => k !== undefined);
  if (new Set(keys).size !== keys.length || (await entriesWithIdempotencyKeys(trx, platformId, keys)).length > 0) {
    throw new LedgerError('INVALID_POSTING', 'An idempotency key of the batch names an entry already (post it alone)');
  }
  const ids = [...new Set(all.flatMap((ps) => ps.map((p) => p.accountId)))].sort();
  const rows = await lockBalanceRows(trx, platformId, ids, store.kind === 'postgres');
  const byId = new Map(rows.map((r) => [r.account_id, r]));
  // The running balances, entry after entry, with the same checks as postEntry.
  const current = new Map<string, Record<Bucket, number>>(rows.map((r) => [r.account_id, { available: Number(r.available), pending: Number(r.pending), held: Number(r.held) }]));
  const entriesPerAccount = new Map<string, number>();
  const entries: EntryRow[] = [];
  const posted: PostedEntry[] = [];
  inputs.forEach((input, n) => {
    const postings = all[n]!;
    const deltas = new Map<string, Record<Bucket, number>>();
    for (const p of postings) {
      const row = byId.get(p.accountId);
      if (!row) throw new LedgerError('UNKNOWN_ACCOUNT', `Ledger account ${p.accountId} does not exist on platform ${platformId}`);
      if (row.currency !== p.currency) throw new LedgerError('CURRENCY_MISMATCH', `Ledger account ${p.accountId} holds ${row.currency}, not ${p.currency}`);
      const d = deltas.get(p.accountId) ?? { available: 0, pending: 0, held: 0 };
      d[p.bucket] += p.amount;
      deltas.set(p.accountId, d);
    }
    const touched = [...deltas.keys()].sort();
    const balances: Balance[] = [];
    for (const id of touched) {
      const row = byId.get(id)!;
      const before = current.get(id)!;
      const d = deltas.get(id)!;
      const values = { available: before.available + d.available, pending: before.pending + d.pending, held: before.held + d.held };
      for (const b of BUCKETS) {
        if (!Number.isSafeInteger(values[b])) throw new LedgerError('INVALID_POSTING', `Balance of ${id} ${b} would leave the safe integer range`);
        if (row.allow_negative !== 1 && d[b] < 0 && values[b] < 0) throw new InsufficientFundsError(id, row.currency, b, before[b], d[b]);
      }
      current.set(id, values);
      entriesPerAccount.set(id, (entriesPerAccount.get(id) ?? 0) + 1);
      balances.push({ accountId: id, currency: row.currency, ...values, total: values.available + values.pending + values.held });
    }
    const entry = newEntryRow(platformId, input);
    entries.push(entry);
    posted.push(postedView(entry, postings, balances, false));
  });
  await insertEntries(trx, entries);
  await insertPostings(
    trx,
    posted.flatMap((e) => e.postings.map((p, line) => ({ entry_id: e.id, line, account_id: p.accountId, currency: p.currency, bucket: p.bucket, amount: p.amount }))),
  );
  const moved = [...entriesPerAccount].map(([accountId, entries]) => ({ accountId, entries, ...current.get(accountId)! }));
  const at = inputs[inputs.length - 1]!.at;
  if ((await updateBalanceRows(trx, moved, at)) !== moved.length) throw new LedgerError('CONCURRENT_UPDATE', 'A balance row changed under its lock');
  return posted;
}

async function replay(db: Db, entry: EntryRow): Promise<PostedEntry> {
  const rows = await postingsOfEntry(db, entry.id);
  const postings = rows.map((r: PostingRow) => ({ accountId: r.account_id, currency: r.currency, amount: Number(r.amount), bucket: r.bucket as Bucket }));
  const current = await balancesOf(db, [...new Set(postings.map((p) => p.accountId))]);
  return postedView(entry, postings, [...current.values()], true);
}

function postedView(entry: EntryRow, postings: PostedEntry['postings'], balances: Balance[], replayed: boolean): PostedEntry {
  return {
    id: entry.id,
    platformId: entry.platform_id,
    kind: entry.kind,
    referenceId: entry.reference_id,
    relatedEntryId: entry.related_entry_id,
    createdAt: entry.created_at,
    postings,
    balances,
    replayed,
  };
}

/** Current balances of these ledger accounts; an account without a balance row is absent (read it as zero). */
export async function balancesOf(db: Db, accountIds: string[]): Promise<Map<string, Balance>> {
  if (db.isTransaction) afterNoLateMove(db as Transaction<DB>);
  const rows = await selectBalanceRows(db, [...new Set(accountIds)]);
  return new Map(rows.map((r) => [r.account_id, balanceOf(r)]));
}

/**
 * The ledger's invariant for these accounts: each balance row equals the sum of its
 * postings, bucket by bucket. Returns the accounts where it does not hold (empty: sound).
 */
export async function auditBalances(db: Db, accountIds: string[]): Promise<Array<{ accountId: string; bucket: Bucket; balance: number; postings: number }>> {
  const balances = await balancesOf(db, accountIds);
  const totals = await postingTotals(db, accountIds);
  const sum = (id: string, b: Bucket) => totals.filter((t) => t.account_id === id && t.bucket === b).reduce((s, t) => s + t.total, 0);
  const out: Array<{ accountId: string; bucket: Bucket; balance: number; postings: number }> = [];
  for (const id of accountIds) {
    const bal = balances.get(id);
    for (const b of BUCKETS) {
      const have = bal ? bal[b] : 0;
      const want = sum(id, b);
      if (have !== want) out.push({ accountId: id, bucket: b, balance: have, postings: want });
    }
  }
  return out;
}
