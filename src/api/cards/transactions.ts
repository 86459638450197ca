import { randomBytes } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { iso } from '../../kernel/clock.js';
import { apiError, notFound } from '../../kernel/errors.js';
import { emitEvent } from '../../kernel/events.js';
import { effectTransaction } from '../../kernel/idempotency.js';
import { newId } from '../../kernel/ids.js';
import type { JobContext } from '../../kernel/jobs.js';
import { currencyAmount } from '../../kernel/money.js';
import { paginate, type Page } from '../../kernel/pagination.js';
import { authorizationOutcome, DELAYED_PULL_MS } from '../../sandbox/rules/card-rules.js';
import { findCustomer } from '../customers/store.js';
import { emitBalanceUpdates } from '../internal-accounts/service.js';
import { ensureWorldAccount, isInsufficientFunds, type Posting, postEntry } from '../ledger/service.js';
import type {
  CardTransaction,
  CardTransactionListQuery,
  SandboxCardAuthorizationAdviceRequest,
  SandboxCardAuthorizationRequest,
  SandboxCardClearingRequest,
  SandboxCardReturnRequest,
  SandboxCardTransactionRefRequest,
} from './schemas.js';
import { CARD_JOB, type CardDeps, type CardJob } from './service.js';
import { type CardRow, type CardTxRow, cardTxQuery, findCardForUpdate, findCardTx, findCardTxForUpdate, insertCardTx, openCardTxs, updateCardTx } from './store.js';

// Card transactions on the ledger (docs/cards.md "Ledger entries"). `C` is the funding
// internal account (the card's first funding source at authorization time), `W` the
// platform's WORLD account in the card currency (the card network's side).
//
//   debit authorization a        CARD_HOLD      C.available −a, C.held +a
//   clearing s ≤ open hold h     CARD_CAPTURE   C.held −s, W +s
//   clearing s > h (over-auth)   CARD_CAPTURE   C.held −h, C.available −(s−h), W +s (the post-hoc pull)
//   clearing 0, expiry, close    CARD_RELEASE   C.held −h, C.available +h
//   return r                     CARD_REFUND    W −r, C.available +r
//   return reversal R            CARD_RETURN_REVERSAL  C.available −R, W +R
//   financial authorization a    CARD_CAPTURE   C.available −a, W +a
//   credit authorization a       CARD_CREDIT_HOLD  W −a, C.pending +a (cleared: C.pending → C.available)
//   financial credit a           CARD_CREDIT    W −a, C.available +a
//
// Each entry names the card transaction (reference_id) and has the idempotency key
// `<kind>:<cardTransactionId>:<n>` (n counts the transaction's entries). The transaction's
// row, its entries, its CARD_TRANSACTION.* event and INTERNAL_ACCOUNT.BALANCE_UPDATED commit
// together. Every change of a card transaction sends `CARD_TRANSACTION.<its status>` with the
// full transaction: a transition, or a change that keeps the status (a partial refund, a
// confirmed pull, a re-sized authorization) sending its status's event again.

type Trx = Transaction<DB>;
type Now = { ms: number; at: string };
/**
 * What a simulator answers (the reference's SandboxCardSimulationResponse): only the issuer's
 * token of the simulated event. Its outcome reaches the platform as the card transaction it
 * makes or changes (CARD_TRANSACTION.* webhooks, GET /cards/{id}/transactions), never in
 * this answer; a decline makes none.
 */
type SimulationResult = { issuerTransactionToken: string };
const accepted = (issuerTransactionToken: string): SimulationResult => ({ issuerTransactionToken });

export type AuthorizationKind = 'AUTHORIZATION' | 'FINANCIAL_AUTHORIZATION' | 'CREDIT_AUTHORIZATION' | 'CREDIT_AUTHORIZATION_ADVICE' | 'FINANCIAL_CREDIT_AUTHORIZATION';
const CREDIT_KINDS: readonly AuthorizationKind[] = ['CREDIT_AUTHORIZATION', 'CREDIT_AUTHORIZATION_ADVICE', 'FINANCIAL_CREDIT_AUTHORIZATION'];
const FINANCIAL_KINDS: readonly AuthorizationKind[] = ['FINANCIAL_AUTHORIZATION', 'FINANCIAL_CREDIT_AUTHORIZATION'];

export function cardTxView(row: CardTxRow): CardTransaction {
  const amount = (n: number | string) => currencyAmount(Number(n), row.currency);
  const v: CardTransaction = {
    type: 'CARD',
    id: row.id,
    cardId: row.card_id,
    customerId: row.customer_id,
    platformCustomerId: row.platform_customer_id,
    issuerTransactionToken: row.issuer_transaction_token,
    status: row.status as CardTransaction['status'],
    direction: row.direction as CardTransaction['direction'],
    kind: row.kind as NonNullable<CardTransaction['kind']>,
    merchant: JSON.parse(row.merchant) as CardTransaction['merchant'],
    authorizedAmount: amount(row.authorized_amount),
    accountId: row.account_id,
    pullSummary: { count: Number(row.pull_count), totalAmount: Number(row.pull_total), pendingCount: Number(row.pull_pending) },
    refundSummary: { count: Number(row.refund_count), totalAmount: Number(row.refunded_amount) },
    settlementSummary: { count: Number(row.settlement_count), totalAmount: Number(row.settled_amount) },
    authorizedAt: row.authorized_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  if (Number(row.settlement_count) > 0 || row.status !== 'AUTHORIZED') v.settledAmount = amount(row.settled_amount);
  if (Number(row.refund_count) > 0) v.refundedAmount = amount(row.refunded_amount);
  if (Number(row.released_amount) > 0) v.releasedAmount = amount(row.released_amount);
  if (row.last_event_at !== null) v.lastEventAt = row.last_event_at;
  return v;
}

async function emitTx(trx: Trx, row: CardTxRow, at: string): Promise<void> {
  await emitEvent(trx, row.platform_id, at, { type: `CARD_TRANSACTION.${row.status}`, resourceId: row.id, data: cardTxView(row) });
}

/** Post one entry of the card transaction (its key counts the transaction's entries). Mutates row.event_count. */
async function post(trx: Trx, deps: CardDeps, row: CardTxRow, kind: string, postings: Posting[], at: string): Promise<void> {
  const n = Number(row.event_count) + 1;
  await postEntry(trx, deps.store, {
    platformId: row.platform_id,
    kind,
    at,
    referenceId: row.id,
    idempotencyKey: `${kind.toLowerCase()}:${row.id}:${n}`,
    memo: `card ${row.card_id}`,
    postings: postings.filter((p) => p.amount !== 0),
  });
  row.event_count = n;
}

const C = (row: CardTxRow, amount: number, bucket: Posting['bucket'] = 'available'): Posting => ({ accountId: row.account_id, currency: row.currency, amount, bucket });
const W = (world: string, row: CardTxRow, amount: number): Posting => ({ accountId: world, currency: row.currency, amount });

async function save(trx: Trx, row: CardTxRow, now: Now): Promise<CardTxRow> {
  row.updated_at = now.at;
  row.last_event_at = now.at;
  const { id: _id, platform_id: _p, created_at: _c, ...patch } = row;
  await updateCardTx(trx, row.id, patch);
  return row;
}

async function requireCardLocked(trx: Trx, deps: CardDeps, platformId: string, cardId: string): Promise<CardRow> {
  const card = await findCardForUpdate(trx, platformId, cardId, deps.store.kind === 'postgres');
  if (!card) throw notFound('REFERENCE_NOT_FOUND', 'Card', cardId);
  return card;
}

async function requireTxLocked(trx: Trx, deps: CardDeps, card: CardRow, id: string): Promise<CardTxRow> {
  const row = await findCardTxForUpdate(trx, card.platform_id, id, deps.store.kind === 'postgres');
  if (!row || row.card_id !== card.id) throw notFound('TRANSACTION_NOT_FOUND', 'Card transaction', id);
  return row;
}

/**
 * A simulator on a transaction in the wrong state. The reference's simulate operations list only
 * 202/400/401/403/404/500, so this is a 400 INVALID_INPUT (the request names a transaction the
 * event cannot apply to), with the transaction's status and the states that would allow it.
 */
function wrongState(row: CardTxRow, what: string, allowed: string[]) {
  return apiError(400, 'INVALID_INPUT', `Card transaction ${row.id} is ${row.status}: ${what} needs ${allowed.join(' or ')}`, {
    field: 'cardTransactionId',
    cardTransactionId: row.id,
    status: row.status,
    allowed,
  });
}

const token = () => `sbx_txn_${randomBytes(12).toString('hex')}`;

/** Authorization decisioning before any money: the card's state, the descriptor, the limit. */
function decide(card: CardRow, descriptor: string, amount: number, debit: boolean): string | undefined {
  if (card.state === 'CLOSED') return 'CARD_CLOSED';
  if (card.state !== 'ACTIVE' && card.state !== 'FROZEN') return 'CARD_NOT_ACTIVE';
  const outcome = authorizationOutcome(descriptor);
  if (card.state === 'FROZEN' || (outcome.kind === 'DECLINE' && outcome.reason === 'CARD_PAUSED')) return 'CARD_PAUSED';
  if (debit && card.max_spend_per_transaction !== null && amount > Number(card.max_spend_per_transaction)) return 'SPENDING_LIMIT_EXCEEDED';
  if (outcome.kind === 'DECLINE') return outcome.reason;
  return undefined;
}

function fundingAccountOf(card: CardRow): string | undefined {
  return (JSON.parse(card.funding_sources) as string[])[0];
}

/**
 * The authorization family: authorization, financial authorization (auth and clearing in
 * one message), credit authorization, credit authorization advice, financial credit
 * authorization. Declined (the card's state, the descriptor's suffix, the spending limit, the
 * funding source's balance): nothing recorded, moved or sent.
 */
export async function simulateAuthorization(deps: CardDeps, platformId: string, now: Now, cardId: string, body: SandboxCardAuthorizationRequest, kind: AuthorizationKind): Promise<SimulationResult> {
  return effectTransaction(deps.store.db, async (trx) => {
    const card = await requireCardLocked(trx, deps, platformId, cardId);
    if (body.currency.code !== card.currency) {
      throw apiError(400, 'INVALID_CURRENCY', `The card transacts in ${card.currency}, not ${body.currency.code}`, { errors: [{ field: 'currency.code', message: `must be the card currency ${card.currency}` }] });
    }
    const credit = CREDIT_KINDS.includes(kind);
    const financial = FINANCIAL_KINDS.includes(kind);
    const issuerTransactionToken = token();
    const reason = decide(card, body.merchant.descriptor, body.amount, !credit);
    if (reason) return accepted(issuerTransactionToken);
    const accountId = fundingAccountOf(card);
    if (!accountId) return accepted(issuerTransactionToken);
    const customer = await findCustomer(trx, platformId, card.customer_id);
    const outcome = authorizationOutcome(body.merchant.descriptor);
    const a = body.amount;
    const row: CardTxRow = {
      id: newId('CardTransaction'),
      platform_id: platformId,
      card_id: card.id,
      customer_id: card.customer_id,
      platform_customer_id: customer?.platform_customer_id ?? card.customer_id,
      account_id: accountId,
      kind,
      direction: credit ? 'CREDIT' : 'DEBIT',
      status: 'AUTHORIZED',
      outcome: outcome.kind === 'DELAYED_PULL' ? 'DELAYED_PULL' : outcome.kind === 'CONFIRMATION_FAILS' ? 'CONFIRMATION_FAILS' : 'APPROVED',
      merchant: JSON.stringify(body.merchant),
      currency: card.currency,
      authorized_amount: a,
      open_amount: a,
      settled_amount: 0,
      refunded_amount: 0,
      released_amount: 0,
      pull_count: credit ? 0 : 1,
      pull_total: credit ? 0 : a,
      pull_pending: !credit && outcome.kind !== 'APPROVED' ? 1 : 0,
      settlement_count: 0,
      refund_count: 0,
      event_count: 0,
      issuer_transaction_token: issuerTransactionToken,
      authorized_at: now.at,
      last_event_at: null,
      created_at: now.at,
      updated_at: now.at,
    };
    const world = await ensureWorldAccount(trx, platformId, card.currency, now.at, row.id);
    // The money first: a debit the funding source cannot cover is declined with nothing written.
    try {
      if (!credit && !financial) await post(trx, deps, row, 'CARD_HOLD', [C(row, -a), C(row, a, 'held')], now.at);
      if (!credit && financial && outcome.kind !== 'CONFIRMATION_FAILS') await post(trx, deps, row, 'CARD_CAPTURE', [C(row, -a), W(world, row, a)], now.at);
    } catch (err) {
      if (isInsufficientFunds(err)) return accepted(issuerTransactionToken);
      throw err;
    }
    if (credit && !financial) await post(trx, deps, row, 'CARD_CREDIT_HOLD', [W(world, row, -a), C(row, a, 'pending')], now.at);
    if (credit && financial) await post(trx, deps, row, 'CARD_CREDIT', [W(world, row, -a), C(row, a)], now.at);
    await insertCardTx(trx, row);
    await emitTx(trx, row, now.at);
    if (financial) {
      // Authorized and cleared in one message.
      row.settled_amount = a;
      row.settlement_count = 1;
      row.open_amount = 0;
      if (!credit && outcome.kind === 'CONFIRMATION_FAILS') {
        // Settled to the network, but the pull's confirmation reports FAILED: nothing collected.
        row.status = 'EXCEPTION';
        row.pull_total = 0;
        row.pull_pending = 0;
      } else {
        row.status = 'SETTLED';
      }
      await save(trx, row, now);
      await emitTx(trx, row, now.at);
    }
    if (!credit && outcome.kind === 'DELAYED_PULL') await schedulePullConfirmation(trx, deps, row, now);
    await emitBalanceUpdates(trx, platformId, [accountId], now.at);
    return accepted(row.issuer_transaction_token);
  });
}

async function schedulePullConfirmation(trx: Trx, deps: CardDeps, row: CardTxRow, now: Now): Promise<void> {
  const job: CardJob = { step: 'CONFIRM_PULL', cardTransactionId: row.id };
  await deps.jobs.schedule(trx, { platformId: row.platform_id, kind: CARD_JOB, payload: job, runAtMs: now.ms + DELAYED_PULL_MS, at: now.at });
}

/** Release what is still open on the transaction (expiry, close): the hold (debit) or the pending credit goes back. */
async function releaseOpen(trx: Trx, deps: CardDeps, row: CardTxRow, now: Now): Promise<void> {
  const h = Number(row.open_amount);
  if (h > 0) {
    if (row.direction === 'DEBIT') {
      await post(trx, deps, row, 'CARD_RELEASE', [C(row, -h, 'held'), C(row, h)], now.at);
    } else {
      const world = await ensureWorldAccount(trx, row.platform_id, row.currency, now.at, row.id);
      await post(trx, deps, row, 'CARD_CREDIT_RELEASE', [C(row, -h, 'pending'), W(world, row, h)], now.at);
    }
  }
  row.released_amount = Number(row.released_amount) + h;
  row.open_amount = 0;
  row.pull_pending = 0;
}

export async function simulateClearing(deps: CardDeps, platformId: string, now: Now, cardId: string, body: SandboxCardClearingRequest): Promise<SimulationResult> {
  return effectTransaction(deps.store.db, async (trx) => {
    const card = await requireCardLocked(trx, deps, platformId, cardId);
    const row = await requireTxLocked(trx, deps, card, body.cardTransactionId);
    if (row.status !== 'AUTHORIZED' && row.status !== 'PARTIALLY_SETTLED') throw wrongState(row, 'a clearing', ['AUTHORIZED', 'PARTIALLY_SETTLED']);
    const s = body.amount;
    const h = Number(row.open_amount);
    const world = await ensureWorldAccount(trx, platformId, row.currency, now.at, row.id);
    if (s === 0) {
      // AUTHORIZATION_EXPIRY: no clearing posted, the rest of the authorization released.
      await releaseOpen(trx, deps, row, now);
      row.status = 'SETTLED';
    } else if (row.direction === 'CREDIT') {
      const extra = Math.max(0, s - h);
      await post(trx, deps, row, 'CARD_CREDIT_SETTLE', [C(row, -Math.min(s, h), 'pending'), W(world, row, -extra), C(row, s)], now.at);
      row.open_amount = Math.max(0, h - s);
      row.settled_amount = Number(row.settled_amount) + s;
      row.settlement_count = Number(row.settlement_count) + 1;
      row.status = Number(row.open_amount) === 0 ? 'SETTLED' : 'PARTIALLY_SETTLED';
    } else if (row.outcome === 'CONFIRMATION_FAILS') {
      // `006`: the network settled, the pull's confirmation reports FAILED: nothing is
      // collected from the funding source (its hold goes back); the loss is the issuer's.
      if (h > 0) await post(trx, deps, row, 'CARD_RELEASE', [C(row, -h, 'held'), C(row, h)], now.at);
      row.pull_total = Math.max(0, Number(row.pull_total) - h);
      row.pull_pending = 0;
      row.open_amount = 0;
      row.settled_amount = Number(row.settled_amount) + s;
      row.settlement_count = Number(row.settlement_count) + 1;
      row.status = 'EXCEPTION';
    } else if (s <= h) {
      await post(trx, deps, row, 'CARD_CAPTURE', [C(row, -s, 'held'), W(world, row, s)], now.at);
      row.open_amount = h - s;
      row.settled_amount = Number(row.settled_amount) + s;
      row.settlement_count = Number(row.settlement_count) + 1;
      row.status = h - s === 0 ? 'SETTLED' : 'PARTIALLY_SETTLED';
    } else {
      // Over-authorization: the hold is captured and the difference pulled post hoc.
      const d = s - h;
      row.pull_count = Number(row.pull_count) + 1;
      row.settled_amount = Number(row.settled_amount) + s;
      row.settlement_count = Number(row.settlement_count) + 1;
      row.open_amount = 0;
      try {
        await post(trx, deps, row, 'CARD_CAPTURE', [C(row, -h, 'held'), C(row, -d), W(world, row, s)], now.at);
        row.pull_total = Number(row.pull_total) + d;
        row.status = 'SETTLED';
        if (row.outcome === 'DELAYED_PULL') {
          row.pull_pending = Number(row.pull_pending) + 1;
          await schedulePullConfirmation(trx, deps, row, now);
        }
      } catch (err) {
        if (!isInsufficientFunds(err)) throw err;
        // The post-hoc pull failed: the hold is captured, the difference is the exception.
        if (h > 0) await post(trx, deps, row, 'CARD_CAPTURE', [C(row, -h, 'held'), W(world, row, h)], now.at);
        row.status = 'EXCEPTION';
      }
    }
    await save(trx, row, now);
    await emitTx(trx, row, now.at);
    await emitBalanceUpdates(trx, platformId, [row.account_id], now.at);
    return accepted(row.issuer_transaction_token);
  });
}

export async function simulateReturn(deps: CardDeps, platformId: string, now: Now, cardId: string, body: SandboxCardReturnRequest): Promise<SimulationResult> {
  return effectTransaction(deps.store.db, async (trx) => {
    const card = await requireCardLocked(trx, deps, platformId, cardId);
    const row = await requireTxLocked(trx, deps, card, body.cardTransactionId);
    if (row.direction !== 'DEBIT' || (row.status !== 'SETTLED' && row.status !== 'PARTIALLY_SETTLED') || Number(row.settled_amount) === 0) {
      throw wrongState(row, 'a return', ['a settled DEBIT transaction (SETTLED or PARTIALLY_SETTLED)']);
    }
    const net = Number(row.settled_amount) - Number(row.refunded_amount);
    if (body.amount > net) {
      throw apiError(400, 'INVALID_AMOUNT', `The return (${body.amount}) exceeds the net settled amount ${net}`, { errors: [{ field: 'amount', message: `must be at most the net settled amount ${net}` }], netSettledAmount: net });
    }
    const world = await ensureWorldAccount(trx, platformId, row.currency, now.at, row.id);
    await post(trx, deps, row, 'CARD_REFUND', [W(world, row, -body.amount), C(row, body.amount)], now.at);
    row.refunded_amount = Number(row.refunded_amount) + body.amount;
    row.refund_count = Number(row.refund_count) + 1;
    if (row.status === 'SETTLED' && Number(row.refunded_amount) === Number(row.settled_amount)) row.status = 'REFUNDED';
    await save(trx, row, now);
    await emitTx(trx, row, now.at);
    await emitBalanceUpdates(trx, platformId, [row.account_id], now.at);
    return accepted(row.issuer_transaction_token);
  });
}

export async function simulateReturnReversal(deps: CardDeps, platformId: string, now: Now, cardId: string, body: SandboxCardTransactionRefRequest): Promise<SimulationResult> {
  return effectTransaction(deps.store.db, async (trx) => {
    const card = await requireCardLocked(trx, deps, platformId, cardId);
    const row = await requireTxLocked(trx, deps, card, body.cardTransactionId);
    if (row.status !== 'REFUNDED') throw wrongState(row, 'a return reversal', ['REFUNDED']);
    const r = Number(row.refunded_amount);
    const world = await ensureWorldAccount(trx, platformId, row.currency, now.at, row.id);
    row.pull_count = Number(row.pull_count) + 1;
    try {
      // The refund is pulled back from the funding source.
      await post(trx, deps, row, 'CARD_RETURN_REVERSAL', [C(row, -r), W(world, row, r)], now.at);
      row.refunded_amount = 0;
      row.status = 'SETTLED';
    } catch (err) {
      if (!isInsufficientFunds(err)) throw err;
      row.status = 'EXCEPTION';
    }
    await save(trx, row, now);
    await emitTx(trx, row, now.at);
    await emitBalanceUpdates(trx, platformId, [row.account_id], now.at);
    return accepted(row.issuer_transaction_token);
  });
}

/** AUTHORIZATION_ADVICE: re-size the open authorization to a new total. */
export async function simulateAuthorizationAdvice(deps: CardDeps, platformId: string, now: Now, cardId: string, body: SandboxCardAuthorizationAdviceRequest): Promise<SimulationResult> {
  return effectTransaction(deps.store.db, async (trx) => {
    const card = await requireCardLocked(trx, deps, platformId, cardId);
    const row = await requireTxLocked(trx, deps, card, body.cardTransactionId);
    if (row.status !== 'AUTHORIZED' && row.status !== 'PARTIALLY_SETTLED') throw wrongState(row, 'an authorization advice', ['AUTHORIZED', 'PARTIALLY_SETTLED']);
    const settled = Number(row.settled_amount);
    if (body.amount < settled) {
      throw apiError(400, 'INVALID_AMOUNT', `The new total (${body.amount}) is below what already settled (${settled})`, { errors: [{ field: 'amount', message: `must be at least the settled amount ${settled}` }] });
    }
    const target = body.amount - settled;
    const delta = target - Number(row.open_amount);
    const world = await ensureWorldAccount(trx, platformId, row.currency, now.at, row.id);
    if (row.direction === 'DEBIT' && delta > 0) {
      try {
        await post(trx, deps, row, 'CARD_HOLD', [C(row, -delta), C(row, delta, 'held')], now.at);
      } catch (err) {
        if (isInsufficientFunds(err)) return accepted(row.issuer_transaction_token); // declined: the authorization keeps its size
        throw err;
      }
      row.pull_count = Number(row.pull_count) + 1;
      row.pull_total = Number(row.pull_total) + delta;
    } else if (row.direction === 'DEBIT' && delta < 0) {
      await post(trx, deps, row, 'CARD_RELEASE', [C(row, delta, 'held'), C(row, -delta)], now.at);
      row.released_amount = Number(row.released_amount) - delta;
    } else if (delta > 0) {
      await post(trx, deps, row, 'CARD_CREDIT_HOLD', [W(world, row, -delta), C(row, delta, 'pending')], now.at);
    } else if (delta < 0) {
      await post(trx, deps, row, 'CARD_CREDIT_RELEASE', [C(row, delta, 'pending'), W(world, row, -delta)], now.at);
      row.released_amount = Number(row.released_amount) - delta;
    }
    row.authorized_amount = body.amount;
    row.open_amount = target;
    if (target === 0 && Number(row.settlement_count) > 0) row.status = 'SETTLED';
    await save(trx, row, now);
    await emitTx(trx, row, now.at);
    await emitBalanceUpdates(trx, platformId, [row.account_id], now.at);
    return accepted(row.issuer_transaction_token);
  });
}

/**
 * BALANCE_INQUIRY: a 0-amount authorization; nothing is recorded, moved or sent, approved or
 * declined, so the answer (the event's token) is all there is of it.
 */
export async function simulateBalanceInquiry(deps: CardDeps, platformId: string, cardId: string): Promise<SimulationResult> {
  await findCardTxCard(deps.store.db, platformId, cardId);
  return accepted(token());
}

async function findCardTxCard(db: Kysely<DB>, platformId: string, cardId: string): Promise<CardRow> {
  const card = await db.selectFrom('cards').selectAll().where('platform_id', '=', platformId).where('id', '=', cardId).executeTakeFirst();
  if (!card) throw notFound('REFERENCE_NOT_FOUND', 'Card', cardId);
  return card;
}

/** Closing a card reconciles its open transactions to a terminal state: what is still open is released (SETTLED). */
export async function closeOpenTransactions(trx: Trx, deps: CardDeps, card: CardRow, now: Now): Promise<void> {
  const touched = new Set<string>();
  for (const row of await openCardTxs(trx, card.platform_id, card.id)) {
    await releaseOpen(trx, deps, row, now);
    row.status = 'SETTLED';
    await save(trx, row, now);
    await emitTx(trx, row, now.at);
    touched.add(row.account_id);
  }
  if (touched.size > 0) await emitBalanceUpdates(trx, card.platform_id, [...touched], now.at);
}

/** The delayed pull's confirmation (`005`): PENDING → CONFIRMED, and the transaction's event again. */
export async function runPullConfirmation(deps: CardDeps, ctx: JobContext): Promise<void> {
  const job = ctx.job.payload as CardJob;
  if (job.step !== 'CONFIRM_PULL' || ctx.job.platformId === null) return;
  const row = await findCardTxForUpdate(ctx.trx, ctx.job.platformId, job.cardTransactionId, deps.store.kind === 'postgres');
  if (!row || Number(row.pull_pending) === 0) return;
  const now = { ms: ctx.nowMs, at: iso(ctx.nowMs) };
  row.pull_pending = Number(row.pull_pending) - 1;
  await save(ctx.trx, row, now);
  await emitTx(ctx.trx, row, now.at);
}

export async function listCardTransactions(db: Kysely<DB>, platformId: string, cardId: string, q: CardTransactionListQuery): Promise<Page<CardTransaction>> {
  await findCardTxCard(db, platformId, cardId);
  return paginate<CardTxRow, CardTransaction>(cardTxQuery(db, platformId, cardId, q.status), 'id', { limit: q.limit, cursor: q.cursor, order: q.sortOrder }, cardTxView);
}

export async function getCardTransaction(db: Kysely<DB>, platformId: string, cardId: string, id: string): Promise<CardTransaction> {
  await findCardTxCard(db, platformId, cardId);
  const row = await findCardTx(db, platformId, id);
  if (!row || row.card_id !== cardId) throw notFound('TRANSACTION_NOT_FOUND', 'Card transaction', id);
  return cardTxView(row);
}
