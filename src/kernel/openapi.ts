// The served OpenAPI document's named schemas. Routes keep their TypeBox schemas inline
// (they are the request validators and response serializers, untouched); when the document
// is generated (once: @fastify/swagger caches it), `nameSchemas` rewrites it:
//
// - every schema of the registry (name → schema, converted by @fastify/swagger like the
//   routes' schemas) and every titled subschema of the document becomes a component of
//   `components.schemas`, under its registered name or its (renamed) title;
// - every subschema equal to a component — the same structure, whatever its top-level
//   annotations (description, examples …) — is replaced by a `$ref` to it, keeping the
//   annotations that differ beside the `$ref`. Smaller components are named first, so the
//   larger ones refer to them too;
// - a discriminator whose branches became `$ref`s gets the `mapping` of its tag values (a
//   discriminator without mapping would mean "the tag value is the schema name");
// - error responses repeated across operations go to `components.responses`.
//
// A schema nobody registered and nobody titled stays inline: the document is still right,
// only less named.

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };

export const SCHEMA_PREFIX = '#/components/schemas/';
const RESPONSE_PREFIX = '#/components/responses/';

/** Keywords that describe a schema without constraining it: they may differ between a component and a use of it. */
const ANNOTATIONS = new Set(['description', 'examples', 'example', 'default', 'deprecated', 'readOnly', 'writeOnly', '$comment']);

/** Keywords whose value is one schema, an array of schemas, or a map of schemas. */
const ONE = new Set(['items', 'additionalProperties', 'contains', 'not', 'if', 'then', 'else', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems']);
const MANY = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const MAP = new Set(['properties', 'patternProperties', 'dependentSchemas', '$defs']);

/** Component names OpenAPI allows. */
const NAME = /^[A-Za-z0-9._-]+$/;

const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

// ---- Canonical ids: equal structures, equal ids --------------------------------------
// Each structure is interned as the text of its keys and its children's ids, so a large
// schema costs its size once, not once per enclosing schema.

// Fresh for each document (nameSchemas), so ids of one document never meet another's.
let interned = new Map<string, number>();
let idCache = new WeakMap<object, number>();
let shapeCache = new WeakMap<object, number>();

function intern(text: string): number {
  let id = interned.get(text);
  if (id === undefined) interned.set(text, (id = interned.size));
  return id;
}

/** A number equal for equal JSON values (keys in any order, `required` as a set). Cached per object: the pass never mutates a node after reading it. */
function canonId(x: Json): number {
  if (typeof x !== 'object' || x === null) return intern(JSON.stringify(x));
  const hit = idCache.get(x);
  if (hit !== undefined) return hit;
  const id = intern(Array.isArray(x) ? `[${x.map(canonId).join(',')}]` : `{${bodyOf(x, false)}}`);
  idCache.set(x, id);
  return id;
}

function bodyOf(x: Obj, withoutAnnotations: boolean): string {
  const parts: string[] = [];
  for (const k of Object.keys(x).sort()) {
    if (withoutAnnotations && ANNOTATIONS.has(k)) continue;
    const v = x[k]!;
    const id = k === 'required' && Array.isArray(v) ? intern(JSON.stringify([...(v as string[])].sort())) : canonId(v);
    parts.push(`${k}\u0001${id}`);
  }
  return parts.join(',');
}

/** The length of a schema's JSON without its top-level annotations. */
function shapeSize(schema: Obj): number {
  let n = 0;
  for (const [k, v] of Object.entries(schema)) if (!ANNOTATIONS.has(k)) n += k.length + JSON.stringify(v).length;
  return n;
}

/** What a use must share with a component: everything but the top-level annotations. */
function shapeKey(schema: Obj): number {
  const hit = shapeCache.get(schema);
  if (hit !== undefined) return hit;
  const id = intern(`S{${bodyOf(schema, true)}}`);
  shapeCache.set(schema, id);
  return id;
}

const same = (a: Json | undefined, b: Json | undefined): boolean => canonId(a ?? null) === canonId(b ?? null);

/**
 * A TypeBox (JSON) schema as @fastify/swagger puts it in an OpenAPI 3.1 document
 * (convertJsonSchemaToOpenapi3 with convertConstToEnum, its default): `const` becomes a
 * one-value `enum`, `$id`/`$schema`/`definitions` go, `contentEncoding` becomes `format`,
 * `patternProperties` becomes `additionalProperties`, a `$ref` loses its siblings.
 */
export function toDocumentSchema(x: unknown): Json {
  if (Array.isArray(x)) return x.map(toDocumentSchema);
  if (typeof x !== 'object' || x === null) return x as Json;
  const src = x as Record<string, unknown>;
  if (typeof src.$ref === 'string') return { $ref: src.$ref.replace('definitions', 'components/schemas') };
  const out: Obj = {};
  for (const [k, v] of Object.entries(src)) {
    if (k === '$id' || k === '$schema' || k === 'definitions') continue;
    if (k === 'const') out.enum = [toDocumentSchema(v)];
    else if (k === 'contentEncoding') {
      if (v === 'binary') out.format = 'binary';
      else if (v === 'base64') out.format = 'byte';
    } else if (k === 'patternProperties' && typeof v === 'object' && v !== null) out.additionalProperties = toDocumentSchema(Object.values(v)[0]);
    else out[k] = toDocumentSchema(v);
  }
  return out;
}

// ---- The rewrite ---------------------------------------------------------------------

export interface NamingOptions {
  /** The registry: component name → TypeBox (JSON) schema. */
  registered: Readonly<Record<string, unknown>>;
  /** The component name for a subschema's title, or undefined to leave it unnamed. */
  nameOfTitle?: (title: string) => string | undefined;
}

interface Candidate {
  name: string;
  raw: Obj;
  size: number;
  registered: boolean;
}

/** Name the document's schemas (see the top of this file). Mutates and returns `doc`. */
export function nameSchemas(doc: Obj, opts: NamingOptions): Obj {
  interned = new Map();
  idCache = new WeakMap();
  shapeCache = new WeakMap();
  const components = (isObj(doc.components) ? doc.components : (doc.components = {})) as Obj;
  const given: Obj = { ...(isObj(components.schemas) ? components.schemas : {}) };
  for (const [name, schema] of Object.entries(opts.registered)) given[name] = toDocumentSchema(schema);

  // 1. Candidates: the registered schemas (and any the document already had), then titled
  // subschemas (per name, its most frequent shape).
  const candidates: Candidate[] = [];
  for (const [name, schema] of Object.entries(given)) {
    if (isObj(schema)) candidates.push({ name, raw: schema, size: shapeSize(schema), registered: true });
  }
  const taken = new Set(candidates.map((c) => c.name));
  const titled = new Map<string, Map<number, { node: Obj; count: number }>>();
  const collect = (node: Obj) => {
    const title = node.title;
    if (typeof title !== 'string') return;
    const name = opts.nameOfTitle ? opts.nameOfTitle(title) : title;
    if (!name || !NAME.test(name) || taken.has(name)) return;
    let shapes = titled.get(name);
    if (!shapes) titled.set(name, (shapes = new Map()));
    const key = shapeKey(node);
    const seen = shapes.get(key);
    if (seen) seen.count++;
    else shapes.set(key, { node, count: 1 });
  };
  forEachSchema(doc, collect);
  for (const c of [...candidates]) walkSchema(c.raw, collect);
  for (const [name, shapes] of titled) {
    let best: { node: Obj; count: number } | undefined;
    for (const s of shapes.values()) if (!best || s.count > best.count) best = s;
    candidates.push({ name, raw: best!.node, size: shapeSize(best!.node), registered: false });
  }

  // 2. Components, smallest first (by the size of their shape, annotations aside): a schema
  // is larger than any schema inside it, so its insides are named before its own shape is taken.
  candidates.sort((a, b) => a.size - b.size || Number(b.registered) - Number(a.registered));
  const byShape = new Map<number, string>();
  const out: Obj = {};
  const bodies = new Map<string, Obj>();
  // A subschema's rewrite, once per distinct structure: components named later are larger
  // than it (see the sort), so they never change a rewrite already made.
  const memo = new Map<number, Json>();
  const reduce = (node: Json): Json => {
    if (!isObj(node)) return node;
    const id = canonId(node);
    let out = memo.get(id);
    if (out === undefined) {
      const reduced = reduceInside(node, reduce);
      const name = byShape.get(shapeKey(reduced));
      out = name === undefined ? reduced : refTo(name, reduced, bodies.get(name)!);
      memo.set(id, out);
    }
    return out;
  };
  for (const c of candidates) {
    const body = reduceInside(c.raw, reduce);
    const key = shapeKey(body);
    const owner = byShape.get(key);
    if (owner !== undefined && !c.registered) continue; // the same shape under another title: one name is enough
    if (owner === undefined) byShape.set(key, c.name);
    out[c.name] = body;
    bodies.set(c.name, body);
  }

  // 3. The operations (and anything else outside components.schemas) use them.
  for (const [k, v] of Object.entries(doc)) {
    if (k === 'components') continue;
    doc[k] = mapSchemas(v, reduce);
  }
  for (const [k, v] of Object.entries(components)) {
    if (k === 'schemas') continue;
    components[k] = mapSchemas(v, reduce);
  }

  // 4. Discriminator mappings, then the components in name order.
  const sorted: Obj = {};
  for (const name of Object.keys(out).sort()) sorted[name] = out[name]!;
  components.schemas = sorted;
  forEachSchema(doc, (node) => addMapping(node, sorted));
  for (const body of Object.values(sorted)) walkSchema(body as Obj, (node) => addMapping(node, sorted));

  shareErrorResponses(doc, components);
  return doc;
}

/** A `$ref` to `name` for a use of it, with the use's annotations that the component does not already say. */
function refTo(name: string, use: Obj, component: Obj): Obj {
  const ref: Obj = { $ref: SCHEMA_PREFIX + name };
  for (const k of Object.keys(use)) {
    if (ANNOTATIONS.has(k) && !same(use[k], component[k])) ref[k] = use[k]!;
  }
  return ref;
}

/** A copy of a schema whose subschemas went through `f`. */
function reduceInside(node: Obj, f: (s: Json) => Json): Obj {
  const copy: Obj = {};
  for (const [k, v] of Object.entries(node)) {
    if (ONE.has(k) && isObj(v)) copy[k] = f(v);
    else if (MANY.has(k) && Array.isArray(v)) copy[k] = v.map(f);
    else if (MAP.has(k) && isObj(v)) copy[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, f(s)]));
    else copy[k] = v;
  }
  return copy;
}

/** Visit every subschema of a schema (itself included). */
function walkSchema(node: Obj, visit: (s: Obj) => void): void {
  visit(node);
  reduceInside(node, (child) => {
    if (isObj(child)) walkSchema(child, visit);
    return child;
  });
}

/** Rebuild a part of the document with every schema in it (under a `schema` key) mapped by `f`. */
function mapSchemas(x: Json, f: (s: Json) => Json): Json {
  if (Array.isArray(x)) return x.map((v) => mapSchemas(v, f));
  if (!isObj(x)) return x;
  const copy: Obj = {};
  for (const [k, v] of Object.entries(x)) copy[k] = k === 'schema' && isObj(v) ? f(v) : mapSchemas(v, f);
  return copy;
}

/** Visit every subschema of the document outside components.schemas. */
function forEachSchema(doc: Json, visit: (s: Obj) => void): void {
  const go = (x: Json, key: string | undefined): void => {
    if (Array.isArray(x)) return x.forEach((v) => go(v, undefined));
    if (!isObj(x)) return;
    if (key === 'schema') return walkSchema(x, visit);
    for (const [k, v] of Object.entries(x)) if (!(key === 'components' && k === 'schemas')) go(v, k);
  };
  go(doc, undefined);
}

/** Resolve a local schema reference (one level). */
function target(ref: Json | undefined, schemas: Obj): Obj | undefined {
  if (typeof ref !== 'string' || !ref.startsWith(SCHEMA_PREFIX)) return undefined;
  const t = schemas[ref.slice(SCHEMA_PREFIX.length)];
  return isObj(t) ? t : undefined;
}

/** The values a branch gives its discriminator tag (enum or const of the property, also through allOf and $ref). */
function tagValues(branch: Obj, tag: string, schemas: Obj, depth = 0): string[] {
  if (depth > 8) return [];
  const props = isObj(branch.properties) ? branch.properties : undefined;
  const p = props && isObj(props[tag]) ? (props[tag] as Obj) : undefined;
  if (p && typeof p.const === 'string') return [p.const];
  if (p && Array.isArray(p.enum)) return p.enum.filter((v): v is string => typeof v === 'string');
  const t = target(branch.$ref, schemas);
  if (t) return tagValues(t, tag, schemas, depth + 1);
  if (Array.isArray(branch.allOf)) {
    // The most specific member says it: the last one that names a value.
    const found = branch.allOf.map((m) => (isObj(m) ? tagValues(m, tag, schemas, depth + 1) : []));
    return [...found].reverse().find((v) => v.length > 0) ?? [];
  }
  return [];
}

function addMapping(node: Obj, schemas: Obj): void {
  const d = node.discriminator;
  if (!isObj(d) || typeof d.propertyName !== 'string' || !Array.isArray(node.oneOf) || isObj(d.mapping)) return;
  const mapping: Obj = {};
  for (const branch of node.oneOf) {
    if (!isObj(branch)) continue;
    const t = target(branch.$ref, schemas);
    if (!t) continue;
    for (const v of tagValues(t, d.propertyName, schemas)) mapping[v] = branch.$ref!;
  }
  if (Object.keys(mapping).length > 0) node.discriminator = { ...d, mapping };
}

/**
 * Error responses (4xx, 5xx) that several operations answer identically become
 * `components.responses.Error<status>` (the most frequent form of each status).
 */
function shareErrorResponses(doc: Obj, components: Obj): void {
  if (!isObj(doc.paths)) return;
  const uses = new Map<string, Map<number, { response: Obj; count: number }>>();
  const eachResponse = (f: (status: string, response: Obj, responses: Obj) => void) => {
    for (const item of Object.values(doc.paths as Obj)) {
      if (!isObj(item)) continue;
      for (const op of Object.values(item)) {
        if (!isObj(op) || !isObj(op.responses)) continue;
        for (const [status, response] of Object.entries(op.responses)) {
          if (/^[45]\d\d$/.test(status) && isObj(response) && response.$ref === undefined) f(status, response, op.responses);
        }
      }
    }
  };
  eachResponse((status, response) => {
    let forms = uses.get(status);
    if (!forms) uses.set(status, (forms = new Map()));
    const key = canonId(response);
    const seen = forms.get(key);
    if (seen) seen.count++;
    else forms.set(key, { response, count: 1 });
  });
  const shared: Obj = isObj(components.responses) ? components.responses : {};
  const keyOf = new Map<string, number>();
  for (const [status, forms] of [...uses].sort(([a], [b]) => a.localeCompare(b))) {
    let best: { response: Obj; count: number } | undefined;
    for (const f of forms.values()) if (!best || f.count > best.count) best = f;
    if (!best || best.count < 2) continue;
    const name = `Error${status}`;
    if (shared[name] !== undefined) continue;
    shared[name] = best.response;
    keyOf.set(status, canonId(best.response));
  }
  if (keyOf.size === 0) return;
  components.responses = shared;
  eachResponse((status, response, responses) => {
    if (keyOf.get(status) === canonId(response)) responses[status] = { $ref: `${RESPONSE_PREFIX}Error${status}` };
  });
}

/** Every `$ref` of the document that does not resolve (a test helper, also used in development). */
export function unresolvedRefs(doc: unknown): string[] {
  const bad: string[] = [];
  const resolve = (ref: string): unknown => {
    if (!ref.startsWith('#/')) return undefined;
    let at: unknown = doc;
    for (const part of ref.slice(2).split('/')) {
      const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
      if (!isObj(at as Json) || !((at as Obj)[key] !== undefined)) return undefined;
      at = (at as Obj)[key];
    }
    return at;
  };
  const go = (x: unknown): void => {
    if (Array.isArray(x)) return x.forEach(go);
    if (!isObj(x as Json)) return;
    for (const [k, v] of Object.entries(x as Obj)) {
      if (k === '$ref' && typeof v === 'string' && resolve(v) === undefined) bad.push(v);
      else go(v);
    }
  };
  go(doc);
  return bad;
}

/**
 * A schema of the document with its `$ref` followed (its annotations kept), e.g. for a test
 * that reads the fields an operation answers: `resolveSchema(doc, content.schema).properties`.
 */
export function resolveSchema(doc: unknown, schema: unknown): Record<string, unknown> {
  let s = schema as Record<string, unknown>;
  for (let i = 0; i < 16 && typeof s?.$ref === 'string' && s.$ref.startsWith(SCHEMA_PREFIX); i++) {
    const { $ref, ...siblings } = s;
    const target = (doc as { components?: { schemas?: Record<string, Record<string, unknown>> } }).components?.schemas?.[($ref as string).slice(SCHEMA_PREFIX.length)];
    if (!target) break;
    s = { ...target, ...siblings };
  }
  return s;
}
