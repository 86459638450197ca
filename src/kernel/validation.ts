import { createRequire } from 'node:module';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify';
import { type Static, type TSchema, Type } from 'typebox';
import { invalidInput, type FieldConstraint, type FieldError } from './errors.js';
import { FORMATS, formatWords } from './formats.js';

// Request validation: Ajv compiles each TypeBox schema once at start-up. Bodies are
// checked strictly (no type coercion); query strings, path parameters and headers are
// text on the wire, so numbers and booleans there are coerced. Every failure in the
// request part becomes one FieldError, and all of them come back in one 400.

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    verbose: true,
    discriminator: true,
  });
  for (const [name, test] of Object.entries(FORMATS)) ajv.addFormat(name, { type: 'string', validate: test });
  return ajv;
}

const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

export type RequestPart = 'body' | 'querystring' | 'params' | 'headers';

function pathOf(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

function join(base: string, prop: string): string {
  return base ? `${base}.${prop}` : prop;
}

function describe(e: ErrorObject): { message: string; constraint?: FieldConstraint } {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return { message: 'is required' };
    case 'format': {
      const format = String(p.format);
      return { message: `must be ${formatWords(format)}`, constraint: { format } };
    }
    case 'pattern':
      return { message: `must match the pattern ${String(p.pattern)}`, constraint: { pattern: String(p.pattern) } };
    case 'enum': {
      const values = (p.allowedValues as unknown[]).map(String);
      return { message: `must be one of: ${values.join(', ')}`, constraint: { enum: values } };
    }
    case 'const':
      return { message: `must be ${JSON.stringify(p.allowedValue)}`, constraint: { enum: [String(p.allowedValue)] } };
    case 'minLength':
      return { message: `must be at least ${String(p.limit)} characters long`, constraint: { minLength: Number(p.limit) } };
    case 'maxLength':
      return { message: `must be at most ${String(p.limit)} characters long`, constraint: { maxLength: Number(p.limit) } };
    case 'type':
      return { message: `must be ${String(p.type).replace(/,/g, ' or ')}` };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { message: `must be ${String(p.comparison)} ${String(p.limit)}` };
    case 'minItems':
      return { message: `must have at least ${String(p.limit)} items` };
    case 'maxItems':
      return { message: `must have at most ${String(p.limit)} items` };
    case 'additionalProperties':
      return { message: 'is not a recognised field' };
    case 'uniqueItems':
      return { message: 'must not contain duplicate items' };
    default:
      return { message: e.message ?? 'is invalid' };
  }
}

/** Turn Ajv errors into FieldErrors: one per field and problem, unions collapsed. */
export function toFieldErrors(errors: readonly ErrorObject[], part: RequestPart): FieldError[] {
  // Errors raised inside an anyOf/oneOf branch are replaced by the union's own error,
  // described by the constants of its branches when they are all constants.
  // A nullable field (X or null) is reported as X: its own errors stand and the union's go.
  const unions: string[] = [];
  const nullableKeep: string[] = [];
  const nullableUnions = new Set<ErrorObject>();
  for (const e of errors) {
    if (e.keyword !== 'anyOf' && e.keyword !== 'oneOf') continue;
    const branches = Array.isArray(e.schema) ? (e.schema as Array<Record<string, unknown>>) : [];
    const nullAt = branches.findIndex((b) => b.type === 'null');
    if (branches.length === 2 && nullAt >= 0) {
      nullableKeep.push(`${e.schemaPath}/${1 - nullAt}/`);
      nullableUnions.add(e);
    }
    unions.push(e.schemaPath);
  }
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    if (nullableUnions.has(e)) continue;
    const kept = nullableKeep.some((k) => e.schemaPath.startsWith(k));
    if (!kept && unions.some((u) => e.schemaPath.startsWith(`${u}/`))) continue;
    let field = pathOf(e.instancePath);
    if (e.keyword === 'required') field = join(field, String((e.params as { missingProperty: string }).missingProperty));
    if (e.keyword === 'additionalProperties') field = join(field, String((e.params as { additionalProperty: string }).additionalProperty));
    let d = describe(e);
    if (e.keyword === 'additionalProperties' && part === 'querystring' && !e.instancePath) d = { message: 'is not a recognised parameter' };
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') {
      const branches = Array.isArray(e.schema) ? (e.schema as Array<Record<string, unknown>>) : [];
      const consts = branches.every((b) => 'const' in b) ? branches.map((b) => String(b.const)) : undefined;
      d = consts ? { message: `must be one of: ${consts.join(', ')}`, constraint: { enum: consts } } : { message: 'does not match any of the allowed shapes' };
    }
    if (e.keyword === 'discriminator') {
      // oneOf discriminated by a tag property: report the tag itself.
      const tag = String((e.params as { tag: string }).tag);
      field = join(field, tag);
      if (errors.some((o) => o.keyword === 'required' && (o.params as { missingProperty?: string }).missingProperty === tag && o.instancePath === e.instancePath)) continue;
      const branches = ((e.parentSchema as { oneOf?: Array<{ properties?: Record<string, { const?: unknown; enum?: unknown[] }> }> })?.oneOf ?? []);
      const values = branches.flatMap((b) => {
        const p = b.properties?.[tag];
        return p?.const !== undefined ? [String(p.const)] : (p?.enum ?? []).map(String);
      });
      d = values.length > 0 ? { message: `must be one of: ${values.join(', ')}`, constraint: { enum: values } } : { message: 'is invalid' };
    }
    if (!field) field = part === 'body' ? '(body)' : `(${part})`;
    const key = `${field}\u0000${d.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const fe: FieldError = { field, message: d.message };
    if (d.constraint) fe.constraint = d.constraint;
    out.push(fe);
  }
  return out;
}

/**
 * Fastify validator compiler: strict bodies, coerced text parts, our error shape. Each
 * schema is compiled when its route first validates a request, not at start-up: most of
 * the API's routes (and the HEAD twin of every GET) are never called in a given run, and
 * compiling them all was a fifth of the start-up time and much of the idle memory.
 * `compileAllRouteSchemas` (tests) compiles every one at once.
 */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const part = (httpPart ?? 'body') as RequestPart;
  const ajv = part === 'body' ? bodyAjv : textAjv;
  // A query string is checked against its schema closed (a parameter the operation does not
  // declare is a 400), and its array parameters accept comma-joined values.
  const query = part === 'querystring' ? queryRulesOf(schema as QuerySchema) : undefined;
  let validate: ValidateFunction | undefined;
  const compile = (): ValidateFunction => {
    pendingCompiles.delete(compile);
    return (validate ??= ajv.compile(query ? query.closed : (schema as object)));
  };
  pendingCompiles.add(compile);
  return (data: unknown) => {
    const v = validate ?? compile();
    if (query) splitCommaJoined(data, query.arrays);
    if (v(data)) return { value: data };
    return { error: invalidInput(toFieldErrors(v.errors ?? [], part)) };
  };
};

// ---- Query strings --------------------------------------------------------------------------
//
// Two rules for every operation's query string, driven by its schema (the served OpenAPI
// document shows the schema as declared; only the validator sees the closed copy):
//
// - A parameter the operation does not declare is 400 INVALID_INPUT, each one named in
//   details.errors ("is not a recognised parameter"): the schema is validated with
//   additionalProperties false unless it says otherwise. An operation without a query
//   schema gets an empty one (closeQueryString, an onRoute hook of the API scope).
// - An array parameter accepts the repeated form (?x=A&x=B), the comma-joined form
//   (?x=A,B: what the official SDK sends) and a mix: its values are split on commas before
//   validation. Only parameters whose schema is an array are split.

interface QuerySchema {
  type?: unknown;
  properties?: Record<string, { type?: unknown; anyOf?: Array<{ type?: unknown }>; oneOf?: Array<{ type?: unknown }> }>;
  additionalProperties?: unknown;
}

const isArrayType = (t: unknown): boolean => t === 'array' || (Array.isArray(t) && t.includes('array'));

/** The closed schema to validate with and the names of the array parameters. */
export function queryRulesOf(schema: QuerySchema): { closed: object; arrays: string[] } {
  const props = schema.properties ?? {};
  const arrays = Object.keys(props).filter((k) => {
    const p = props[k]!;
    return isArrayType(p.type) || [...(p.anyOf ?? []), ...(p.oneOf ?? [])].some((b) => isArrayType(b.type));
  });
  const closed = schema.type === 'object' && schema.additionalProperties === undefined ? { ...schema, additionalProperties: false } : schema;
  return { closed, arrays };
}

/** Split the comma-joined values of the array parameters, in place (before validation and coercion). */
function splitCommaJoined(data: unknown, arrays: readonly string[]): void {
  if (arrays.length === 0 || data === null || typeof data !== 'object') return;
  const q = data as Record<string, unknown>;
  for (const k of arrays) {
    const v = q[k];
    if (typeof v === 'string') {
      if (v.includes(',')) q[k] = v.split(',');
    } else if (Array.isArray(v) && v.some((x) => typeof x === 'string' && x.includes(','))) {
      q[k] = v.flatMap((x) => (typeof x === 'string' ? x.split(',') : [x]));
    }
  }
}

/**
 * onRoute hook (the API scope): a GET (or its HEAD twin) that declares no query schema gets
 * the empty one, so a query parameter sent to it is a 400 like any other unknown parameter.
 * The served document is unchanged: an empty query schema lists no parameters.
 */
export function closeQueryString(route: { method: string | string[]; schema?: Record<string, unknown> }): void {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  if (!methods.some((m) => m === 'GET' || m === 'HEAD')) return;
  if (route.schema?.querystring !== undefined) return;
  route.schema = { ...(route.schema ?? {}), querystring: { type: 'object', properties: {} } };
}

type ValidatorFactory = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']>;

/**
 * What Fastify's schema controller asks for to build the validator compiler: always
 * validatorCompiler (so Fastify's default Ajv compiler is never loaded). Its types describe
 * the default compiler's signature; ours is the FastifySchemaCompiler Fastify calls.
 */
export const validatorFactory = (() => validatorCompiler) as unknown as ValidatorFactory;

/** Compilers of route schemas not run yet, of every app of the process (tests compile them all to find a broken schema). */
const pendingCompiles = new Set<() => unknown>();

/** Compile every route schema (validators and serializers) now; throws on the first that does not compile. */
export function compileAllRouteSchemas(): number {
  const all = [...pendingCompiles];
  for (const c of all) c();
  return all.length;
}

interface SerializerRouteSchema {
  schema?: unknown;
  method?: string;
  url?: string;
  httpStatus?: string;
  contentType?: string;
}
type SerializerCompiler = (route: SerializerRouteSchema) => (data: unknown) => string;

// Fastify's own serializer factory (fast-json-stringify), taken from Fastify's dependencies.
const fastifyRequire = createRequire(createRequire(import.meta.url).resolve('fastify'));
const SerializerSelector = fastifyRequire('@fastify/fast-json-stringify-compiler') as () => (externalSchemas: unknown, serializerOpts: unknown) => SerializerCompiler;

/**
 * Fastify's response serializers exactly as it builds them, but each compiled when its
 * route first answers with that status (fastify's schemaController.compilersFactory).
 */
export function lazySerializerFactory(externalSchemas: unknown, serializerOpts: unknown): SerializerCompiler {
  const compile = SerializerSelector()(externalSchemas, serializerOpts);
  return (route) => {
    let serialize: ((data: unknown) => string) | undefined;
    const build = () => {
      pendingCompiles.delete(build);
      return (serialize ??= compile({ ...route, schema: taggedForSerializer(route.schema) }));
    };
    pendingCompiles.add(build);
    return (data) => (serialize ?? build())(data);
  };
}

/**
 * The schema a response serializer is built from: the same, except that each oneOf told apart
 * by a tag (OneOf, with its discriminator) becomes if/then/else on the tag's value. The
 * serializer (fast-json-stringify) picks a oneOf's branch by validating the value against
 * every branch in turn, date-time formats and all: for GET /transactions that was most of
 * its time (issue 15). An `if` that only compares the tag costs next to nothing. The last
 * branch is the `else`. The served document and the validators keep the oneOf.
 */
export function taggedForSerializer(schema: unknown, seen = new Map<object, unknown>()): unknown {
  if (schema === null || typeof schema !== 'object') return schema;
  const done = seen.get(schema);
  if (done !== undefined) return done;
  if (Array.isArray(schema)) {
    const out: unknown[] = [];
    seen.set(schema, out);
    for (const item of schema) out.push(taggedForSerializer(item, seen));
    return out;
  }
  const obj = schema as Record<string | symbol, unknown>;
  const out: Record<string | symbol, unknown> = {};
  seen.set(schema, out);
  for (const key of Reflect.ownKeys(obj)) out[key] = taggedForSerializer(obj[key], seen);
  const tag = (obj.discriminator as { propertyName?: unknown } | undefined)?.propertyName;
  const branches = out.oneOf;
  if (typeof tag !== 'string' || !Array.isArray(branches) || branches.length < 2) return out;
  const values = branches.map((b) => tagValueOf(b, tag));
  if (values.some((v) => v === undefined)) return out;
  let chain: unknown = branches[branches.length - 1];
  for (let i = branches.length - 2; i >= 0; i -= 1) {
    chain = { if: { type: 'object', properties: { [tag]: { const: values[i] } }, required: [tag] }, then: branches[i], else: chain };
  }
  delete out.oneOf;
  delete out.discriminator;
  delete out.required;
  delete out.type;
  return Object.assign(out, chain as object);
}

/** The one value a branch allows for its tag (a const, or an enum of one), if it says. */
function tagValueOf(branch: unknown, tag: string): string | undefined {
  const prop = (branch as { properties?: Record<string, { const?: unknown; enum?: unknown[] }> } | null)?.properties?.[tag];
  if (typeof prop?.const === 'string') return prop.const;
  if (Array.isArray(prop?.enum) && prop.enum.length === 1 && typeof prop.enum[0] === 'string') return prop.enum[0];
  return undefined;
}

/** Validators compiled by checkSchema, per schema object (compiled once, dropped with the schema). */
const checkCache = new WeakMap<object, ValidateFunction>();

/** Validate a value against a schema outside a route (multipart fields, stored JSON). */
export function checkSchema(schema: object, data: unknown, part: RequestPart = 'body'): FieldError[] {
  let validate = checkCache.get(schema);
  if (!validate) {
    validate = bodyAjv.compile(schema);
    checkCache.set(schema, validate);
  }
  return validate(data) ? [] : toFieldErrors(validate.errors ?? [], part);
}

/**
 * A oneOf told apart by the `tag` property (the reference's discriminated unions): Ajv
 * validates only the branch the tag names, and the served document shows a oneOf with its
 * discriminator.
 */
export function OneOf<T extends TSchema[]>(tag: string, branches: [...T], options: { title?: string; description?: string } = {}) {
  return Type.Unsafe<Static<T[number]>>({ type: 'object', required: [tag], discriminator: { propertyName: tag }, oneOf: branches, ...options });
}

// ---- NUL characters -------------------------------------------------------------------------
//
// PostgreSQL's text cannot hold U+0000 (it fails the statement: a 500), SQLite stores it and
// C-string consumers cut the value there. No field of the API has a use for it, so a request
// carrying one in a path parameter, a query value or a JSON string (value or key) is refused
// 400 INVALID_INPUT naming every such field, on every store, before its schema is checked
// and before anything reads the store (refuseNul, a preValidation hook of the whole app).
// Basic credentials holding one are 401 (kernel/auth.ts); multipart text fields are checked
// where the form is read.

export const NUL_MESSAGE = 'must not contain the NUL character (U+0000)';

const hasNul = (s: string): boolean => s.includes('\u0000');

/**
 * A FieldError for every string (value or property name) of `data` holding U+0000. Fields
 * are named like the validator's (`a.b.0.c`; `base` prefixes them, a top-level string is
 * `base`, or `(body)` when there is none). Iterative, so any nesting depth is safe.
 */
export function nulFieldErrors(data: unknown, base = ''): FieldError[] {
  const out: FieldError[] = [];
  const stack: Array<[unknown, string]> = [[data, base]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      if (hasNul(value)) out.push({ field: path || '(body)', message: NUL_MESSAGE });
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], join(path, String(i))]);
    } else if (value !== null && typeof value === 'object') {
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i]!;
        const field = join(path, k);
        if (hasNul(k)) out.push({ field, message: NUL_MESSAGE });
        else stack.push([(value as Record<string, unknown>)[k], field]);
      }
    }
  }
  return out;
}

/**
 * preValidation hook of the whole app: a routed request whose path parameters, query string or
 * JSON body holds U+0000 is 400 INVALID_INPUT listing every such field (an unknown route stays
 * 404). Runs after authentication (onRequest) and before the schemas and the handler.
 */
export function refuseNul(req: { is404?: boolean; params: unknown; query: unknown; body: unknown }): ReturnType<typeof invalidInput> | undefined {
  if (req.is404) return undefined;
  const errors = [...nulFieldErrors(req.params), ...nulFieldErrors(req.query)];
  // A path parameter or query value at the top level always has a name: no '(body)' for them.
  if (req.body !== undefined) errors.push(...nulFieldErrors(req.body));
  return errors.length > 0 ? invalidInput(errors) : undefined;
}
