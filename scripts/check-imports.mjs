#!/usr/bin/env node
// The import rules of src/ (docs/architecture.md, "Layers and imports"). Dependencies point
// down. Every relative import counts: `import`, `import type`, `export … from`, a bare
// `import './x.js'` and a dynamic `import('./x.js')`.
//
// Layers, lowest first (a file may import its own layer and the layers below it, never above):
//   0 kernel     src/kernel/**, src/config.ts (the environment → Config: machinery every layer reads)
//   1 rules      src/sandbox/rules/** (the sandbox's rule tables and defaults)
//   2 areas      one folder per area: src/api/<area>/** (the reference's operations),
//                src/sandbox/<area>/** (the sandbox's own extensions), src/operator/<area>/**
//                (the operator API)
//   3 lists      src/areas.ts (the registration list), src/openapi-schemas.ts (the document's
//                named schemas), src/dashboard/**
//   4 app        src/app.ts
//   5 server     src/server.ts
//   6 entries    src/main.ts, src/cli/**, src/index.ts (the package entry), src/testing.ts (the testing entry)
// Rules:
//   circle     no import circle anywhere in src/ (type-only imports included)
//   upward     no import from a layer into a higher one (kernel → areas, area → app.ts, …)
//   routes     an area's routes.ts and pages.ts (its HTTP surface) import only their own area's
//              files and the kernel: never another area's file (its service, store or schemas:
//              a shape another area declares is re-exported by the area's own schemas.ts), nor
//              the rule tables
//   surface    no file imports another area's routes.ts or pages.ts: cross-area use goes
//              service → service (or store, schemas)
//   registered an area with an HTTP surface (routes.ts or pages.ts) exports its registration
//              from area.ts, and src/areas.ts (the list) imports it
//
// Usage: node scripts/check-imports.mjs [srcDir]   (default: src). Exit 1 and one line per
// broken rule (naming the importing file, its line and the imported file), else exit 0.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(process.argv[2] ?? 'src');
if (!fs.existsSync(root)) {
  console.error(`check-imports: no directory ${root}`);
  process.exit(2);
}

/** Every .ts file under root, as a path relative to root with forward slashes. */
function listFiles(dir, out = []) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) listFiles(p, out);
    else if (/\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(path.relative(root, p).split(path.sep).join('/'));
  }
  return out;
}

const files = listFiles(root).sort();
const known = new Set(files);

const IMPORT_PATTERNS = [
  // import … from '…', import type … from '…', export … from '…' (over several lines)
  /(?:^|\n)[ \t]*(?:import|export)\b[^'"`;]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]/g,
  // import './side-effect.js'
  /(?:^|\n)[ \t]*import\s*['"](\.{1,2}\/[^'"]+)['"]/g,
  // import('./lazy.js')
  /\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g,
];

/** The file an import specifier names, relative to root, or undefined when it is outside src/. */
function resolve(from, spec) {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec)).replace(/\.(js|mjs|ts)$/, '');
  for (const c of [`${base}.ts`, `${base}.tsx`, `${base}/index.ts`]) if (known.has(c)) return c;
  return undefined;
}

/** file → [{ to, line }] */
const graph = new Map();
for (const f of files) {
  const text = fs.readFileSync(path.join(root, f), 'utf8');
  const edges = [];
  for (const re of IMPORT_PATTERNS) {
    for (const m of text.matchAll(re)) {
      const to = resolve(f, m[1]);
      if (!to) continue;
      const at = m.index + m[0].indexOf(m[1]);
      edges.push({ to, line: text.slice(0, at).split('\n').length });
    }
  }
  graph.set(f, edges);
}

const LAYERS = ['kernel', 'rules', 'areas', 'lists', 'app', 'server', 'entries'];

/** The layer of a file: its rank in LAYERS. */
function layerOf(f) {
  if (f.startsWith('kernel/') || f === 'config.ts') return 0;
  if (f.startsWith('sandbox/rules/')) return 1;
  if (f === 'areas.ts' || f === 'openapi-schemas.ts' || f.startsWith('dashboard/')) return 3;
  if (areaOf(f) !== undefined) return 2;
  if (f === 'app.ts') return 4;
  if (f === 'server.ts') return 5;
  if (f === 'main.ts' || f === 'index.ts' || f === 'testing.ts' || f.startsWith('cli/')) return 6;
  return undefined;
}

/** The area folder of a file of layer 2 (api/<area>/…, sandbox/<area>/…, operator/<area>/…), else undefined. */
function areaOf(f) {
  const m = /^((?:api|sandbox|operator)\/[^/]+)\//.exec(f);
  return m && m[1] !== 'sandbox/rules' ? m[1] : undefined;
}

const isSurface = (f) => areaOf(f) !== undefined && /\/(routes|pages)\.ts$/.test(f) && f.split('/').length === 3;

const problems = [];
const where = (f, line) => `src/${f}:${line}`;

for (const f of files) {
  const layer = layerOf(f);
  if (layer === undefined) problems.push(`layer: src/${f} is in no layer (place it, or add its folder to the layers of scripts/check-imports.mjs)`);
}

for (const [f, edges] of graph) {
  const from = layerOf(f);
  for (const { to, line } of edges) {
    const target = layerOf(to);
    if (from !== undefined && target !== undefined && target > from) {
      problems.push(`upward: ${where(f, line)} imports src/${to} (${LAYERS[from]} → ${LAYERS[target]}: dependencies point down)`);
    }
    const a = areaOf(f);
    const b = areaOf(to);
    const otherArea = target === from && b !== a;
    if (a !== undefined && isSurface(f) && (otherArea || target === 1)) {
      problems.push(`routes: ${where(f, line)} imports src/${to} (an area's routes.ts/pages.ts imports only its own area and the kernel; call your own service, re-export a shape from your own schemas.ts)`);
    }
    if (b !== undefined && isSurface(to) && a !== undefined && a !== b) {
      problems.push(`surface: ${where(f, line)} imports src/${to} (another area's routes; cross-area use goes service → service)`);
    }
  }
}

// Registration: every area with an HTTP surface is in the list.
const listed = new Set((graph.get('areas.ts') ?? []).map((e) => e.to));
for (const area of new Set(files.filter(isSurface).map(areaOf))) {
  const registration = `${area}/area.ts`;
  if (!known.has(registration)) problems.push(`registered: src/${area}/ has routes or pages but no area.ts exporting its registration (kernel/area.ts)`);
  else if (!listed.has(registration)) problems.push(`registered: src/${registration} is not in the list of src/areas.ts`);
}

// Circles: Tarjan's strongly connected components (iterative, so deep trees do not overflow).
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
let next = 0;
for (const start of files) {
  if (index.has(start)) continue;
  const work = [[start, 0]];
  index.set(start, next);
  low.set(start, next++);
  stack.push(start);
  onStack.add(start);
  while (work.length > 0) {
    const top = work[work.length - 1];
    const [v, i] = top;
    const edges = graph.get(v);
    if (i < edges.length) {
      top[1]++;
      const w = edges[i].to;
      if (!index.has(w)) {
        index.set(w, next);
        low.set(w, next++);
        stack.push(w);
        onStack.add(w);
        work.push([w, 0]);
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
      continue;
    }
    work.pop();
    if (work.length > 0) {
      const parent = work[work.length - 1][0];
      low.set(parent, Math.min(low.get(parent), low.get(v)));
    }
    if (low.get(v) === index.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      const self = graph.get(v).some((e) => e.to === v);
      if (component.length > 1 || self) {
        const members = new Set(component);
        const inside = component
          .sort()
          .flatMap((m) => graph.get(m).filter((e) => members.has(e.to)).map((e) => `${where(m, e.line)} → src/${e.to}`));
        problems.push(`circle: ${component.length} files import each other:\n    ${inside.join('\n    ')}`);
      }
    }
  }
}

if (problems.length > 0) {
  console.error(`check-imports: ${problems.length} broken import rule(s) in ${path.relative(process.cwd(), root) || '.'} (scripts/check-imports.mjs states the rules)`);
  for (const p of problems) console.error(`  ${p}`);
  process.exit(1);
}
console.log(`check-imports: ${files.length} files, ${[...graph.values()].reduce((n, e) => n + e.length, 0)} imports, no broken rule`);
