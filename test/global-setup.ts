import { spawnSync } from 'node:child_process';
import pg from 'pg';

// Test schemas on PostgreSQL are dropped by the test that made them; a run that crashes
// leaves its schema behind. Before a run, drop test schemas older than an hour (never a
// younger one: another run may be using it).

const MAX_AGE_MS = 60 * 60_000;

export default async function setup(): Promise<void> {
  // The command (bin/payments-service.js) runs the bundle and builds it when stale: build it
  // once here, so the CLI tests' stderr holds only what the commands print.
  spawnSync(process.execPath, ['scripts/bundle.mjs'], { stdio: 'ignore' });
  const url = process.env.TEST_DATABASE_URL;
  if (!url) return;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(`select schema_name as name from information_schema.schemata where schema_name like 't\\_%'`);
    const now = Date.now();
    for (const { name } of rows) {
      const stamp = /^t_([0-9a-z]+)_[0-9a-f]+$/.exec(name)?.[1];
      const born = stamp ? parseInt(stamp, 36) : 0; // older unstamped names are abandoned too
      if (now - born > MAX_AGE_MS) await client.query(`drop schema if exists "${name}" cascade`);
    }
  } finally {
    await client.end();
  }
}
