import type { Kysely, Transaction } from 'kysely';
import { storeOf } from './connect.js';
import { preparedInsert } from './prepared.js';
import type { DB } from './schema.js';

// Group commit for single-row inserts that are a request's only write (a lookup's record).
// On SQLite every commit appends the pages it changed to the WAL, a few system calls per
// page, whatever the number of rows: the inserts made until the microtask queue is empty
// (the flush is a tick queued by the first) are written by one multi-row insert in one
// transaction (the requests of a turn run from one callback, kernel/turn-batch.ts, so that
// is the lookups of one turn's batch; a flush on the next turn, as before issue 35's
// batches, cost a lookup about an eighth more CPU: one more turn between its handler and its
// answer), and each caller's promise
// settles when that transaction has committed, so nobody answers before its row is
// durable (as before) and nobody else can see a row its writer has not answered for yet
// (they are read only by id, from that answer). If the grouped insert fails, every row is
// inserted again on its own, so each caller gets its own row's outcome.
// Inside a caller's transaction, and on PostgreSQL (a pool of connections that commit in
// parallel), the row is inserted at once as before.

type Row = Record<string, unknown>;
type Db = Kysely<DB> | Transaction<DB>;

interface Waiting {
  row: Row;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Rows per statement: a group is written in chunks of these sizes (largest first), so there
 * are few distinct statements to prepare and keep, whatever the group's size.
 */
const CHUNKS = [32, 16, 8, 4, 2, 1];

export function groupedInsert<T extends keyof DB & string>(table: T): (db: Db, row: Row) => Promise<void> {
  const insert = preparedInsert(table);
  const queues = new WeakMap<object, Waiting[]>();

  const flush = async (db: Kysely<DB>, queue: Waiting[]): Promise<void> => {
    queues.delete(db);
    const chunks: Waiting[][] = [];
    for (let i = 0; i < queue.length; ) {
      const size = CHUNKS.find((c) => c <= queue.length - i)!;
      chunks.push(queue.slice(i, i + size));
      i += size;
    }
    let ok = false;
    try {
      // One transaction, so one commit, for the whole group.
      await db.transaction().execute(async (trx) => {
        for (const chunk of chunks) await insert(trx, chunk.map((w) => w.row));
      });
      ok = true;
    } catch {
      // One bad row must not fail the others: each again, on its own.
      for (const w of queue) await insert(db, w.row).then(w.resolve, w.reject);
    }
    if (ok) for (const w of queue) w.resolve();
  };

  return (db, row) => {
    if (db.isTransaction || storeOf(db as Kysely<DB>)?.kind !== 'sqlite') return insert(db, row);
    const root = db as Kysely<DB>;
    let queue = queues.get(root);
    if (!queue) {
      const q: Waiting[] = [];
      queue = q;
      queues.set(root, q);
      process.nextTick(() => void flush(root, q));
    }
    const waiting = queue;
    return new Promise<void>((resolve, reject) => waiting.push({ row, resolve, reject }));
  };
}
