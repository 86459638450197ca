import type pgTypes from 'pg';

// PostgreSQL, issue 35: several statements of one transaction written to the server together
// and answered together, one round trip instead of one per statement. node-postgres sends a
// statement and waits for its answer before it writes the next; the connection wrapper
// (connect.ts) knows, for a few statements, that the caller needs no answer in between:
// - a transaction's `begin` is answered by the wrapper at once and written with the
//   transaction's first statement, and so is a `release savepoint` with nothing held before
//   it (which cannot fail) with the statement after it (a job batch's release with its
//   commit);
// - the inserts it holds back (DEFERRED_INSERTS) are written with the `commit` that ends
//   their transaction, or with a statement that cannot carry them as CTEs.
// The steps go out as the extended protocol's messages (Bind, Execute for each; Describe for
// the one whose rows are answered) closed by one Sync. The server runs them in order and, at
// the first that fails, skips the rest up to the Sync: an insert that fails stops the
// `commit` written after it, and the caller gets that error as it would have from the insert
// alone (its transaction is then in error, and the caller's `rollback` ends it). Only the
// answer of the last step is kept (the caller's statement: the `commit`, or the statement
// after `begin`); the others' answers are known (BEGIN, or the row counts already given).
//
// A step with parameters runs as the named prepared statement the connection already has
// (StatementNames): this query never prepares one, since node-postgres records a prepared
// name only for the query it is running, and a Parse that failed in the middle of a pipeline
// would leave the records wrong. The caller sends the steps one by one instead when one is
// not prepared on the connection yet (its first run there prepares it).

/** One statement of a pipeline: its text, its parameters, and the prepared name it runs as (none: no parameters). */
export interface PipelineStep {
  text: string;
  values: readonly unknown[];
  name?: string;
}

type PgConnection = {
  stream: { cork?: () => void; uncork?: () => void };
  parsedStatements: Record<string, string>;
  parse(q: { text: string; name: string; types: number[] }): void;
  bind(c: { portal: string; statement: string; values: unknown[] }): void;
  describe(m: { type: 'P'; name: string }): void;
  execute(c: { portal: string }): void;
  sync(): void;
};

type QueryBase = new (config: { text: string; values?: unknown[]; callback: (err: Error | null, res: unknown) => void }) => {
  handleDataRow(msg: unknown): void;
  handleCommandComplete(msg: unknown, connection: PgConnection): void;
  handleEmptyQuery(connection: PgConnection): void;
};

export type PipelinedQueryClass = new (steps: readonly PipelineStep[], callback: (err: Error | null, res: unknown) => void) => object;

/** Whether every step with parameters is prepared on the client's connection under its name. */
export function preparedOn(client: pgTypes.PoolClient, steps: readonly PipelineStep[]): boolean {
  const parsed = (client as unknown as { connection: PgConnection }).connection.parsedStatements;
  return steps.every((s) => s.values.length === 0 || (s.name !== undefined && parsed[s.name] === s.text));
}

/**
 * The query node-postgres runs for a pipeline (a "submittable": it writes its own messages).
 * Built on node-postgres's own Query, which reads the rows and the answer of the last step.
 */
export function pipelinedQueryClass(pg: typeof pgTypes, prepareValue: (v: unknown) => unknown): PipelinedQueryClass {
  const Query = (pg as unknown as { Query: QueryBase }).Query;
  return class PipelinedQuery extends Query {
    private readonly steps: readonly PipelineStep[];
    private completed = 0;

    constructor(steps: readonly PipelineStep[], callback: (err: Error | null, res: unknown) => void) {
      super({ text: steps[steps.length - 1]!.text, callback });
      this.steps = steps;
    }

    /** Writes every step, then one Sync; an error before anything is written is the query's error. */
    submit(connection: PgConnection): Error | null {
      let values: unknown[][];
      try {
        values = this.steps.map((s) => s.values.map((v) => prepareValue(v)));
      } catch (err) {
        return err as Error;
      }
      const last = this.steps.length - 1;
      connection.stream.cork?.();
      try {
        this.steps.forEach((s, i) => {
          if (s.name === undefined) connection.parse({ text: s.text, name: '', types: [] });
          connection.bind({ portal: '', statement: s.name ?? '', values: values[i]! });
          if (i === last) connection.describe({ type: 'P', name: '' });
          connection.execute({ portal: '' });
        });
        connection.sync();
      } finally {
        connection.stream.uncork?.();
      }
      return null;
    }

    /** Only the last step's rows are the answer (an earlier step's, a `select` written before it, were not described). */
    override handleDataRow(msg: unknown): void {
      if (this.completed === this.steps.length - 1) super.handleDataRow(msg);
    }

    /** Only the last step's completion is the answer. */
    override handleCommandComplete(msg: unknown, connection: PgConnection): void {
      if (this.completed++ === this.steps.length - 1) super.handleCommandComplete(msg, connection);
    }

    override handleEmptyQuery(connection: PgConnection): void {
      this.completed += 1;
      super.handleEmptyQuery(connection);
    }
  };

}

