import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { onSqliteStatementTime, onStatement } from '../../bench/statement-probe.js';

// bench/statement-probe.ts: what bench/statements.ts counts and (TIME=1) times. Both kinds
// of listener see every SQLite statement run, with its SQL; the timed one also gets how long
// the run took, and a statement that throws is still seen and timed. No duration is asserted
// beyond its being a number of nanoseconds. Driver-level, so once per suite.
const STORE = process.env.TEST_STORE ?? 'sqlite';

describe.skipIf(STORE !== 'sqlite')('statement probe', () => {
  it('reports each SQLite statement to the counting and the timing listeners, failures included', () => {
    const counted: string[] = [];
    const timedRuns: Array<{ text: string; ns: number }> = [];
    onStatement((text) => counted.push(String(text)));
    onSqliteStatementTime((text, ns) => timedRuns.push({ text: String(text), ns }));
    const db = new Database(':memory:');
    try {
      db.prepare('create table probe_t (n integer primary key)').run();
      db.prepare('insert into probe_t (n) values (?)').run(7);
      expect(db.prepare('select n from probe_t').get()).toEqual({ n: 7 });
      expect(db.prepare('select n from probe_t order by n').all()).toEqual([{ n: 7 }]);
      expect(() => db.prepare('insert into probe_t (n) values (?)').run(7)).toThrow(/UNIQUE/);
    } finally {
      db.close();
    }
    const texts = [
      'create table probe_t (n integer primary key)',
      'insert into probe_t (n) values (?)',
      'select n from probe_t',
      'select n from probe_t order by n',
      'insert into probe_t (n) values (?)',
    ];
    expect(counted.filter((t) => t.includes('probe_t'))).toEqual(texts);
    const mine = timedRuns.filter((r) => r.text.includes('probe_t'));
    expect(mine.map((r) => r.text)).toEqual(texts);
    for (const r of mine) {
      expect(Number.isInteger(r.ns)).toBe(true);
      expect(r.ns).toBeGreaterThan(0);
    }
  });
});
