// The server as one file, dist/bundle/main.js: `npm start` builds it (about half a second)
// and runs it; `npm run build` builds it after tsc.
//
// Started from dist/src/main.js, Node resolves, reads and links some 800 ES modules one by
// one (typebox alone is 373 files, kysely 262), which was most of the start-up time. The
// bundle holds our sources and every ES-module dependency in one module; the CommonJS
// dependencies (fastify, ajv, the swagger plugins, better-sqlite3, pg) stay outside and
// load from node_modules as before: the bundle must live under the project so that they
// resolve (dist/ does). Same code, same behaviour; bench/README.md has the figures.
//
// Without --force it does nothing when the bundle is newer than everything it is made of
// (src/, package.json, the lock files, this script): a restart costs no rebuild.
//
// Beside it, dist/bundle/index.js: the package entry (src/index.ts, the helpers a platform
// imports, such as verifyWebhookSignature). `prepare` runs this script, so the entry exists
// right after `npm install` of a checkout or a git dependency, and before `npm pack`. And
// dist/bundle/testing.js: the testing entry (src/testing.ts, `payments-service/testing`), with
// its declarations, dist/bundle/testing.d.ts (self-contained: its types import only node:http),
// made by TypeScript's per-file declaration emit when TypeScript is installed (it is where a
// tarball is packed; a production-only install that runs the server does not need them).
//
//   node scripts/bundle.mjs [--outfile dist/bundle/main.js] [--force]

import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: { outfile: { type: 'string', default: join(ROOT, 'dist', 'bundle', 'main.js') }, force: { type: 'boolean', default: false } },
});
const outfile = resolve(values.outfile);

/** The newest modification time among the bundle's inputs, in ms. */
function newestInput() {
  let newest = 0;
  const visit = (path) => {
    const st = statSync(path, { throwIfNoEntry: false });
    if (!st) return;
    if (st.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
    else newest = Math.max(newest, st.mtimeMs);
  };
  for (const p of ['src', 'package.json', 'package-lock.json', 'node_modules/.package-lock.json', 'scripts/bundle.mjs']) visit(join(ROOT, p));
  return newest;
}

const entryfile = join(dirname(outfile), 'index.js');
const testingfile = join(dirname(outfile), 'testing.js');
const built = [outfile, `${outfile}.map`, entryfile, testingfile].every((f) => existsSync(f));
if (!values.force && built && Math.min(...[outfile, entryfile, testingfile].map((f) => statSync(f).mtimeMs)) > newestInput()) process.exit(0);

// Feedback while it builds (the first `npm start`, or after an edit): on stderr, so stdout
// stays the server's JSON log lines.
process.stderr.write(`payments-service: building the server bundle (${outfile.replace(`${ROOT}/`, '')}), a few seconds on the first start...\n`);
const startedAt = Date.now();
const { build } = await import('esbuild');

// A dependency is bundled when it is an ES module package; CommonJS ones stay external
// (bundled into an ES module they would need require shims, and some read files next to
// their own sources at run time: swagger-ui's static assets, better-sqlite3's addon).
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const external = Object.keys(pkg.dependencies ?? {}).filter((name) => {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8'));
  return manifest.type !== 'module' || name === 'tsx';
});

// Written beside the target, then renamed over it: a server starting meanwhile (two
// `npm start` at once) reads the old file or the new one, never half of one.
const options = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: external.flatMap((name) => [name, `${name}/*`]),
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
  write: false,
};
const results = await Promise.all([
  build({ ...options, entryPoints: [join(ROOT, 'src', 'main.ts')], outfile }),
  build({ ...options, entryPoints: [join(ROOT, 'src', 'index.ts')], outfile: entryfile }),
  build({ ...options, entryPoints: [join(ROOT, 'src', 'testing.ts')], outfile: testingfile }),
]);
mkdirSync(dirname(outfile), { recursive: true });
// The maps first: the code names them.
const files = results.flatMap((r) => r.outputFiles).sort((a, b) => Number(b.path.endsWith('.map')) - Number(a.path.endsWith('.map')));
for (const file of files) {
  const temp = `${file.path}.${process.pid}.tmp`;
  writeFileSync(temp, file.contents);
  renameSync(temp, file.path);
}
try {
  const ts = createRequire(import.meta.url)('typescript');
  const source = join(ROOT, 'src', 'testing.ts');
  const out = ts.transpileDeclaration(readFileSync(source, 'utf8'), {
    fileName: source,
    reportDiagnostics: true,
    compilerOptions: { isolatedDeclarations: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext },
  });
  if (out.diagnostics?.length) throw new Error(`src/testing.ts declarations: ${out.diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, ' ')).join('; ')}`);
  const dts = join(dirname(outfile), 'testing.d.ts');
  writeFileSync(`${dts}.${process.pid}.tmp`, out.outputText);
  renameSync(`${dts}.${process.pid}.tmp`, dts);
} catch (err) {
  if (err?.code !== 'MODULE_NOT_FOUND') throw err;
}
process.stderr.write(`payments-service: bundle ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s\n`);
