import type { Kysely, Transaction } from 'kysely';
import { currencyView, findCurrency } from '../../kernel/currencies.js';
import type { ChangeWatch } from '../../kernel/db/change-watch.js';
import { storeOf } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, type FieldError, invalidInput, notFound } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import { idPattern, isIdOf } from '../../kernel/ids.js';
import { corridorOf, mergePayerDataFields, type PayerDataField } from '../../sandbox/rules/corridors.js';
import { type CachedRate, RATE_CACHE_TTL_MS, sendingBounds } from '../../sandbox/rules/fx.js';
import { parseUmaAddress, UMA_ADDRESS_PATTERN, type UmaBehaviour } from '../../sandbox/rules/uma.js';
import { type CustomerRow, findCustomer, findCustomerByUmaAddress } from '../customers/store.js';
import { pairRate, platformFee } from '../exchange-rates/service.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type { CurrencyPreference, ReceiverLookupResponse } from './schemas.js';
import { COUNTER_LIMIT, counterStart, lookupIdOf, lookupIdParts, newAnswerKey } from './ids.js';
import { findLookup as findLookupRow, findLookupAnswer, insertLookupAnswer, type LookupAnswerRow, lookupAnswerExists, type LookupRow } from './store.js';

// The logic both receiver lookups share (GET /receiver/uma/{address} and
// GET /receiver/external-account/{accountId}): checking the sender query, resolving the
// sender (a customer of the calling platform) and its sending currency, pricing every
// receiving currency with bounds on both sides, and recording the lookup for the quote.
//
// A lookup route: (1) collects its own field errors plus lookupQueryErrors() and throws them
// with throwLookupFieldErrors(); (2) resolves its receiver (404 …) and the receiving
// currencies; (3) calls performLookup().

type Db = Kysely<DB> | Transaction<DB>;

export interface LookupQuery {
  senderUmaAddress?: string | undefined;
  customerId?: string | undefined;
  sendingCurrency?: string | undefined;
}

/** Problems with the query: `invalid` are INVALID_INPUT, `umaAddress` are INVALID_UMA_ADDRESS. */
export interface LookupFieldErrors {
  invalid: FieldError[];
  umaAddress: FieldError[];
}

/** Field problems of the sender query, without touching the store. */
export function lookupQueryErrors(q: LookupQuery): LookupFieldErrors {
  const out: LookupFieldErrors = { invalid: [], umaAddress: [] };
  if (q.senderUmaAddress === undefined && q.customerId === undefined) {
    const message = 'is required: give senderUmaAddress or customerId (or both)';
    out.invalid.push({ field: 'senderUmaAddress', message }, { field: 'customerId', message });
  }
  if (q.senderUmaAddress !== undefined && !parseUmaAddress(q.senderUmaAddress)) out.umaAddress.push(umaAddressError('senderUmaAddress'));
  if (q.customerId !== undefined && !isIdOf('Customer', q.customerId)) {
    out.invalid.push({ field: 'customerId', constraint: { pattern: idPattern('Customer') }, message: 'must be a customer id: Customer:<uuid>' });
  }
  if (q.sendingCurrency !== undefined && !findCurrency(q.sendingCurrency)) {
    out.invalid.push({ field: 'sendingCurrency', constraint: { format: 'iso4217' }, message: 'must be a known currency code (ISO 4217, or a crypto ticker)' });
  }
  return out;
}

/** The field error of a malformed UMA address field. */
export function umaAddressError(field: string): FieldError {
  return { field, constraint: { pattern: UMA_ADDRESS_PATTERN }, message: 'must be a UMA address: $name@domain' };
}

/**
 * Throw every field problem in one 400: INVALID_INPUT when any is not about a UMA address
 * (all listed), else INVALID_UMA_ADDRESS (with the same details.errors shape).
 */
export function throwLookupFieldErrors(e: LookupFieldErrors): void {
  if (e.invalid.length > 0) throw invalidInput([...e.umaAddress, ...e.invalid]);
  if (e.umaAddress.length > 0) {
    const fields = e.umaAddress.map((x) => x.field);
    throw apiError(400, 'INVALID_UMA_ADDRESS', `Not a UMA address ($name@domain): ${fields.join(', ')}`, { errors: e.umaAddress });
  }
}

export interface LookupSender {
  customer: CustomerRow;
  /** The sender's currencies, default first. */
  currencies: string[];
  sendingCurrency: string;
}

/**
 * The sender: a customer of `platformId` named by customerId and/or senderUmaAddress (both
 * must name the same customer), and the currency it sends from: `sendingCurrency` when it is
 * one of the customer's currencies (else 400 INVALID_CURRENCY), by default its first.
 * Unknown or deleted customer: 404 USER_NOT_FOUND. Call after lookupQueryErrors passed.
 */
export async function resolveSender(db: Db, platformId: string, q: LookupQuery): Promise<LookupSender> {
  let customer: CustomerRow | undefined;
  if (q.customerId !== undefined) {
    customer = await findCustomer(db, platformId, q.customerId);
    if (!customer || customer.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', q.customerId, 'customerId', customer?.is_deleted === 1);
    if (q.senderUmaAddress !== undefined && customer.uma_address.toLowerCase() !== q.senderUmaAddress.trim().toLowerCase()) {
      throw invalidInput([{ field: 'senderUmaAddress', message: `is not the UMA address of customer ${q.customerId}` }]);
    }
  } else if (q.senderUmaAddress !== undefined) {
    const address = q.senderUmaAddress.trim();
    customer = (await findCustomerByUmaAddress(db, address)) ?? (await findCustomerByUmaAddress(db, address.toLowerCase()));
    if (!customer || customer.platform_id !== platformId) {
      throw apiError(404, 'USER_NOT_FOUND', `No customer of this platform has the UMA address ${address}`, { field: 'senderUmaAddress' });
    }
  }
  if (!customer) throw new Error('resolveSender called without senderUmaAddress or customerId');
  const currencies = JSON.parse(customer.currencies) as string[];
  let sendingCurrency = currencies[0];
  if (q.sendingCurrency !== undefined) {
    if (!currencies.includes(q.sendingCurrency)) {
      throw apiError(400, 'INVALID_CURRENCY', `The sender ${customer.id} does not hold ${q.sendingCurrency}; its currencies: ${currencies.join(', ') || 'none'}`, {
        errors: [{ field: 'sendingCurrency', constraint: { enum: currencies }, message: `must be one of the sender's currencies: ${currencies.join(', ')}` }],
      });
    }
    sendingCurrency = q.sendingCurrency;
  }
  if (sendingCurrency === undefined) throw apiError(400, 'INVALID_CURRENCY', `The sender ${customer.id} holds no currency to send from`, { field: 'sendingCurrency' });
  return { customer, currencies, sendingCurrency };
}

/**
 * A currency the receiver can take. `min`/`max` (smallest unit) narrow the sandbox corridor's
 * bounds, e.g. the receiving platform's own limits; `requiredPayerDataFields` add to the
 * corridor's.
 */
export interface ReceivingCurrency {
  currency: string;
  min?: number | undefined;
  max?: number | undefined;
  requiredPayerDataFields?: readonly PayerDataField[] | undefined;
}

/**
 * Price every receiving currency from `sendingCurrency` at the platform's cached rate:
 * estimatedExchangeRate (units of the receiving currency per unit of the sending one),
 * receiving bounds (the corridor's, narrowed by the caller's), and sending bounds with the
 * platform's fee (minSendingAmount delivers at least min, maxSendingAmount at most max;
 * omitted when unresolvable). Currencies without a sandbox corridor, or whose bounds do
 * not overlap, are left out. Order is the receiver's.
 */
export async function supportedCurrenciesFor(
  db: Db,
  platformId: string,
  nowMs: number,
  sendingCurrency: string,
  receiving: readonly ReceivingCurrency[],
): Promise<CurrencyPreference[]> {
  const fee = await platformFee(db, platformId, sendingCurrency);
  const out: CurrencyPreference[] = [];
  const seen = new Set<string>();
  for (const r of receiving) {
    if (seen.has(r.currency)) continue;
    seen.add(r.currency);
    const corridor = corridorOf(r.currency);
    if (!corridor) continue;
    const min = Math.max(corridor.min, r.min !== undefined && r.min > 0 ? r.min : 0);
    const max = Math.min(corridor.max, r.max !== undefined && r.max > 0 ? r.max : corridor.max);
    if (min > max) continue;
    const cached = pairRate(platformId, sendingCurrency, r.currency, nowMs, fee);
    let byBounds = pricedOf.get(cached);
    if (!byBounds) pricedOf.set(cached, (byBounds = new Map()));
    const bounds = `${min}:${max}`;
    let pref = byBounds.get(bounds);
    if (!pref) {
      const p: CurrencyPreference = { currency: currencyView(r.currency), estimatedExchangeRate: cached.rate.rate, min, max };
      const b = sendingBounds(min, max, sendingCurrency, r.currency, cached.rate.exact, cached.fee);
      if (b.minSendingAmount !== null) p.minSendingAmount = b.minSendingAmount;
      if (b.maxSendingAmount !== null) p.maxSendingAmount = b.maxSendingAmount;
      byBounds.set(bounds, (pref = Object.freeze(p)));
    }
    out.push(pref);
  }
  return out;
}

/**
 * Prices already worked out, per cached rate entry (fx.ts cachedRate: one pair, one rate and
 * fee, replaced by a new entry when either changes or its time is up) and receiving bounds:
 * a currency's price is a function of exactly those, so the BigInt arithmetic of
 * sendingBounds runs once per entry, not on every lookup (issue 35). Frozen: shared.
 */
const pricedOf = new WeakMap<CachedRate, Map<string, Readonly<CurrencyPreference>>>();

/** JSON.stringify(prefs), each preference's text made once (they are shared: see pricedOf). */
function quotedJson(prefs: readonly CurrencyPreference[]): string {
  let out = '[';
  for (let i = 0; i < prefs.length; i++) {
    const p = prefs[i]!;
    let text = prefText.get(p);
    if (text === undefined) {
      text = JSON.stringify(p);
      if (Object.isFrozen(p)) prefText.set(p, text);
    }
    out += i === 0 ? text : `,${text}`;
  }
  return `${out}]`;
}

const prefText = new WeakMap<CurrencyPreference, string>();

/** Who receives, as recorded with the lookup (the quotes read it). */
export type LookupReceiver =
  | { kind: 'SANDBOX_UMA'; address: string; behaviour: UmaBehaviour; failure?: { status: number; code: string; stage: string } }
  | { kind: 'CUSTOMER'; platformId: string; customerId: string; address: string }
  | { kind: 'EXTERNAL_ACCOUNT'; accountId: string; [k: string]: unknown };

export interface PerformLookupInput {
  kind: 'UMA' | 'EXTERNAL_ACCOUNT';
  /** The UMA address as given, or the external account id. */
  target: string;
  /** The query, already checked with lookupQueryErrors. */
  query: LookupQuery;
  receiving: readonly ReceivingCurrency[];
  /** Payer data the receiving institution asks for beyond the corridors'. */
  requiredPayerDataFields?: readonly PayerDataField[] | undefined;
  receiver?: LookupReceiver | undefined;
  /** Refuse a receiver that is the sender (400 SELF_PAYMENT). */
  receiverCustomerId?: string | undefined;
  /** The sender when the caller resolved it already (resolveSender); else resolved here. */
  sender?: LookupSender | undefined;
}

/**
 * The whole lookup after the receiver is known: resolve the sender, price the receiving
 * currencies, merge the payer data fields (the corridors' and the caller's), store the
 * lookup and answer ReceiverLookupResponse (the caller adds receiverUmaAddress or accountId).
 */
export async function performLookup(
  db: Db,
  platform: PlatformRow,
  now: { ms: number; at: string },
  input: PerformLookupInput,
): Promise<ReceiverLookupResponse> {
  const sender = input.sender ?? (await resolveSender(db, platform.id, input.query));
  if (input.receiverCustomerId !== undefined && input.receiverCustomerId === sender.customer.id) {
    throw apiError(400, 'SELF_PAYMENT', `The sender ${sender.customer.id} cannot pay itself`, { customerId: sender.customer.id });
  }
  const supportedCurrencies = await supportedCurrenciesFor(db, platform.id, now.ms, sender.sendingCurrency, input.receiving);
  const offered = new Set(supportedCurrencies.map((c) => c.currency.code));
  const fields = mergePayerDataFields([
    ...input.receiving.filter((r) => offered.has(r.currency)).flatMap((r) => [corridorOf(r.currency)?.requiredPayerDataFields, r.requiredPayerDataFields]),
    input.requiredPayerDataFields,
  ]);
  const lookupId = await recordLookup(db, now, {
    platform_id: platform.id,
    kind: input.kind,
    target: input.target,
    customer_id: sender.customer.id,
    sending_currency: sender.sendingCurrency,
    quoted: quotedJson(supportedCurrencies),
    required_payer_data_fields: fields.length > 0 ? JSON.stringify(fields) : null,
    receiver: input.receiver ? JSON.stringify(input.receiver) : null,
  });
  const out: ReceiverLookupResponse = { sendingCurrency: currencyView(sender.sendingCurrency), supportedCurrencies, lookupId };
  if (fields.length > 0) out.requiredPayerDataFields = fields as ReceiverLookupResponse['requiredPayerDataFields'];
  return out;
}

type Answer = Omit<LookupAnswerRow, 'key' | 'created_at'>;

/** An answer this process stored, reused by the identical lookups after it. */
interface KnownAnswer {
  key: string;
  /** The counter of the next lookup id (lookups/ids.ts). */
  next: number;
  /** While its row is being inserted: settles once committed (or failed). */
  storing: Promise<void> | null;
  /** The store's change watch's version when the row was last seen there (-1: read it again). */
  seenAt: number;
}

/** Per store (its Kysely adapter): the change watch of lookup_answers, and the answers this process stored, by content. */
interface KnownAnswers {
  watch: ChangeWatch | null;
  byContent: Map<string, KnownAnswer>;
}

const knownAnswers = new WeakMap<object, KnownAnswers>();
/** Answers remembered per store at most (all forgotten at once beyond). */
const KNOWN_ANSWERS_MAX = 10_000;

function knownAnswersOf(db: Kysely<DB>): KnownAnswers {
  const adapter = db.getExecutor().adapter;
  let known = knownAnswers.get(adapter);
  if (!known) knownAnswers.set(adapter, (known = { watch: storeOf(db)?.watch?.(['lookup_answers']) ?? null, byContent: new Map() }));
  return known;
}

/**
 * Record a lookup and mint its id (issue 35). Identical lookups (same platform, receiver,
 * sender, currency, prices, payer data fields) answer the same, and a quote reads back only
 * that answer and the lookup's time: the answer is stored once (lookup_answers) and each
 * lookup's id carries its own time and the answer's key (lookups/ids.ts). An answer this
 * process stored is reused while its row is still there: a sandbox reset, a snapshot's
 * restore or a platform's deletion may have removed it, from any process, so it is read
 * again (by primary key) unless the store's change watch says that nothing may have
 * deleted it since it was last seen (on SQLite: no delete through this store, no commit of
 * another connection; on PostgreSQL, whose watch is not notified of this table, it is read
 * every time). A new answer is inserted, and every lookup waits for its commit before
 * answering (a 2xx means the record is durable, and visible to every process). Inside a
 * caller's transaction the answer is stored for that lookup only, as its commit is the
 * caller's.
 */
async function recordLookup(db: Db, now: { ms: number; at: string }, answer: Answer): Promise<string> {
  if (db.isTransaction) {
    const key = newAnswerKey();
    await insertLookupAnswer(db, { ...answer, key, created_at: now.at });
    return lookupIdOf(now.ms, counterStart(), key);
  }
  const known = knownAnswersOf(db as Kysely<DB>);
  const content = `${answer.platform_id}\n${answer.kind}\n${answer.target}\n${answer.customer_id}\n${answer.sending_currency}\n${answer.quoted}\n${answer.required_payer_data_fields ?? ''}\n${answer.receiver ?? ''}`;
  let a = known.byContent.get(content);
  if (a) {
    if (a.storing) await a.storing;
    else {
      const version = known.watch ? known.watch.version() : -1;
      if (version === -1 || version !== a.seenAt) {
        if (await lookupAnswerExists(db, a.key)) a.seenAt = version;
        else {
          if (known.byContent.get(content) === a) known.byContent.delete(content);
          a = undefined;
        }
      }
    }
  }
  if (!a) a = await storeAnswer(db, known.byContent, content, answer, now.at);
  const n = a.next;
  a.next += 1;
  if (a.next >= COUNTER_LIMIT && known.byContent.get(content) === a) known.byContent.delete(content);
  return lookupIdOf(now.ms, n, a.key);
}

/** Insert a new answer (a second key if the first was taken) and remember it once committed. */
async function storeAnswer(db: Db, known: Map<string, KnownAnswer>, content: string, answer: Answer, at: string): Promise<KnownAnswer> {
  // Seen at -1: the first reuse reads it (a write counted between its commit and now is not missed).
  const a: KnownAnswer = { key: newAnswerKey(), next: counterStart(), storing: null, seenAt: -1 };
  const insert = async (): Promise<void> => {
    try {
      await insertLookupAnswer(db, { ...answer, key: a.key, created_at: at });
    } catch (err) {
      // 40 random bits: a key already taken is unlikely, but not an error of the lookup's.
      if (!(await lookupAnswerExists(db, a.key).catch(() => false))) throw err;
      a.key = newAnswerKey();
      await insertLookupAnswer(db, { ...answer, key: a.key, created_at: at });
    }
  };
  a.storing = insert();
  if (known.size >= KNOWN_ANSWERS_MAX) known.clear();
  known.set(content, a);
  try {
    await a.storing;
  } catch (err) {
    if (known.get(content) === a) known.delete(content);
    throw err;
  }
  a.storing = null;
  return a;
}

/** A stored lookup, parsed. */
export interface StoredLookup {
  id: string;
  platformId: string;
  kind: 'UMA' | 'EXTERNAL_ACCOUNT';
  target: string;
  customerId: string;
  sendingCurrency: string;
  supportedCurrencies: CurrencyPreference[];
  requiredPayerDataFields: PayerDataField[];
  receiver: LookupReceiver | null;
  createdAt: string;
}

function storedView(row: LookupRow): StoredLookup {
  return {
    id: row.id,
    platformId: row.platform_id,
    kind: row.kind as StoredLookup['kind'],
    target: row.target,
    customerId: row.customer_id,
    sendingCurrency: row.sending_currency,
    supportedCurrencies: JSON.parse(row.quoted) as CurrencyPreference[],
    requiredPayerDataFields: row.required_payer_data_fields ? (JSON.parse(row.required_payer_data_fields) as PayerDataField[]) : [],
    receiver: row.receiver ? (JSON.parse(row.receiver) as LookupReceiver) : null,
    createdAt: row.created_at,
  };
}

/** A lookup of the platform for a quote: unknown (or another platform's) → 404 LOOKUP_REQUEST_NOT_FOUND. */
export async function getLookup(db: Db, platformId: string, lookupId: string): Promise<StoredLookup> {
  if (isIdOf('Lookup', lookupId)) {
    const { ms, key } = lookupIdParts(lookupId);
    const answer = await findLookupAnswer(db, platformId, key);
    if (answer) return storedView({ ...answer, id: lookupId, created_at: new Date(ms).toISOString() });
    // A lookup recorded before migration 0040, one row each.
    const row = await findLookupRow(db, platformId, lookupId);
    if (row) return storedView(row);
  }
  throw notFound('LOOKUP_REQUEST_NOT_FOUND', 'Lookup', lookupId);
}

/**
 * How long a lookup may be named by a quote, on the platform's clock: as long as the rates it
 * showed are cached (RATE_CACHE_TTL_MS, the specification's "about 5 minutes"), which is also
 * a quote's own lifetime (docs/decisions.md).
 */
export const LOOKUP_TTL_MS = RATE_CACHE_TTL_MS;

/**
 * A lookup a quote may name at `nowMs`: the platform's (else 404 LOOKUP_REQUEST_NOT_FOUND) and
 * not expired (else 400 INVALID_INPUT on `lookupId`: look the receiver up again).
 */
export async function usableLookup(db: Db, platformId: string, lookupId: string, nowMs: number): Promise<StoredLookup> {
  const lookup = await getLookup(db, platformId, lookupId);
  const expiresAtMs = Date.parse(lookup.createdAt) + LOOKUP_TTL_MS;
  if (nowMs >= expiresAtMs) {
    throw invalidInput([{ field: 'lookupId', message: `expired at ${new Date(expiresAtMs).toISOString()} (a lookup is usable for ${LOOKUP_TTL_MS / 60_000} minutes): look the receiver up again` }]);
  }
  return lookup;
}
