import type { Compilable, CompiledQuery, Kysely, QueryResult, RootOperationNode, Selectable, Transaction } from 'kysely';
import type { DB } from './schema.js';

// Prepared queries for the hot paths. Building a Kysely query and compiling it to SQL costs
// more than running it on SQLite (tens of microseconds for a select with a join and a few
// aliased columns). A prepared query is built and compiled once per dialect with named
// placeholders, then run with fresh values: the same SQL text every time, so the SQLite
// store's statement cache (connect.ts) also reuses its prepared statement.
//
//   const byId = prepared<{ platformId: string; id: string }, CustomerRow>((db, p) =>
//     db.selectFrom('customers').selectAll().where('platform_id', '=', p('platformId')).where('id', '=', p('id')));
//   const row = await byId.first(db, { platformId, id });
//
// The builder runs on the real Kysely instance, so the SQL is exactly what the builder
// would produce on each call. A placeholder may stand only where Kysely passes the value
// through as one bound parameter (a comparison, an inserted or updated value, a limit); not
// inside an `in` list, a JSON value, a `like` pattern built in JavaScript, and never where
// an `undefined` would make Kysely leave the column out. Constant values in the builder
// stay bound parameters too. An `undefined` value is bound as NULL.

type Db = Kysely<DB> | Transaction<DB>;

/** The placeholder of a named value while the query is built (typed loosely on purpose). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Placeholder<P> = (name: keyof P & string) => any;

interface Template {
  sql: string;
  query: RootOperationNode;
  /** Per bound parameter: the name of the value, or a constant of the builder. */
  slots: Array<{ name: string } | { value: unknown }>;
  /** The slots' names joined with '\n' when every slot is a named value, else null. */
  names: string | null;
}

const MARK = '\u0000kysely-prepared:';

export interface Prepared<P, R> {
  /** Run it: the result's rows (and, for writes, the affected row count). */
  execute(db: Db, params: P): Promise<QueryResult<R>>;
  /** The rows. */
  all(db: Db, params: P): Promise<R[]>;
  /** The first row, if any. */
  first(db: Db, params: P): Promise<R | undefined>;
  /**
   * Run it with the values in slot order, when the slots are exactly `names` (joined with
   * '\n') in that order: no parameter object to build. Otherwise from the names.
   */
  executeOrdered(db: Db, names: string, nameList: readonly string[], values: readonly unknown[]): Promise<QueryResult<R>>;
}

export function prepared<P extends Record<string, unknown>, R = unknown>(build: (db: Kysely<DB>, p: Placeholder<P>) => Compilable<R>): Prepared<P, R> {
  // One template per dialect (a Kysely instance and its transactions share one adapter).
  const templates = new WeakMap<object, Template>();

  const templateFor = (db: Db): Template => {
    const adapter = db.getExecutor().adapter;
    let t = templates.get(adapter);
    if (t) return t;
    const compiled = build(db as Kysely<DB>, (name) => `${MARK}${name}`).compile();
    t = {
      sql: compiled.sql,
      query: compiled.query,
      slots: compiled.parameters.map((v) => (typeof v === 'string' && v.startsWith(MARK) ? { name: v.slice(MARK.length) } : { value: v })),
      names: null,
    };
    if (t.slots.every((s) => 'name' in s)) t.names = t.slots.map((s) => (s as { name: string }).name).join('\n');
    templates.set(adapter, t);
    return t;
  };

  const execute = (db: Db, params: P): Promise<QueryResult<R>> => {
    const t = templateFor(db);
    const parameters = new Array<unknown>(t.slots.length);
    for (let i = 0; i < t.slots.length; i += 1) {
      const s = t.slots[i]!;
      if ('name' in s) {
        const v = params[s.name];
        parameters[i] = v === undefined ? null : v;
      } else {
        parameters[i] = s.value;
      }
    }
    return run(db, t, parameters);
  };

  const run = (db: Db, t: Template, parameters: unknown[]): Promise<QueryResult<R>> =>
    db.executeQuery({ sql: t.sql, query: t.query, parameters, queryId: QUERY_ID } as unknown as CompiledQuery<R>);

  return {
    execute,
    all: async (db, params) => (await execute(db, params)).rows,
    first: async (db, params) => (await execute(db, params)).rows[0],
    executeOrdered: (db, names, nameList, values) => {
      const t = templateFor(db);
      if (t.names === names) return run(db, t, values.map((v) => (v === undefined ? null : v)));
      const params: Record<string, unknown> = {};
      nameList.forEach((n, i) => (params[n] = values[i]));
      return execute(db, params as P);
    },
  };
}

/** Prepared queries go through no plugin that would tell queries apart: one id for all. */
const QUERY_ID = Object.freeze({ queryId: 'prepared' });

/**
 * Prepared queries that differ by shape (the columns of a row, the length of a list):
 * one prepared query per shape, made on first use. `shape` names the shape; `build` gets it
 * back with the placeholder function.
 */
export function preparedByShape<S, P extends Record<string, unknown>, R = unknown>(
  shapeKey: (shape: S) => string,
  build: (db: Kysely<DB>, p: Placeholder<P>, shape: S) => Compilable<R>,
  maxShapes = 64,
): (shape: S) => Prepared<P, R> | undefined {
  const byShape = new Map<string, Prepared<P, R>>();
  return (shape) => {
    const key = shapeKey(shape);
    let q = byShape.get(key);
    if (!q) {
      if (byShape.size >= maxShapes) return undefined; // unusual shapes: the caller builds the query itself
      q = prepared<P, R>((db, p) => build(db, p, shape));
      byShape.set(key, q);
    }
    return q;
  };
}

/** A plain value Kysely binds as one parameter (not an expression, not a JSON object). */
function isPlain(v: unknown): boolean {
  return v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint';
}

const NONE: readonly string[] = [];

/** The columns of a row Kysely would write: its keys whose value is not undefined (and not in `omit`), in order. */
function definedColumns(row: Record<string, unknown>, omit: readonly string[] = NONE): string[] | undefined {
  const cols: string[] = [];
  for (const k in row) {
    const v = row[k];
    if (v === undefined || (omit.length > 0 && omit.includes(k))) continue;
    if (!isPlain(v)) return undefined;
    cols.push(k);
  }
  return cols;
}

type Row = Record<string, unknown>;

/** The handle without table types, for the generic helpers below (their callers are typed). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const loose = (db: Db | Kysely<DB>): Kysely<any> => db as unknown as Kysely<any>;

/**
 * Whether `row` names exactly `columns` (its keys whose value is not undefined, in order),
 * each a plain value: the check of a known shape, without building the row's column list.
 */
function hasColumns(row: Row, columns: readonly string[], omit: readonly string[] = NONE): boolean {
  let i = 0;
  for (const k in row) {
    const v = row[k];
    if (v === undefined || (omit.length > 0 && omit.includes(k))) continue;
    if (columns[i] !== k || !isPlain(v)) return false;
    i += 1;
  }
  return i === columns.length;
}

/** How many shapes of one table's rows are kept for the check without string keys (most callers have one or two). */
const KNOWN_SHAPES = 8;

/**
 * `insert into <table> (<columns>) values (…), …` for rows that name the same columns (their
 * keys with a value that is not undefined, as Kysely takes them), prepared once per shape.
 * Rows of differing shapes or holding expressions go through the query builder, as before.
 * The shapes met last are recognised by comparing a row's keys with theirs in place (issue 35:
 * joining some 40 column names into a key on every insert was a visible share of a payment).
 */
export function preparedInsert<T extends keyof DB & string>(table: T): (db: Db, rows: Row | readonly Row[]) => Promise<void> {
  interface Shape {
    columns: string[];
    rows: number;
  }
  const forShape = preparedByShape<Shape, Row>(
    (s) => `${s.rows}|${s.columns.join(',')}`,
    (db, p, s) => {
      const values = Array.from({ length: s.rows }, (_, i) => Object.fromEntries(s.columns.map((c) => [c, p(`${i}:${c}`)])));
      return loose(db).insertInto(table as string).values(values);
    },
  );
  // The slot names of a shape, in the order Kysely binds them (row by row, column by column).
  const namesOf = new Map<string, { joined: string; list: string[] }>();
  interface Known {
    columns: string[];
    rows: number;
    q: Prepared<Row, unknown>;
    names: { joined: string; list: string[] };
  }
  const known: Known[] = [];
  const recognise = (rows: readonly Row[]): Known | undefined => {
    for (const s of known) {
      if (s.rows !== rows.length) continue;
      let all = true;
      for (const r of rows) {
        if (!hasColumns(r, s.columns)) {
          all = false;
          break;
        }
      }
      if (all) return s;
    }
    return undefined;
  };
  return async (db, input) => {
    const rows = (Array.isArray(input) ? input : [input]) as Row[];
    if (rows.length === 0) return;
    let shape = recognise(rows);
    if (!shape) {
      const columns = definedColumns(rows[0]!);
      const sameShape = columns !== undefined && rows.every((r, i) => i === 0 || sameColumns(definedColumns(r), columns));
      const q = sameShape ? forShape({ columns, rows: rows.length }) : undefined;
      if (!q) {
        await loose(db).insertInto(table as string).values(rows).execute();
        return;
      }
      const key = `${rows.length}|${columns!.join(',')}`;
      let names = namesOf.get(key);
      if (!names) {
        const list = rows.flatMap((_, i) => columns!.map((c) => `${i}:${c}`));
        names = { joined: list.join('\n'), list };
        namesOf.set(key, names);
      }
      shape = { columns: columns!, rows: rows.length, q, names };
      known.unshift(shape);
      if (known.length > KNOWN_SHAPES) known.pop();
    }
    const columns = shape.columns;
    const values = new Array<unknown>(rows.length * columns.length);
    let k = 0;
    for (const r of rows) for (const c of columns) values[k++] = r[c];
    await shape.q.executeOrdered(db, shape.names.joined, shape.names.list, values);
  };
}

function sameColumns(a: string[] | undefined, b: string[]): boolean {
  return a !== undefined && a.length === b.length && a.every((c, i) => c === b[i]);
}

/**
 * `update <table> set <columns of set> where <column> = … and …`, prepared once per set of
 * columns (keys whose value is not undefined, as Kysely takes them). Returns the number of
 * rows updated. A set holding an expression goes through the query builder, as before. The
 * values are passed in slot order (set, then where), recognising the sets met last as
 * `preparedInsert` does. Keys named in `omit` are never set (a whole row written back
 * without its key columns, with no copy of the row made to leave them out).
 */
export function preparedUpdate<T extends keyof DB & string>(table: T, whereColumns: readonly string[], omit: readonly string[] = NONE): (db: Db, set: Row, where: readonly unknown[]) => Promise<number> {
  const forShape = preparedByShape<string[], Row>(
    (columns) => columns.join(','),
    (db, p, columns) => {
      let q = loose(db).updateTable(table as string).set(Object.fromEntries(columns.map((c) => [c, p(`set:${c}`)])));
      for (const w of whereColumns) q = q.where(w, '=', p(`where:${w}`));
      return q;
    },
  );
  interface Known {
    columns: string[];
    q: Prepared<Row, unknown>;
    joined: string;
    list: string[];
  }
  const known: Known[] = [];
  return async (db, set, where) => {
    let shape: Known | undefined;
    for (const s of known) {
      if (hasColumns(set, s.columns, omit)) {
        shape = s;
        break;
      }
    }
    if (!shape) {
      const columns = definedColumns(set, omit);
      const q = columns !== undefined && columns.length > 0 ? forShape(columns) : undefined;
      if (!q) {
        let without = set;
        if (omit.length > 0) {
          without = { ...set };
          for (const k of omit) delete without[k];
        }
        let b = loose(db).updateTable(table as string).set(without);
        whereColumns.forEach((w, i) => (b = b.where(w, '=', where[i])));
        const r = await b.executeTakeFirst();
        return Number(r.numUpdatedRows);
      }
      const list = [...columns!.map((c) => `set:${c}`), ...whereColumns.map((w) => `where:${w}`)];
      shape = { columns: columns!, q, joined: list.join('\n'), list };
      known.unshift(shape);
      if (known.length > KNOWN_SHAPES) known.pop();
    }
    const columns = shape.columns;
    const values = new Array<unknown>(columns.length + whereColumns.length);
    let k = 0;
    for (const c of columns) values[k++] = set[c];
    for (let i = 0; i < whereColumns.length; i += 1) values[k++] = where[i];
    const r = await shape.q.executeOrdered(db, shape.joined, shape.list, values);
    return Number(r.numAffectedRows ?? 0);
  };
}

/**
 * The row of `table` with this platform_id and id: `find` reads it, `findForUpdate` reads
 * it with a row lock on PostgreSQL (`for update`; SQLite has one writer anyway).
 */
export function preparedByPlatformAndId<T extends keyof DB & string>(
  table: T,
): Record<'find' | 'findForUpdate', Prepared<{ platformId: string; id: string }, Selectable<DB[T]>>> {
  const byId = (lock: boolean) =>
    prepared<{ platformId: string; id: string }, Selectable<DB[T]>>((db, p) => {
      const q = loose(db).selectFrom(table).selectAll().where('platform_id', '=', p('platformId')).where('id', '=', p('id'));
      return lock ? q.forUpdate() : q;
    });
  return { find: byId(false), findForUpdate: byId(true) };
}
