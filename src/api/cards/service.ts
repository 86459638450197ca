import { randomBytes, randomInt } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { iso } from '../../kernel/clock.js';
import { apiError, invalidInput, notFound, type FieldError } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import { emitEvent } from '../../kernel/events.js';
import { newId } from '../../kernel/ids.js';
import type { JobContext, JobQueue } from '../../kernel/jobs.js';
import { paginate, type Page } from '../../kernel/pagination.js';
import { openSealed, type Sealer } from '../../kernel/sealed.js';
import { findCustomer } from '../customers/store.js';
import { findAccount } from '../internal-accounts/store.js';
import {
  CARD_ELIGIBLE_CURRENCIES,
  fundingSourceRefusal,
  issuanceOutcome,
  last4OfSuffix,
  REVEAL_TTL_MS,
  suffixOf,
} from '../../sandbox/rules/card-rules.js';
import type { Card, CardCreateRequest, CardListQuery, CardRevealResponse, CardUpdateRequest } from './schemas.js';
import { cardQuery, type CardRow, findCard, findCardForUpdate, insertCard, insertReveal, updateCard } from './store.js';

// Cards: issue against the cardholder's internal accounts, list, get, update (freeze,
// unfreeze, close, funding sources, spending limit) and reveal. The sandbox issuer answers by
// the issuance suffix (src/sandbox/rules/card-rules.ts). Every state change emits CARD.STATE_CHANGE
// and every funding-source update CARD.FUNDING_SOURCE_CHANGE, with the full card, in the
// transaction of the change. docs/cards.md.

type Db = Kysely<DB> | Transaction<DB>;
type Now = { ms: number; at: string };

export interface CardDeps {
  store: Store;
  jobs: JobQueue;
  sealer: Sealer;
}

export const CARD_JOB = 'card';
export type CardJob = { step: 'ACTIVATE'; cardId: string } | { step: 'CONFIRM_PULL'; cardTransactionId: string };

export function cardView(row: CardRow): Card {
  const v: Card = {
    id: row.id,
    cardholderId: row.customer_id,
    platformCardId: row.platform_card_id,
    state: row.state as Card['state'],
    stateReason: (row.state_reason as Card['stateReason']) ?? null,
    brand: row.brand as NonNullable<Card['brand']>,
    form: row.form as Card['form'],
    fundingSources: JSON.parse(row.funding_sources) as string[],
    maxSpendPerTransaction: row.max_spend_per_transaction === null ? null : Number(row.max_spend_per_transaction),
    currency: row.currency,
    processorRef: row.processor_ref,
    issuerRef: row.issuer_ref,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  if (row.last4 !== null) v.last4 = row.last4;
  if (row.exp_month !== null) v.expMonth = Number(row.exp_month);
  if (row.exp_year !== null) v.expYear = Number(row.exp_year);
  return v;
}

export async function requireCard(db: Db, platformId: string, id: string): Promise<CardRow> {
  const row = await findCard(db, platformId, id);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Card', id);
  return row;
}

async function emitCard(trx: Db, platformId: string, at: string, type: 'CARD.STATE_CHANGE' | 'CARD.FUNDING_SOURCE_CHANGE', row: CardRow): Promise<void> {
  await emitEvent(trx, platformId, at, { type, resourceId: row.id, data: cardView(row) });
}

/**
 * Check a funding-source list for a cardholder: each id not refused by the sandbox suffix
 * table (checked first, so the reason names the sandbox rule), an internal account of the
 * cardholder, ACTIVE, in a card-eligible currency, all in one currency (the card's, when it
 * has one). Returns the currency. An unknown id,
 * another customer's or another platform's account all get the same answer.
 */
async function checkFundingSources(db: Db, platformId: string, customerId: string, ids: string[], cardCurrency?: string): Promise<string> {
  let currency = cardCurrency;
  for (const [i, id] of ids.entries()) {
    const refuse = (reason: string, message: string) =>
      apiError(400, 'FUNDING_SOURCE_INELIGIBLE', `fundingSources[${i}] ${id}: ${message}`, { accountId: id, field: `fundingSources.${i}`, reason });
    // The sandbox suffix table first (hosted cards sandbox page): an id ending in 002 or 003 is
    // refused for the sandbox rule it names, whoever's account it is.
    const sandbox = fundingSourceRefusal(id);
    if (sandbox === 'INSUFFICIENT_BALANCE_CHECK') throw refuse(sandbox, 'failed the funding-source balance check (sandbox: the id ends in 002)');
    if (sandbox === 'ACCOUNT_CLOSED') throw refuse(sandbox, 'is closed (sandbox: the id ends in 003)');
    const account = await findAccount(db, platformId, id);
    if (!account || account.customer_id !== customerId) throw refuse('NOT_CARDHOLDER_ACCOUNT', 'is not an internal account of the cardholder');
    if (account.status !== 'ACTIVE') throw refuse('ACCOUNT_CLOSED', 'is closed or not active');
    if (!CARD_ELIGIBLE_CURRENCIES.includes(account.currency)) throw refuse('CURRENCY_NOT_CARD_ELIGIBLE', `is in ${account.currency}, not a card-eligible currency (${CARD_ELIGIBLE_CURRENCIES.join(', ')})`);
    if (currency !== undefined && account.currency !== currency) throw refuse('CURRENCY_MISMATCH', `is in ${account.currency}, not the card currency ${currency}`);
    currency = account.currency;
  }
  return currency!;
}

/** A Luhn-valid 16-digit Visa test PAN ending in last4: the digit before last4 makes the check hold. */
function samplePan(last4: string): string {
  const digits = ['4', ...Array.from({ length: 10 }, () => String(randomInt(10))), '0', ...last4.split('')];
  const luhn = (ds: string[]) =>
    ds
      .slice()
      .reverse()
      .reduce((s, d, i) => {
        let n = Number(d);
        if (i % 2 === 1) {
          n *= 2;
          if (n > 9) n -= 9;
        }
        return s + n;
      }, 0);
  for (let x = 0; x < 10; x++) {
    digits[11] = String(x);
    if (luhn(digits) % 10 === 0) return digits.join('');
  }
  throw new Error('no Luhn digit found');
}

/** The sandbox issuer provisions the card: PAN (sealed), CVV (sealed), last4 from the issuance suffix, expiry 3 years out. */
function provisioned(deps: CardDeps, row: CardRow, now: Now): Partial<CardRow> {
  const last4 = last4OfSuffix(row.issuance_suffix);
  const d = new Date(now.ms);
  return {
    state: 'ACTIVE',
    state_reason: null,
    last4,
    exp_month: d.getUTCMonth() + 1,
    exp_year: d.getUTCFullYear() + 3,
    pan_sealed: deps.sealer.seal(samplePan(last4), `cards.pan:${row.id}`),
    cvv_sealed: deps.sealer.seal(String(randomInt(1000)).padStart(3, '0'), `cards.cvv:${row.id}`),
    updated_at: now.at,
  };
}

export async function issueCard(deps: CardDeps, platformId: string, now: Now, body: CardCreateRequest): Promise<Card> {
  const errors: FieldError[] = [];
  if (body.threeDSecurePassword !== undefined) errors.push({ field: 'threeDSecurePassword', message: 'is not accepted: this card program’s issuer has no static-password factor' });
  if (errors.length > 0) throw invalidInput(errors);
  return deps.store.db.transaction().execute(async (trx) => {
    const customer = await findCustomer(trx, platformId, body.cardholderId);
    if (!customer || customer.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', body.cardholderId, 'cardholderId', customer?.is_deleted === 1);
    if (customer.status !== 'APPROVED') {
      throw apiError(400, 'CARDHOLDER_KYC_NOT_APPROVED', `Cardholder ${customer.id} has KYC status ${customer.status}; a card is issued only to an APPROVED cardholder`, {
        cardholderId: customer.id,
        kycStatus: customer.status,
      });
    }
    const currency = await checkFundingSources(trx, platformId, customer.id, body.fundingSources);
    const id = newId('Card');
    const hex = id.slice(-12);
    const platformCardId = body.platformCardId ?? `card_${id.slice(5).replace(/-/g, '')}`;
    const suffix = suffixOf(body.platformCardId ?? customer.id);
    let row: CardRow = {
      id,
      platform_id: platformId,
      customer_id: customer.id,
      platform_card_id: platformCardId,
      state: 'PROCESSING',
      state_reason: null,
      brand: 'VISA',
      form: body.form,
      currency,
      funding_sources: JSON.stringify(body.fundingSources),
      max_spend_per_transaction: body.maxSpendPerTransaction ?? null,
      last4: null,
      exp_month: null,
      exp_year: null,
      pan_sealed: null,
      cvv_sealed: null,
      issuance_suffix: suffix,
      processor_ref: `card_${hex}`,
      issuer_ref: `sbx_card_${randomBytes(6).toString('hex')}`,
      created_at: now.at,
      updated_at: now.at,
    };
    await insertCard(trx, row);
    const outcome = issuanceOutcome(suffix);
    if (outcome.kind === 'INSTANT_ACTIVATION') {
      const patch = provisioned(deps, row, now);
      await updateCard(trx, id, patch);
      row = { ...row, ...patch };
      await emitCard(trx, platformId, now.at, 'CARD.STATE_CHANGE', row);
    } else if (outcome.kind === 'ISSUER_REJECTED') {
      const patch = { state: 'CLOSED', state_reason: 'ISSUER_REJECTED', updated_at: now.at };
      await updateCard(trx, id, patch);
      row = { ...row, ...patch };
      await emitCard(trx, platformId, now.at, 'CARD.STATE_CHANGE', row);
    } else if (outcome.kind === 'DELAYED_ACTIVATION') {
      const job: CardJob = { step: 'ACTIVATE', cardId: id };
      await deps.jobs.schedule(trx, { platformId, kind: CARD_JOB, payload: job, runAtMs: now.ms + outcome.afterMs, at: now.at });
    }
    return cardView(row);
  });
}

/** The delayed activation (`005`): PROCESSING → ACTIVE with CARD.STATE_CHANGE, unless the card left PROCESSING meanwhile. */
export async function activateCard(deps: CardDeps, trx: Transaction<DB>, platformId: string, cardId: string, now: Now): Promise<void> {
  const row = await findCardForUpdate(trx, platformId, cardId, deps.store.kind === 'postgres');
  if (!row || row.state !== 'PROCESSING') return;
  const patch = provisioned(deps, row, now);
  await updateCard(trx, cardId, patch);
  await emitCard(trx, platformId, now.at, 'CARD.STATE_CHANGE', { ...row, ...patch });
}

export async function listCards(db: Kysely<DB>, platformId: string, q: CardListQuery): Promise<Page<Card>> {
  return paginate<CardRow, Card>(
    cardQuery(db, platformId, { cardholderId: q.cardholderId, accountId: q.accountId, platformCardId: q.platformCardId, state: q.state }),
    'id',
    { limit: q.limit, cursor: q.cursor, order: q.sortOrder },
    cardView,
  );
}

export async function getCard(db: Db, platformId: string, id: string): Promise<Card> {
  return cardView(await requireCard(db, platformId, id));
}

const TRANSITIONS: Record<string, readonly string[]> = { ACTIVE: ['FROZEN', 'CLOSED'], FROZEN: ['ACTIVE', 'CLOSED'] };

/**
 * PATCH /cards/{id}. Closing also reconciles the card's open authorizations to a terminal
 * state (their holds released: `onClose`, given by the card-transactions service).
 */
export async function updateCardById(
  deps: CardDeps,
  platformId: string,
  now: Now,
  id: string,
  body: CardUpdateRequest,
  onClose: (trx: Transaction<DB>, card: CardRow, now: Now) => Promise<void>,
): Promise<Card> {
  const fields = (['state', 'fundingSources', 'maxSpendPerTransaction'] as const).filter((k) => body[k] !== undefined);
  if (fields.length === 0) throw invalidInput([{ field: 'body', message: 'must carry at least one of state, fundingSources, maxSpendPerTransaction' }]);
  if (body.state === 'CLOSED') {
    const errors = fields.filter((f) => f !== 'state').map((f) => ({ field: f, message: 'cannot be combined with state CLOSED' }));
    if (errors.length > 0) throw invalidInput(errors);
  }
  return deps.store.db.transaction().execute(async (trx) => {
    const row = await findCardForUpdate(trx, platformId, id, deps.store.kind === 'postgres');
    if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Card', id);
    if (row.state === 'CLOSED') {
      if (body.state === 'CLOSED') throw apiError(409, 'CARD_ALREADY_CLOSED', `Card ${id} is already CLOSED`, { state: row.state });
      throw apiError(409, 'CARD_NOT_MUTABLE', `Card ${id} is CLOSED: it cannot change`, { state: row.state });
    }
    if (body.state !== undefined && !(TRANSITIONS[row.state] ?? []).includes(body.state)) {
      throw apiError(409, 'INVALID_STATE_TRANSITION', `Card ${id} cannot go from ${row.state} to ${body.state}`, { from: row.state, to: body.state });
    }
    let next: CardRow = { ...row, updated_at: now.at };
    if (body.fundingSources !== undefined) {
      await checkFundingSources(trx, platformId, row.customer_id, body.fundingSources, row.currency);
      next.funding_sources = JSON.stringify(body.fundingSources);
    }
    if (body.maxSpendPerTransaction !== undefined) next.max_spend_per_transaction = body.maxSpendPerTransaction;
    if (body.state !== undefined) {
      next.state = body.state;
      if (body.state === 'CLOSED') {
        next.state_reason = 'CLOSED_BY_PLATFORM';
        next.funding_sources = '[]';
      }
    }
    await updateCard(trx, id, {
      state: next.state,
      state_reason: next.state_reason,
      funding_sources: next.funding_sources,
      max_spend_per_transaction: next.max_spend_per_transaction,
      updated_at: now.at,
    });
    if (body.state === 'CLOSED') await onClose(trx, next, now);
    if (body.state !== undefined) await emitCard(trx, platformId, now.at, 'CARD.STATE_CHANGE', next);
    if (body.fundingSources !== undefined) await emitCard(trx, platformId, now.at, 'CARD.FUNDING_SOURCE_CHANGE', next);
    next = { ...next };
    return cardView(next);
  });
}

/**
 * POST /cards/{id}/reveal: a signed, short-lived URL of the sandbox reveal page (the token
 * is sealed: card, platform and expiry; nothing of it is stored) and when it expires, nothing
 * else: the PAN and CVV are shown only by that page, never in an API answer (the reference:
 * they "never cross the servers"). Recorded in card_reveals with the token that asked. Only
 * a provisioned, not closed card (ACTIVE or FROZEN) has details to reveal.
 */
export async function revealCard(deps: CardDeps, platformId: string, actor: string, now: Now, id: string, origin: string): Promise<CardRevealResponse> {
  const row = await requireCard(deps.store.db, platformId, id);
  if (row.state !== 'ACTIVE' && row.state !== 'FROZEN') {
    throw apiError(409, 'CONFLICT', `Card ${id} is ${row.state}: only an ACTIVE or FROZEN card can be revealed`, { state: row.state });
  }
  const expiresMs = now.ms + REVEAL_TTL_MS;
  const token = deps.sealer.seal(JSON.stringify({ c: row.id, p: platformId, e: expiresMs }), REVEAL_CONTEXT);
  await insertReveal(deps.store.db, { id: newId('CardReveal'), platform_id: platformId, card_id: row.id, actor, expires_at: iso(expiresMs), created_at: now.at });
  return { panEmbedUrl: `${origin}${REVEAL_PAGE_PATH}?t=${encodeURIComponent(token)}`, expiresAt: iso(expiresMs) };
}

export const REVEAL_PAGE_PATH = '/hosted/cards/reveal';
export const REVEAL_CONTEXT = 'cards.reveal-token';

/** What the reveal page shows for a token, or why it shows nothing. */
export async function revealPageModel(
  db: Kysely<DB>,
  nowMsOf: (platformId: string) => Promise<number>,
  token: string,
): Promise<{ ok: true; pan: string; cvv: string; expMonth: number; expYear: number; last4: string } | { ok: false; status: number; reason: string }> {
  const opened = openSealed(token, REVEAL_CONTEXT);
  if (!opened) return { ok: false, status: 404, reason: 'This link is not valid.' };
  const t = JSON.parse(opened) as { c: string; p: string; e: number };
  if ((await nowMsOf(t.p)) > t.e) return { ok: false, status: 410, reason: 'This link has expired: ask for a new one.' };
  const row = await findCard(db, t.p, t.c);
  if (!row || (row.state !== 'ACTIVE' && row.state !== 'FROZEN') || !row.pan_sealed || !row.cvv_sealed) return { ok: false, status: 410, reason: 'This card can no longer be revealed.' };
  const pan = openSealed(row.pan_sealed, `cards.pan:${row.id}`);
  const cvv = openSealed(row.cvv_sealed, `cards.cvv:${row.id}`);
  if (!pan || !cvv) return { ok: false, status: 410, reason: 'This card can no longer be revealed.' };
  return { ok: true, pan, cvv, expMonth: Number(row.exp_month), expYear: Number(row.exp_year), last4: row.last4 ?? '' };
}

/** The card job's handler (activation; pull confirmations are the card-transactions service's). */
export async function runActivation(deps: CardDeps, ctx: JobContext): Promise<void> {
  const job = ctx.job.payload as CardJob;
  if (job.step !== 'ACTIVATE' || ctx.job.platformId === null) return;
  await activateCard(deps, ctx.trx, ctx.job.platformId, job.cardId, { ms: ctx.nowMs, at: iso(ctx.nowMs) });
}
