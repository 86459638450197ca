import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { literalLimit } from '../../src/kernel/db/limit.js';
import { forgetRowShapes, readRows, shapeOf, type RawCapableStatement } from '../../src/kernel/db/row-shape.js';
import { freshStore } from '../helpers.js';

// SQLite rows are read in raw mode and built with one object shape per statement
// (src/kernel/db/row-shape.ts), and LIMITs are written into the SQL (src/kernel/db/limit.ts).
// Both must answer exactly what the plain driver did.

const stmtOf = (db: Database.Database, text: string) => db.prepare(text) as unknown as RawCapableStatement & Database.Statement;

describe('rows of one shape per statement', () => {
  it('has the keys, order and values of better-sqlite3’s own rows, for every type and for joins with repeated names', () => {
    const db = new Database(':memory:');
    db.exec(`create table a (id text primary key, n integer, r real, b blob, t text, z text)`);
    db.exec(`create table c (id text primary key, a_id text, n integer)`);
    db.prepare('insert into a values (?, ?, ?, ?, ?, ?)').run('a1', 2 ** 40, 1.5, Buffer.from([1, 2, 3]), 'ünïcode "q"', null);
    db.prepare('insert into a values (?, ?, ?, ?, ?, ?)').run('a2', -1, 0, null, '', 'x');
    db.prepare('insert into c values (?, ?, ?)').run('c1', 'a1', 7);
    for (const text of ['select * from a order by id', 'select a.*, c.* from a left join c on c.a_id = a.id order by a.id', 'select n as "we""ird key", t as "with space" from a order by id', 'select * from a where id = ?']) {
      const params = text.includes('?') ? ['a2'] : [];
      const plain = db.prepare(text).all(...params);
      const shaped = readRows(stmtOf(db, text), params);
      expect(shaped).toEqual(plain);
      expect(shaped.map((r) => Object.keys(r as object))).toEqual(plain.map((r) => Object.keys(r as object)));
    }
    // Twice through the same statement: the shape is reused and the statement left in object mode.
    const s = stmtOf(db, 'select id, n from a order by id');
    expect(readRows(s, [])).toEqual(readRows(s, []));
    expect(s.all()).toEqual([
      { id: 'a1', n: 2 ** 40 },
      { id: 'a2', n: -1 },
    ]);
  });

  it('never lets a column named __proto__ set a row’s prototype', () => {
    const made = shapeOf(['id', '__proto__']).make([1, 'x']) as Record<string, unknown>;
    expect(Object.getPrototypeOf(made)).toBe(Object.prototype);
    expect(Object.keys(made)).toEqual(['id', '__proto__']);
    const db = new Database(':memory:');
    const rows = readRows(stmtOf(db, `select 1 as id, 'x' as "__proto__"`), []);
    expect(Object.getPrototypeOf(rows[0])).toBe(Object.prototype);
    // (better-sqlite3's own row assigns it, which drops a non-object value; here it is kept.)
    expect(Object.getOwnPropertyDescriptor(rows[0], '__proto__')?.value).toBe('x');
    expect((rows[0] as { id: number }).id).toBe(1);
  });

  it('follows a schema change: after forgetRowShapes, and when a row is wider than the shape it had', () => {
    const db = new Database(':memory:');
    db.exec('create table t (a integer)');
    db.exec('insert into t values (1)');
    const s = stmtOf(db, 'select * from t');
    expect(readRows(s, [])).toEqual([{ a: 1 }]);
    // Another connection's DDL: the statement is recompiled by SQLite, the row gets wider.
    db.exec('alter table t add column b text');
    db.exec(`update t set b = 'new'`);
    expect(readRows(s, [])).toEqual([{ a: 1, b: 'new' }]);
    // Same width, other names: what forgetRowShapes (run on DDL through the store) is for.
    db.exec('alter table t rename column b to c');
    forgetRowShapes();
    expect(readRows(s, [])).toEqual([{ a: 1, c: 'new' }]);
  });

  it('reads through the store the same as before (a transaction row of every column)', async () => {
    const ts = await freshStore();
    try {
      const db = ts.store.db;
      await sql`create table shape_probe (id text primary key, n bigint, t text)`.execute(db);
      await sql`insert into shape_probe values ('p1', 5, 'a'), ('p2', null, null)`.execute(db);
      const rows = (await sql<{ id: string; n: number | string | null; t: string | null }>`select * from shape_probe order by id`.execute(db)).rows;
      expect(rows.map((r) => ({ ...r, n: r.n === null ? null : Number(r.n) }))).toEqual([
        { id: 'p1', n: 5, t: 'a' },
        { id: 'p2', n: null, t: null },
      ]);
      // DDL through the store forgets the shapes: the same text now reads the new column.
      await sql`alter table shape_probe add column extra text`.execute(db);
      const after = (await sql<Record<string, unknown>>`select * from shape_probe order by id`.execute(db)).rows;
      expect(Object.keys(after[0]!)).toEqual(['id', 'n', 't', 'extra']);
      await sql`drop table shape_probe`.execute(db);
    } finally {
      await ts.store.close();
      await ts.drop();
    }
  });
});

describe('literal LIMITs', () => {
  it('writes the count into the SQL and refuses anything but a non-negative safe integer', async () => {
    const ts = await freshStore();
    try {
      const q = ts.store.db.selectFrom('platforms').select('id').limit(literalLimit(21)).compile();
      expect(q.sql).toMatch(/limit 21$/);
      expect(q.parameters).toEqual([]);
      for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) expect(() => literalLimit(bad)).toThrow(RangeError);
      expect(literalLimit(0)).toBeDefined();
    } finally {
      await ts.store.close();
      await ts.drop();
    }
  });
});
