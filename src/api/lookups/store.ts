import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, LookupAnswersTable, LookupsTable } from '../../kernel/db/schema.js';
import { groupedInsert } from '../../kernel/db/grouped-insert.js';
import { prepared } from '../../kernel/db/prepared.js';

// The lookup answers (migration 0040_lookup_answers: one row per distinct answer, shared by
// identical lookups) and the lookups table (migration 0005_lookups: one row per lookup, the
// ids minted before 0040; only read now).

export type { LookupAnswersTable, LookupsTable };
export type LookupRow = Selectable<LookupsTable>;
export type LookupAnswerRow = Selectable<LookupAnswersTable>;
type Db = Kysely<DB> | Transaction<DB>;

/**
 * Record an answer. Outside a transaction on SQLite the inserts of one event-loop turn are
 * committed together (kernel/db/grouped-insert.ts); it resolves once the row is committed.
 */
export async function insertLookupAnswer(db: Db, row: LookupAnswerRow): Promise<void> {
  await insertAnswer(db, row);
}

const insertAnswer = groupedInsert('lookup_answers');

const answerExists = prepared<{ key: string }, { key: string }>((db, p) => db.selectFrom('lookup_answers').select('key').where('key', '=', p('key')));

/** Whether the answer `key` is (still) stored: a sandbox reset or a snapshot's restore may have deleted it. */
export async function lookupAnswerExists(db: Db, key: string): Promise<boolean> {
  return (await answerExists.first(db, { key })) !== undefined;
}

const answerOf = prepared<{ platformId: string; key: string }, LookupAnswerRow>((db, p) =>
  db.selectFrom('lookup_answers').selectAll().where('key', '=', p('key')).where('platform_id', '=', p('platformId')),
);

/** An answer of the platform; another platform's key finds nothing. */
export async function findLookupAnswer(db: Db, platformId: string, key: string): Promise<LookupAnswerRow | undefined> {
  return answerOf.first(db, { platformId, key });
}

/** A lookup of the platform recorded before migration 0040; another platform's id finds nothing. */
export async function findLookup(db: Db, platformId: string, id: string): Promise<LookupRow | undefined> {
  return db.selectFrom('lookups').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}
