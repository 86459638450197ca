import { type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import type { CardRevealsTable, CardsTable, CardTransactionsTable, DB } from '../../kernel/db/schema.js';

// The cards area's SQL: cards, card transactions and the reveal audit trail. Every query
// filters on the platform: another platform's card is as unknown as a missing one.

type Db = Kysely<DB> | Transaction<DB>;
export type CardRow = Selectable<CardsTable>;
export type CardTxRow = Selectable<CardTransactionsTable>;

export async function insertCard(db: Db, row: CardRow): Promise<void> {
  await db.insertInto('cards').values(row).execute();
}

export async function findCard(db: Db, platformId: string, id: string): Promise<CardRow | undefined> {
  return db.selectFrom('cards').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

/** The card, locked until the transaction ends on PostgreSQL (SQLite: the transaction is the lock). */
export async function findCardForUpdate(trx: Transaction<DB>, platformId: string, id: string, postgres: boolean): Promise<CardRow | undefined> {
  let q = trx.selectFrom('cards').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (postgres) q = q.forUpdate();
  return q.executeTakeFirst();
}

export async function updateCard(db: Db, id: string, patch: Partial<Omit<CardRow, 'id' | 'platform_id' | 'created_at'>>): Promise<void> {
  await db.updateTable('cards').set(patch).where('id', '=', id).execute();
}

export interface CardFilter {
  cardholderId?: string | undefined;
  accountId?: string | undefined;
  platformCardId?: string | undefined;
  state?: string | undefined;
}

/** The platform's cards matching the filter (no select: for paginate). */
export function cardQuery(db: Kysely<DB>, platformId: string, f: CardFilter) {
  let q = db.selectFrom('cards').where('platform_id', '=', platformId);
  if (f.cardholderId !== undefined) q = q.where('customer_id', '=', f.cardholderId);
  if (f.platformCardId !== undefined) q = q.where('platform_card_id', '=', f.platformCardId);
  if (f.state !== undefined) q = q.where('state', '=', f.state);
  // funding_sources is a JSON array of ids: an id is a quoted element. LIKE wildcards in the
  // filter are escaped so they match themselves.
  if (f.accountId !== undefined) {
    const pattern = `%${JSON.stringify(f.accountId).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q = q.where(sql<boolean>`funding_sources like ${pattern} escape '\\'`);
  }
  return q;
}

export async function insertCardTx(db: Db, row: CardTxRow): Promise<void> {
  await db.insertInto('card_transactions').values(row).execute();
}

export async function findCardTx(db: Db, platformId: string, id: string): Promise<CardTxRow | undefined> {
  return db.selectFrom('card_transactions').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

export async function findCardTxForUpdate(trx: Transaction<DB>, platformId: string, id: string, postgres: boolean): Promise<CardTxRow | undefined> {
  let q = trx.selectFrom('card_transactions').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (postgres) q = q.forUpdate();
  return q.executeTakeFirst();
}

export async function updateCardTx(db: Db, id: string, patch: Partial<Omit<CardTxRow, 'id' | 'platform_id' | 'created_at'>>): Promise<void> {
  await db.updateTable('card_transactions').set(patch).where('id', '=', id).execute();
}

/** A card's transactions (no select: for paginate). */
export function cardTxQuery(db: Kysely<DB>, platformId: string, cardId: string, status?: string) {
  let q = db.selectFrom('card_transactions').where('platform_id', '=', platformId).where('card_id', '=', cardId);
  if (status !== undefined) q = q.where('status', '=', status);
  return q;
}

/**
 * The platform's card transactions for GET /transactions?type=CARD (no select: for paginate).
 * The filters that mean something for a card transaction apply: the cardholder (customerId,
 * platformCustomerId), the funding account (accountIdentifier, senderAccountIdentifier: a debit
 * is sent from it; receiverAccountIdentifier: a credit is received by it), the status and the
 * creation time; a reconciliation reference names no card transaction, so it matches none.
 */
export function platformCardTxQuery(
  db: Kysely<DB>,
  platformId: string,
  f: { customerId?: string | undefined; platformCustomerId?: string | undefined; accountIdentifier?: string | undefined; senderAccountIdentifier?: string | undefined; receiverAccountIdentifier?: string | undefined; reference?: string | undefined; status?: string | undefined; createdAfter?: string | undefined; createdBefore?: string | undefined },
) {
  let q = db.selectFrom('card_transactions').where('platform_id', '=', platformId);
  if (f.customerId !== undefined) q = q.where('customer_id', '=', f.customerId);
  if (f.platformCustomerId !== undefined) q = q.where('platform_customer_id', '=', f.platformCustomerId);
  if (f.accountIdentifier !== undefined) q = q.where('account_id', '=', f.accountIdentifier);
  if (f.senderAccountIdentifier !== undefined) q = q.where('account_id', '=', f.senderAccountIdentifier).where('direction', '=', 'DEBIT');
  if (f.receiverAccountIdentifier !== undefined) q = q.where('account_id', '=', f.receiverAccountIdentifier).where('direction', '=', 'CREDIT');
  if (f.reference !== undefined) q = q.where(sql<boolean>`1 = 0`);
  if (f.status !== undefined) q = q.where('status', '=', f.status);
  if (f.createdAfter !== undefined) q = q.where('created_at', '>=', f.createdAfter);
  if (f.createdBefore !== undefined) q = q.where('created_at', '<=', f.createdBefore);
  return q;
}

/** The card's transactions still open (authorized and not fully cleared), oldest first. */
export async function openCardTxs(db: Db, platformId: string, cardId: string): Promise<CardTxRow[]> {
  return db
    .selectFrom('card_transactions')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('card_id', '=', cardId)
    .where('status', 'in', ['AUTHORIZED', 'PARTIALLY_SETTLED'])
    .orderBy('id', 'asc')
    .execute();
}

export async function insertReveal(db: Db, row: Selectable<CardRevealsTable>): Promise<void> {
  await db.insertInto('card_reveals').values(row).execute();
}
