#!/usr/bin/env node
// The payments-service command: runs the built bundle, dist/bundle/main.js (one module:
// starts in a fraction of a second). When the bundle is missing, or in a checkout older than
// the sources (an edit), it is built first, saying so on stderr.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bundle = join(root, 'dist', 'bundle', 'main.js');

function newest(path) {
  const st = statSync(path, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return st.mtimeMs;
  let n = 0;
  for (const name of readdirSync(path)) n = Math.max(n, newest(join(path, name)));
  return n;
}

// Only a checkout (it has package-lock.json, which npm never packs) rebuilds a stale bundle:
// an installed package runs the bundle it ships (npm dates its files at extraction, in no
// useful order) and never writes into its install folder.
const built = statSync(bundle, { throwIfNoEntry: false })?.mtimeMs ?? 0;
const checkout = existsSync(join(root, 'src')) && existsSync(join(root, 'package-lock.json'));
const sources = checkout ? ['src', 'package.json', 'scripts/bundle.mjs'].map((p) => newest(join(root, p))) : [0];
if (built === 0 || (checkout && Math.max(...sources) >= built)) {
  const r = spawnSync(process.execPath, [join(root, 'scripts', 'bundle.mjs')], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
const { runCli } = await import(pathToFileURL(bundle).href);
runCli(process.argv.slice(2));
