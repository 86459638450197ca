#!/usr/bin/env node
// The payments-service command: runs the TypeScript sources through tsx (a dependency),
// so it never runs a stale build.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register();
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { runCli } = await import(join(root, 'src', 'main.ts'));
runCli(process.argv.slice(2));
