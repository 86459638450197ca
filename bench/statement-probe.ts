import Database from 'better-sqlite3';
import pg from 'pg';

// Every statement this process sends, seen at the two drivers: each run of a (cached)
// better-sqlite3 statement and each node-postgres `query`. Used by bench/statements.ts (the
// statements per flow) and by tests that count one kind of statement (the job worker's
// claims: test/areas/settlement-wakeups.test.ts). Installed once, on the first listener.

type Listener = (text: unknown) => void;
const listeners: Listener[] = [];

/** Call `listener` with the SQL text of every statement sent from now on. */
export function onStatement(listener: Listener): void {
  if (listeners.length === 0) install();
  listeners.push(listener);
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
      return orig.apply(this, args);
    };
  }
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const a = args[0] as string | { text?: string } | undefined;
    seen(typeof a === 'string' ? a : a?.text);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
}
