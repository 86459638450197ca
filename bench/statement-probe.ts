import Database from 'better-sqlite3';
import pg from 'pg';

// Every statement this process sends, seen at the two drivers: each run of a (cached)
// better-sqlite3 statement and each node-postgres `query`. Used by bench/statements.ts (the
// statements per flow) and by tests that count one kind of statement (the job worker's
// claims: test/areas/settlement-wakeups.test.ts). Installed once, on the first listener.
// `onSqliteStatementTime` also times each SQLite run (bench/statements.ts TIME=1).

type Listener = (text: unknown) => void;
type TimedListener = (text: unknown, ns: number) => void;
const listeners: Listener[] = [];
const timed: TimedListener[] = [];

/** Call `listener` with the SQL text of every statement sent from now on. */
export function onStatement(listener: Listener): void {
  if (listeners.length === 0 && timed.length === 0) install();
  listeners.push(listener);
}

/**
 * Call `listener` with the SQL text of every SQLite statement run from now on and the
 * nanoseconds its run took (better-sqlite3 runs synchronously, so that is the statement's
 * time on this thread; node-postgres's queries are not timed).
 */
export function onSqliteStatementTime(listener: TimedListener): void {
  if (listeners.length === 0 && timed.length === 0) install();
  timed.push(listener);
}

function seen(text: unknown): void {
  for (const l of listeners) l(text);
}

function install(): void {
  // better-sqlite3's Statement prototype, from a statement of a throwaway database.
  const probe = new Database(':memory:');
  const Statement = Object.getPrototypeOf(probe.prepare('select 1')) as Record<string, (...a: unknown[]) => unknown>;
  probe.close();
  for (const m of ['run', 'get', 'all', 'iterate']) {
    const orig = Statement[m]!;
    Statement[m] = function (this: { source?: string }, ...args: unknown[]) {
      seen(this.source);
      if (timed.length === 0) return orig.apply(this, args);
      const start = process.hrtime.bigint();
      try {
        return orig.apply(this, args);
      } finally {
        const ns = Number(process.hrtime.bigint() - start);
        for (const l of timed) l(this.source, ns);
      }
    };
  }
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const a = args[0] as string | { text?: string } | undefined;
    seen(typeof a === 'string' ? a : a?.text);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
}
