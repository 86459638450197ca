#!/usr/bin/env node
// The payments-service command. Runs the compiled build when present, the TypeScript
// sources (through tsx) otherwise.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'dist', 'src', 'main.js');
let mod;
if (existsSync(built)) {
  mod = await import(built);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  mod = await import(join(root, 'src', 'main.ts'));
}
mod.main(process.argv.slice(2))
  .then((code) => {
    if (code >= 0) process.exit(code);
  })
  .catch((err) => {
    process.stderr.write(`payments-service: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
