// docs/operations.md, generated: every operation of the served OpenAPI document with the
// area folder whose routes.ts registers it, the docs pages that mention it and the test
// file that requests it; the sandbox's own extensions (`x-extension: true`) apart.
//
//   npm run docs:operations            write docs/operations.md
//   npm run docs:operations -- --check exit 1 when docs/operations.md is not what it would write
//   (--out <file>: another file to write or check)
//
// Everything is derived, nothing is listed by hand: the app is built in-process (SQLite in
// memory) and asked for its document; the registering file of each route comes from the
// call stack when Fastify announces the route (the `onRoute` hook, installed through
// Fastify's `fastify.initialization` diagnostics channel before any area registers), so
// regrouping the area folders needs no change here; the doc pages and test files come
// from searching docs/ and test/ at generation time.

import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { API_VERSION, loadConfig } from '../src/config.js';
import { ManualClock } from '../src/kernel/clock.js';
import { openStore } from '../src/kernel/db/connect.js';
import { startServer } from '../src/server.js';

const ROOT = resolve(import.meta.dirname, '..');
const PREFIX = `/${API_VERSION}`;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const OUT = 'docs/operations.md';

interface Operation {
  method: string; // upper case
  path: string; // as in the document: /customers/{customerId}
  operationId: string;
  summary: string;
  tag: string;
  extension: boolean;
  folder: string; // src/api/customers
  docs: string[]; // docs-relative pages
  tests: string[]; // root-relative test files, best first
}

type Doc = { paths: Record<string, Record<string, { operationId?: string; summary?: string; tags?: string[]; 'x-extension'?: boolean }>> };

/** The served document, and for each route (METHOD /path/{param}) the file that registered it. */
async function served(): Promise<{ doc: Doc; registeredBy: Map<string, string> }> {
  const registeredBy = new Map<string, string>();
  const src = join(ROOT, 'src') + sep;
  const onRoute = (route: RouteOptions): void => {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 200;
    const stack = new Error().stack ?? '';
    Error.stackTraceLimit = limit;
    const files = [...stack.matchAll(/\(?((?:file:\/\/)?\/[^():]+):\d+:\d+\)?$/gm)]
      .map((m) => (m[1]!.startsWith('file://') ? fileURLToPath(m[1]!) : m[1]!))
      .filter((f) => f.startsWith(src));
    // The innermost routes.ts on the stack (a helper that registers for it is not the area).
    const file = files.find((f) => f.endsWith(`${sep}routes.ts`)) ?? files[0];
    if (!file || !route.url.startsWith(`${PREFIX}/`)) return;
    const path = route.url.slice(PREFIX.length).replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    for (const m of [route.method].flat()) registeredBy.set(`${m.toUpperCase()} ${path}`, relative(ROOT, file).split(sep).join('/'));
  };
  const onInit = (message: unknown): void => {
    (message as { fastify: FastifyInstance }).fastify.addHook('onRoute', onRoute);
  };
  subscribe('fastify.initialization', onInit);
  try {
    const store = await openStore({ kind: 'sqlite', location: ':memory:' });
    const config = loadConfig({ PAYMENTS_API_TOKEN_ID: 'docs-token', PAYMENTS_API_CLIENT_SECRET: 'docs-secret', LOG_LEVEL: 'silent' });
    const running = await startServer(config, { store, clock: new ManualClock(0), listen: false, worker: false, logger: false });
    try {
      const res = await running.app.inject({ method: 'GET', url: `${PREFIX}/openapi.json` });
      if (res.statusCode !== 200) throw new Error(`GET ${PREFIX}/openapi.json answered ${res.statusCode}`);
      return { doc: res.json() as Doc, registeredBy };
    } finally {
      await running.close();
    }
  } finally {
    unsubscribe('fastify.initialization', onInit);
  }
}

function filesUnder(dir: string, suffix: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.endsWith(suffix)) out.push(join(d, e.name));
    }
  };
  walk(dir);
  return out.map((f) => relative(ROOT, f).split(sep).join('/'));
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A path as prose writes it: any parameter name (`{id}`, `:id`). */
function proseBody(path: string): string {
  return path
    .split('/')
    .map((seg) => (/^\{[^}]+\}$/.test(seg) ? '(?:\\{[^}/\\s]+\\}|:[A-Za-z]+)' : escape(seg)))
    .join('/');
}

/** Where a path starts in prose: not inside a longer path; with the version prefix or not. */
const PROSE_START = `(?<![\\w/{}.-])(?:${escape(PREFIX)})?`;

/** The path mentioned as itself. */
function docPattern(path: string): RegExp {
  return new RegExp(`${PROSE_START}${proseBody(path)}(?![\\w/{}-])`);
}

/** A wildcard mention of the path's family: `/sandbox/cards/{id}/simulate/*` for each simulator. */
function wildcardPattern(path: string): RegExp | undefined {
  const segs = path.split('/');
  const prefixes: string[] = [];
  for (let i = 2; i < segs.length; i++) prefixes.push(proseBody(segs.slice(0, i).join('/')));
  return prefixes.length > 0 ? new RegExp(`${PROSE_START}(?:${prefixes.join('|')})/\\*`) : undefined;
}

/** The path as a test requests it: a literal or a template (`${id}` or a literal id for a parameter). */
function testPattern(path: string): RegExp {
  const body = path
    .split('/')
    .map((seg) => (/^\{[^}]+\}$/.test(seg) ? '(?:\\$\\{[^}]*\\}|[^/\'"`?#\\s$]+)' : escape(seg)))
    .join('/');
  // Opened by a quote, by `${V}` (or any placeholder: a base URL) or by the version prefix;
  // closed by a quote, a query string, a fragment or a placeholder (a query built apart).
  return new RegExp(`(?:['"\`]|\\}|${escape(PREFIX)})${body}(?=['"\`?#]|\\$\\{)`, 'g');
}

function methodNear(text: string, at: number, method: string): boolean {
  const before = text.slice(Math.max(0, at - 80), at);
  return new RegExp(`['"\`]${method}['"\`]|\\.${method.toLowerCase()}\\(`).test(before);
}

export async function operationsTable(): Promise<string> {
  const { doc, registeredBy } = await served();
  const docPages = filesUnder(join(ROOT, 'docs'), '.md').filter((f) => f !== OUT);
  const docTexts = docPages.map((f) => [f, readFileSync(join(ROOT, f), 'utf8')] as const);
  const testFiles = filesUnder(join(ROOT, 'test'), '.ts');
  const testTexts = testFiles.map((f) => [f, readFileSync(join(ROOT, f), 'utf8')] as const);

  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const m of METHODS) {
      const op = item[m];
      if (!op) continue;
      const method = m.toUpperCase();
      const withMethod = new RegExp(`\\b${method} ${docPattern(path).source}`);
      const pathOnly = docPattern(path);
      let docs = docTexts.filter(([, t]) => withMethod.test(t)).map(([f]) => f);
      if (docs.length === 0) docs = docTexts.filter(([, t]) => pathOnly.test(t)).map(([f]) => f);
      const family = wildcardPattern(path);
      if (docs.length === 0 && family) docs = docTexts.filter(([, t]) => family.test(t)).map(([f]) => f);
      const scored: Array<{ file: string; score: number }> = [];
      for (const [file, text] of testTexts) {
        let withM = 0;
        let any = 0;
        for (const hit of text.matchAll(testPattern(path))) {
          any++;
          if (methodNear(text, hit.index, method)) withM++;
        }
        // A file that requests the path with this method first, then by how often.
        if (any > 0) scored.push({ file, score: withM > 0 ? 1_000_000 + withM : any });
      }
      scored.sort((a, b) => b.score - a.score || (a.file < b.file ? -1 : 1));
      const registered = registeredBy.get(`${method} ${path}`);
      ops.push({
        method,
        path,
        operationId: op.operationId ?? '',
        summary: op.summary ?? '',
        tag: op.tags?.[0] ?? '(untagged)',
        extension: op['x-extension'] === true,
        folder: registered ? dirname(registered) : '',
        docs: docs.map((f) => relative('docs', f).split(sep).join('/')),
        tests: scored.map((s) => s.file),
      });
    }
  }
  const order = (a: Operation, b: Operation): number =>
    a.tag.localeCompare(b.tag, 'en') || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0) || METHODS.indexOf(a.method.toLowerCase() as never) - METHODS.indexOf(b.method.toLowerCase() as never);
  const reference = ops.filter((o) => !o.extension).sort(order);
  const extensions = ops.filter((o) => o.extension).sort(order);

  const cell = (s: string): string => s.replace(/\|/g, '\\|');
  const row = (o: Operation): string => {
    const docs = o.docs.length > 0 ? o.docs.map((d) => `[${d.replace(/\.md$/, '')}](${d})`).join(', ') : '—';
    const test = o.tests.length > 0 ? `[${o.tests[0]!.replace(/^test\//, '')}](../${o.tests[0]})${o.tests.length > 1 ? ` (+${o.tests.length - 1})` : ''}` : '—';
    return `| ${o.method} | \`${o.path}\` | \`${o.operationId}\`: ${cell(o.summary)} | ${o.folder ? `\`${o.folder}\`` : '—'} | ${docs} | ${test} |`;
  };
  const table = (list: Operation[]): string[] => {
    const out: string[] = [];
    let tag: string | undefined;
    for (const o of list) {
      if (o.tag !== tag) {
        tag = o.tag;
        out.push('', `### ${tag}`, '', '| Method | Path | Operation | Area folder | Docs | Test file |', '|---|---|---|---|---|---|');
      }
      out.push(row(o));
    }
    return out;
  };
  const missing = (pick: (o: Operation) => boolean): string => {
    const list = ops.filter(pick).sort(order);
    return list.length === 0 ? 'none' : list.map((o) => `\`${o.method} ${o.path}\``).join(', ');
  };
  return [
    '# Operations',
    '',
    '<!-- Generated by scripts/operations-table.ts (npm run docs:operations) from the served OpenAPI',
    '     document: do not edit by hand. CI runs it with --check. -->',
    '',
    `Every operation of the served OpenAPI document (\`GET ${PREFIX}/openapi.json\`): ${reference.length} of the`,
    `${API_VERSION} reference and ${extensions.length} sandbox extensions (\`x-extension: true\`). For each: the area`,
    'folder whose `routes.ts` registers it, the docs pages that mention it (`METHOD /path`, else the',
    'path alone, else its family as `/prefix/*`) and the test file that requests it most (with this',
    'method first; "+N": other test files that request the path too). The operator API (`/admin`),',
    '`/healthz`, `/readyz`, `/metrics`, the dashboard and the hosted pages are outside the document',
    '(see [architecture.md](architecture.md)).',
    '',
    `Operations no docs page mentions: ${missing((o) => o.docs.length === 0)}.`,
    '',
    `Operations no test file requests by path (they may be covered through a client or a helper): ${missing((o) => o.tests.length === 0)}.`,
    '',
    '## Operations of the reference',
    ...table(reference),
    '',
    '## Sandbox extensions',
    '',
    `Served by the sandbox, not in the ${API_VERSION} reference: marked \`x-extension: true\` in the document.`,
    ...table(extensions),
    '',
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const check = argv.includes('--check');
  const at = argv.indexOf('--out');
  const out = resolve(ROOT, at >= 0 && argv[at + 1] ? argv[at + 1]! : OUT);
  const text = await operationsTable();
  if (!check) {
    writeFileSync(out, text);
    process.stdout.write(`${relative(ROOT, out)} written\n`);
    return 0;
  }
  let current = '';
  try {
    current = readFileSync(out, 'utf8');
  } catch {
    // absent: differs
  }
  if (current === text) {
    process.stdout.write(`${relative(ROOT, out)} is up to date\n`);
    return 0;
  }
  process.stderr.write(`${relative(ROOT, out)} is not what scripts/operations-table.ts generates: run npm run docs:operations and commit it\n`);
  return 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2));
}
