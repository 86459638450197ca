// Rows read from SQLite as objects of one fixed shape per statement.
//
// better-sqlite3 builds each row object by adding its columns one at a time. A row of a wide
// table (a transaction has 47 columns) then ends up in V8's dictionary mode: building it is
// slow, and so is every later read of its properties (the views read most of them). Read in
// raw mode instead (an array per row) and turn each array into an object with a constructor
// made once per statement from its column names: an object literal, so every row of the
// statement shares one hidden class with fast properties. On a bench database a 47-column
// transaction read by id took 15.5–22.5 µs as better-sqlite3's object, 9.7–13.1 µs this way.
//
// A statement keeps its shape while the schema stays as it was. DDL run through this store
// forgets every shape (forgetRowShapes); a row whose length is not the shape's (another
// connection changed the schema) gets the shape made again from the statement's columns.

/** The part of a better-sqlite3 statement used here. */
export interface RawCapableStatement {
  raw(toggle?: boolean): unknown;
  columns(): Array<{ name: string }>;
  all(...params: unknown[]): unknown[];
}

interface Shape {
  width: number;
  make: (values: unknown[]) => unknown;
}

let shapes = new WeakMap<object, Shape>();

/** Forget every statement's shape (after DDL: a `select *` may now return other columns). */
export function forgetRowShapes(): void {
  shapes = new WeakMap();
}

/**
 * The constructor of a row with these columns. A column named `__proto__` gets a computed key,
 * which makes an own property as better-sqlite3 does (a plain one would set the prototype).
 */
export function shapeOf(names: readonly string[]): Shape {
  const keys = names.map((n, i) => `${n === '__proto__' ? `[${JSON.stringify(n)}]` : JSON.stringify(n)}: v[${i}]`);
  return { width: names.length, make: new Function('v', `return { ${keys.join(', ')} };`) as (values: unknown[]) => unknown };
}

/**
 * All rows of a reader statement, as objects: the same keys and values as better-sqlite3's
 * own (except that a column named `__proto__` is kept as a property, where better-sqlite3's
 * assignment drops it).
 */
export function readRows(stmt: RawCapableStatement, params: readonly unknown[]): unknown[] {
  stmt.raw(true);
  let arrays: unknown[][];
  try {
    arrays = stmt.all(params) as unknown[][];
  } finally {
    stmt.raw(false);
  }
  if (arrays.length === 0) return arrays;
  // The names are read after the run: a statement SQLite compiled again (the schema changed)
  // reports its new columns only once it ran.
  let shape = shapes.get(stmt);
  if (shape === undefined || arrays[0]!.length !== shape.width) {
    shape = shapeOf(stmt.columns().map((c) => c.name));
    shapes.set(stmt, shape);
  }
  const rows = new Array<unknown>(arrays.length);
  for (let i = 0; i < arrays.length; i += 1) rows[i] = shape.make(arrays[i]!);
  return rows;
}
