import { parseArgs } from 'node:util';
import { createPlatform, getPlatforms, ALL_PERMISSIONS } from './areas/platforms/service.js';
import { findDefaultPlatform, findPlatform } from './areas/platforms/store.js';
import { createToken, deleteToken, listTokens } from './areas/tokens/service.js';
import { API_VERSION, loadConfig } from './config.js';
import type { Permission } from './kernel/auth.js';
import { iso, systemClock } from './kernel/clock.js';
import { openStore, parseDatabaseUrl, type Store } from './kernel/db/connect.js';
import { migrate } from './kernel/db/migrations.js';
import { baseUrl, startServer } from './server.js';

// payments-service: `serve` runs the API (what `npm start` does); the other commands do
// what /admin and /tokens do, directly against the same store (DATABASE_URL).

const USAGE = `Usage: payments-service <command>

  serve                                   Run the API server (default)
  platform create --name <name> [--regulated] [--skip-verification-paperwork]
  platform list
  token create [--platform <id>] --name <name> [--permissions VIEW,TRANSACT,MANAGE]
  token list [--platform <id>]
  token revoke [--platform <id>] <tokenId>

Environment: DATABASE_URL, PORT, HOST, PAYMENTS_API_TOKEN_ID, PAYMENTS_API_CLIENT_SECRET,
PAYMENTS_ADMIN_KEY, LOG_LEVEL. Without --platform, token commands act on the default platform.`;

async function serve(): Promise<void> {
  const config = loadConfig();
  const running = await startServer(config);
  const { app, store, bootstrap } = running;
  const out = process.stdout;
  out.write(`Payments Service ${API_VERSION} sandbox\n`);
  out.write(`  API:    ${baseUrl(app)}\n`);
  out.write(`  Docs:   ${baseUrl(app).replace(`/${API_VERSION}`, '/docs')}\n`);
  out.write(`  Store:  ${store.describe}\n`);
  out.write(`  Platform: ${bootstrap.platform.id} (${bootstrap.platform.name})\n`);
  out.write(`  Operator API (/admin): ${config.adminKey ? 'enabled' : 'disabled (set PAYMENTS_ADMIN_KEY)'}\n`);
  if (bootstrap.generated) {
    out.write('\n  Generated API credentials for the default platform (shown once; store them now):\n');
    out.write(`    PAYMENTS_API_TOKEN_ID=${bootstrap.generated.clientId}\n`);
    out.write(`    PAYMENTS_API_CLIENT_SECRET=${bootstrap.generated.clientSecret}\n\n`);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    running
      .close()
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        app.log.error({ err }, 'error during shutdown');
        process.exit(1);
      });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

async function withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(parseDatabaseUrl(loadConfig().databaseUrl));
  try {
    await migrate(store);
    return await fn(store);
  } finally {
    await store.close();
  }
}

async function platformId(store: Store, given: string | undefined): Promise<string> {
  if (given) {
    if (!(await findPlatform(store.db, given))) throw new Error(`No platform ${given}`);
    return given;
  }
  const def = await findDefaultPlatform(store.db);
  if (!def) throw new Error('No default platform yet: run `payments-service serve` once, or pass --platform');
  return def.id;
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export async function main(argv: string[]): Promise<number> {
  const [cmd = 'serve', sub, ...rest] = argv;
  if (cmd === 'serve') {
    await serve();
    return -1; // keep running
  }
  if (cmd === 'help' || cmd === '--help' || cmd === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      platform: { type: 'string' },
      permissions: { type: 'string' },
      regulated: { type: 'boolean' },
      'skip-verification-paperwork': { type: 'boolean' },
    },
  });
  if (cmd === 'platform' && sub === 'create') {
    if (!values.name) throw new Error('platform create needs --name');
    const created = await withStore((s) =>
      createPlatform(s.db, systemClock, { name: values.name!, regulated: values.regulated ?? false, skipVerificationPaperwork: values['skip-verification-paperwork'] ?? false }),
    );
    print(created);
    return 0;
  }
  if (cmd === 'platform' && sub === 'list') {
    print(await withStore((s) => getPlatforms(s.db)));
    return 0;
  }
  if (cmd === 'token' && sub === 'create') {
    if (!values.name) throw new Error('token create needs --name');
    const perms = (values.permissions ?? ALL_PERMISSIONS.join(',')).split(',').map((p) => p.trim().toUpperCase());
    const bad = perms.filter((p) => !ALL_PERMISSIONS.includes(p as Permission));
    if (bad.length > 0 || perms.length === 0) throw new Error(`--permissions takes VIEW, TRANSACT, MANAGE; got ${bad.join(', ')}`);
    print(await withStore(async (s) => createToken(s.db, await platformId(s, values.platform), iso(Date.now()), { name: values.name!, permissions: perms as Permission[] })));
    return 0;
  }
  if (cmd === 'token' && sub === 'list') {
    print(await withStore(async (s) => (await listTokens(s.db, await platformId(s, values.platform), {}, { limit: 100 })).data));
    return 0;
  }
  if (cmd === 'token' && sub === 'revoke') {
    const id = positionals[0];
    if (!id) throw new Error('token revoke needs the token id');
    await withStore(async (s) => deleteToken(s.db, await platformId(s, values.platform), id, iso(Date.now())));
    process.stdout.write(`Revoked ${id}\n`);
    return 0;
  }
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

const isEntry = process.argv[1] !== undefined && /main\.(ts|js)$/.test(process.argv[1]);
if (isEntry) {
  main(process.argv.slice(2))
    .then((code) => {
      if (code >= 0) process.exit(code);
    })
    .catch((err: unknown) => {
      process.stderr.write(`payments-service: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    });
}
