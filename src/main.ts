import { parseArgs } from 'node:util';
import { createPlatform, getPlatforms, ALL_PERMISSIONS } from './operator/platforms/service.js';
import { findDefaultPlatform, findPlatform } from './operator/platforms/store.js';
import { createToken, deleteToken, listTokens } from './api/tokens/service.js';
import { API_VERSION, loadConfig } from './config.js';
import type { Permission } from './kernel/auth.js';
import { iso, platformNowMs, systemClock } from './kernel/clock.js';
import { openStore, parseDatabaseUrl, type Store } from './kernel/db/connect.js';
import { migrate } from './kernel/db/migrations.js';
import { loadSealer } from './kernel/sealed.js';
import { rotateSecret, RotationRefused } from './kernel/rotate-secret.js';
import { readFileSync } from 'node:fs';
import { baseUrl, type Running, startServer } from './server.js';
import { call, parseDuration, RemoteError, remoteCaller, remoteOf, tailRequests, tailWebhooks } from './cli/remote.js';
import { seed } from './sandbox/seed/data-set.js';

// payments-service: `serve` runs the API (what `npm start` does); the other commands do
// what /admin and /tokens do, directly against the same store (DATABASE_URL).

const USAGE = `Usage: payments-service <command>

  serve                                   Run the API server (banner on stderr)
  seed                                    Create the demo data set on the platform, through the API
  reset [--all]                           Reset the platform's sandbox (--all: every platform, PAYMENTS_ADMIN_KEY)
  clock advance <duration>                Advance the platform's sandbox clock (90, 90s, 15m, 2h, 1d)
  snapshot save <name> [--replace] [--all] Save the platform's sandbox under a name (--all: the whole store, PAYMENTS_ADMIN_KEY)
  snapshot restore <name> [--all]         Put the platform (--all: the whole store) back as the snapshot saved it
  snapshot list [--all]                   List the snapshots
  snapshot delete <name> [--all]          Delete a snapshot
  webhooks tail [--json]                  Follow the platform's webhook deliveries live
  requests tail [--json]                  Follow the platform's request log live
  faults add --kind <kind> [--operation <operationId | "METHOD /path">] (--count <n> | --duration <d> [--fraction <f>])
             [--delay-ms <ms>] [--retry-after <s>]
                                          Add a sandbox fault rule (docs/sandbox/faults.md)
  faults list                             The platform's active fault rules
  faults clear [<faultId>]                Remove one fault rule, or all of them
  platform create --name <name> [--regulated] [--skip-verification-paperwork]
  platform list
  token create [--platform <id>] --name <name> [--permissions VIEW,TRANSACT,MANAGE]
  token list [--platform <id>]
  token revoke [--platform <id>] <tokenId>
  rotate-secret [--new-secret-file <path>] [--allow-unreadable]
                                          Re-seal every value sealed at rest under a new server
                                          secret (PAYMENTS_NEW_SECRET_KEY, the file, or generated),
                                          in one transaction; stop the servers first

Environment: DATABASE_URL, PORT, HOST, PAYMENTS_API_TOKEN_ID, PAYMENTS_API_CLIENT_SECRET,
PAYMENTS_ADMIN_KEY, PAYMENTS_SECRET_KEY, PAYMENTS_NEW_SECRET_KEY (rotate-secret), PAYMENTS_WEBHOOK_ALLOW_PRIVATE, PAYMENTS_DATA_KEY (deprecated),
LOG_LEVEL. Without --platform, token commands act on the default platform.
seed, reset, clock, snapshot, webhooks, requests and faults talk to a running server: --url (or PAYMENTS_URL, else
http://127.0.0.1:$PORT), credentials PAYMENTS_API_TOKEN_ID / PAYMENTS_API_CLIENT_SECRET
(or --token-id / --client-secret).`;

/** The start banner's line on the server secret that seals values at rest (kernel/sealed.ts). */
function secretSourceText(running: Running): string {
  switch (running.secretSource) {
    case 'PAYMENTS_SECRET_KEY':
      return 'PAYMENTS_SECRET_KEY';
    case 'PAYMENTS_DATA_KEY':
      return 'PAYMENTS_DATA_KEY (deprecated: set PAYMENTS_SECRET_KEY)';
    case 'data-directory':
      return `kept in ${running.secretFile} (set PAYMENTS_SECRET_KEY to keep it outside)`;
    case 'memory':
      return 'generated for this in-memory store (set PAYMENTS_SECRET_KEY to keep it)';
    case 'store':
      return 'kept in the store (set PAYMENTS_SECRET_KEY to keep it outside)';
  }
}

async function serve(): Promise<void> {
  const config = loadConfig();
  const running = await startServer(config);
  const { app, store, bootstrap } = running;
  // The banner goes to stderr: stdout stays the logger's JSON lines.
  const out = process.stderr;
  out.write(`Payments Service ${API_VERSION} sandbox\n`);
  out.write(`  API:    ${baseUrl(app)}\n`);
  out.write(`  Docs:   ${baseUrl(app).replace(`/${API_VERSION}`, '/docs')}\n`);
  out.write(`  Store:  ${store.describe}\n`);
  out.write(`  Platform: ${bootstrap.platform.id} (${bootstrap.platform.name})\n`);
  out.write(`  Operator API (/admin): ${config.adminKey ? 'enabled' : 'disabled (set PAYMENTS_ADMIN_KEY)'}\n`);
  out.write(`  Server secret: ${secretSourceText(running)}\n`);
  out.write(`  Webhook targets: private networks ${config.webhookAllowPrivate ? 'allowed' : 'refused'} (PAYMENTS_WEBHOOK_ALLOW_PRIVATE)\n`);
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

/** The platform a token command acts on, and now on its sandbox clock. */
async function targetPlatform(store: Store, given: string | undefined): Promise<{ id: string; at: string }> {
  const row = given ? await findPlatform(store.db, given) : await findDefaultPlatform(store.db);
  if (!row) throw new Error(given ? `No platform ${given}` : 'No default platform yet: run `payments-service serve` once, or pass --platform');
  return { id: row.id, at: iso(platformNowMs(systemClock, Number(row.clock_offset_ms))) };
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A command line this program cannot run: reported with the usage text, exit status 2. */
class UsageError extends Error {}

export async function main(argv: string[]): Promise<number> {
  if (argv.length === 0) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const [cmd = 'serve', ...more] = argv;
  // An option right after the command (`reset --all`) is not a subcommand.
  const sub = more[0]?.startsWith('-') ? undefined : more.shift();
  const rest = more;
  if (cmd === 'serve') {
    await serve();
    return -1; // keep running
  }
  if (cmd === 'help' || cmd === '--help' || cmd === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  try {
    if (cmd === 'rotate-secret') return await rotate(argv.slice(1));
    return await run(cmd, sub, rest);
  } catch (err) {
    if (err instanceof RotationRefused) {
      process.stderr.write(`payments-service rotate-secret: ${err.message}\n`);
      return 1;
    }
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`payments-service: ${err.message}\n\n${USAGE}\n`);
    return 2;
  }
}

/**
 * rotate-secret: the current secret is the configured one (PAYMENTS_SECRET_KEY, else the data
 * directory's file or the store's key, as at start); the new one is PAYMENTS_NEW_SECRET_KEY,
 * or the content of --new-secret-file, or generated (docs/reliability.md).
 */
async function rotate(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args, options: { 'new-secret-file': { type: 'string' }, 'allow-unreadable': { type: 'boolean' } } }));
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const config = loadConfig();
  const file = values['new-secret-file'];
  const newSecret = file !== undefined ? readFileSync(file, 'utf8') : process.env.PAYMENTS_NEW_SECRET_KEY;
  const result = await withStore((s) => rotateSecret(s, { secretKey: config.secretKey, dataKey: config.dataKey }, { newSecret, allowUnreadable: values['allow-unreadable'] ?? false }));
  const out = process.stdout;
  const r = result.resealed;
  out.write(`Re-sealed under the new secret (key id ${result.newKeyId}), in one transaction: ${r.webhookKeys} webhook signing key(s), ${r.identifiers} identifier(s), ${r.storedAnswers} stored answer(s)`);
  out.write(result.unreadable > 0 ? `; ${result.unreadable} value(s) no key at hand opens were left as they were.\n` : '.\n');
  if (result.keptIn === 'data-directory') out.write(`The new secret is in ${result.secretFile}.\n`);
  else if (result.keptIn === 'store') out.write('The new key is kept in the store (data_keys).\n');
  else if (result.generatedSecret) out.write(`Start the servers with this new secret (shown once):\n  PAYMENTS_SECRET_KEY=${result.generatedSecret}\n`);
  else out.write('Start the servers with the new secret as PAYMENTS_SECRET_KEY (and without PAYMENTS_DATA_KEY).\n');
  return 0;
}

async function run(cmd: string, sub: string | undefined, rest: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        name: { type: 'string' },
        platform: { type: 'string' },
        permissions: { type: 'string' },
        regulated: { type: 'boolean' },
        'skip-verification-paperwork': { type: 'boolean' },
        url: { type: 'string' },
        'token-id': { type: 'string' },
        'client-secret': { type: 'string' },
        all: { type: 'boolean' },
        json: { type: 'boolean' },
        kind: { type: 'string' },
        operation: { type: 'string' },
        count: { type: 'string' },
        fraction: { type: 'string' },
        duration: { type: 'string' },
        'delay-ms': { type: 'string' },
        'retry-after': { type: 'string' },
        replace: { type: 'boolean' },
      },
    });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  if (cmd === 'platform' && sub === 'create') {
    if (!values.name) throw new UsageError('platform create needs --name');
    const created = await withStore(async (s) =>
      createPlatform(s.db, systemClock, (await loadSealer(s, { secretKey: loadConfig().secretKey, dataKey: loadConfig().dataKey }, new Date().toISOString())).sealer, { name: values.name!, regulated: values.regulated ?? false, skipVerificationPaperwork: values['skip-verification-paperwork'] ?? false }),
    );
    print(created);
    return 0;
  }
  if (cmd === 'platform' && sub === 'list') {
    print(await withStore((s) => getPlatforms(s.db)));
    return 0;
  }
  if (cmd === 'token' && sub === 'create') {
    if (!values.name) throw new UsageError('token create needs --name');
    const perms = (values.permissions ?? ALL_PERMISSIONS.join(',')).split(',').map((p) => p.trim().toUpperCase());
    const bad = perms.filter((p) => !ALL_PERMISSIONS.includes(p as Permission));
    if (bad.length > 0 || perms.length === 0) throw new UsageError(`--permissions takes VIEW, TRANSACT, MANAGE; got ${bad.map((p) => JSON.stringify(p)).join(', ')}`);
    print(
      await withStore(async (s) => {
        const target = await targetPlatform(s, values.platform);
        return createToken(s.db, target.id, target.at, { name: values.name!, permissions: perms as Permission[] });
      }),
    );
    return 0;
  }
  if (cmd === 'token' && sub === 'list') {
    print(
      await withStore(async (s) => {
        const { id } = await targetPlatform(s, values.platform);
        const all: Awaited<ReturnType<typeof listTokens>>['data'] = [];
        for (let cursor: string | undefined; ; ) {
          const page = await listTokens(s.db, id, {}, { limit: 100, cursor });
          all.push(...page.data);
          if (!page.nextCursor) return all;
          cursor = page.nextCursor;
        }
      }),
    );
    return 0;
  }
  if (cmd === 'token' && sub === 'revoke') {
    const id = positionals[0];
    if (!id) throw new UsageError('token revoke needs the token id');
    await withStore(async (s) => {
      const target = await targetPlatform(s, values.platform);
      await deleteToken(s.db, target.id, id, target.at);
    });
    process.stdout.write(`Revoked ${id}\n`);
    return 0;
  }
  const remote = await runRemote(cmd, sub, values, positionals);
  if (remote !== undefined) return remote;
  throw new UsageError(`unknown command "${[cmd, sub].filter(Boolean).join(' ')}"`);
}

/** The commands that talk to a running server (src/cli/remote.ts); undefined when `cmd` is not one. */
async function runRemote(
  cmd: string,
  sub: string | undefined,
  values: {
    url?: string | undefined;
    'token-id'?: string | undefined;
    'client-secret'?: string | undefined;
    all?: boolean | undefined;
    json?: boolean | undefined;
    replace?: boolean | undefined;
  } & FaultOptions,
  positionals: string[],
): Promise<number | undefined> {
  const r = remoteOf(values);
  const guarded = async (fn: () => Promise<void>): Promise<number> => {
    try {
      await fn();
      return 0;
    } catch (err) {
      if (!(err instanceof RemoteError)) throw err;
      process.stderr.write(`payments-service: ${err.message}\n`);
      return 1;
    }
  };
  if (cmd === 'seed') {
    if (sub !== undefined) throw new UsageError(`seed takes no argument (got "${sub}")`);
    return guarded(async () => print(await seed(remoteCaller(r))));
  }
  if (cmd === 'reset') {
    if (sub !== undefined) throw new UsageError(`reset takes no argument (got "${sub}")`);
    return guarded(async () => print(await call(r, 'POST', values.all ? '/admin/sandbox/reset' : '/sandbox/reset')));
  }
  if (cmd === 'clock' && sub === 'advance') {
    const seconds = positionals[0] === undefined ? undefined : parseDuration(positionals[0]);
    if (seconds === undefined) throw new UsageError('clock advance needs a duration: seconds, or a number with s, m, h or d (15m, 2h)');
    return guarded(async () => print(await call(r, 'POST', '/sandbox/clock/advance', { seconds })));
  }
  if (cmd === 'faults' && sub === 'add') {
    const body = faultRuleOf(values);
    return guarded(async () => print(await call(r, 'POST', '/sandbox/faults', body)));
  }
  if (cmd === 'faults' && sub === 'list') return guarded(async () => print(await call(r, 'GET', '/sandbox/faults')));
  if (cmd === 'faults' && sub === 'clear') {
    const id = positionals[0];
    if (id === undefined) return guarded(async () => print(await call(r, 'DELETE', '/sandbox/faults')));
    return guarded(async () => {
      await call(r, 'DELETE', `/sandbox/faults/${encodeURIComponent(id)}`);
      print({ deleted: 1 });
    });
  }
  if (cmd === 'snapshot') {
    // --all: the operator's whole-store snapshots (/admin/snapshots, PAYMENTS_ADMIN_KEY).
    const base = values.all ? '/admin/snapshots' : '/sandbox/snapshots';
    const name = positionals[0];
    const named = (what: string) => {
      if (!name) throw new UsageError(`snapshot ${what} needs a name`);
      return `${base}/${encodeURIComponent(name)}`;
    };
    if (sub === 'save') {
      if (!name) throw new UsageError('snapshot save needs a name');
      return guarded(async () => print(await call(r, 'POST', `${base}${values.replace ? '?replace=true' : ''}`, { name })));
    }
    if (sub === 'restore') {
      const path = named('restore');
      return guarded(async () => print(await call(r, 'POST', `${path}/restore`)));
    }
    if (sub === 'list') return guarded(async () => print((await call<{ data: unknown[] }>(r, 'GET', base)).data));
    if (sub === 'delete') {
      const path = named('delete');
      return guarded(async () => {
        await call(r, 'DELETE', path);
        process.stdout.write(`Deleted ${name}\n`);
      });
    }
    throw new UsageError('snapshot takes save <name>, restore <name>, list or delete <name>');
  }
  if ((cmd === 'webhooks' || cmd === 'requests') && sub === 'tail') {
    const controller = new AbortController();
    process.once('SIGINT', () => controller.abort());
    return guarded(() => (cmd === 'webhooks' ? tailWebhooks : tailRequests)(r, { json: values.json ?? false, signal: controller.signal }));
  }
  return undefined;
}

interface FaultOptions {
  kind?: string | undefined;
  operation?: string | undefined;
  count?: string | undefined;
  fraction?: string | undefined;
  duration?: string | undefined;
  'delay-ms'?: string | undefined;
  'retry-after'?: string | undefined;
}

/** `faults add`'s options as the rule POST /sandbox/faults takes (the server checks the rule). */
function faultRuleOf(v: FaultOptions): Record<string, unknown> {
  if (!v.kind) throw new UsageError('faults add needs --kind (INTERNAL_ERROR, SERVICE_UNAVAILABLE, RATE_LIMITED, DELAY, COMMIT_THEN_DROP, WEBHOOK_DELAY, WEBHOOK_DUPLICATE, WEBHOOK_OUT_OF_ORDER)');
  const number = (name: string, text: string | undefined): number | undefined => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n)) throw new UsageError(`--${name} takes a number (got "${text}")`);
    return n;
  };
  const duration = v.duration === undefined ? undefined : parseDuration(v.duration);
  if (v.duration !== undefined && duration === undefined) throw new UsageError('--duration takes seconds, or a number with s, m, h or d (90s, 15m)');
  const rule: Record<string, unknown> = { kind: v.kind.toUpperCase() };
  if (v.operation !== undefined) rule.operation = v.operation;
  const fields: Array<[string, number | undefined]> = [
    ['count', number('count', v.count)],
    ['fraction', number('fraction', v.fraction)],
    ['durationSeconds', duration],
    ['delayMs', number('delay-ms', v['delay-ms'])],
    ['retryAfterSeconds', number('retry-after', v['retry-after'])],
  ];
  for (const [k, n] of fields) if (n !== undefined) rule[k] = n;
  return rule;
}

/** Run the command line and exit with its status (serve keeps the process alive). */
export function runCli(argv: string[]): void {
  main(argv)
    .then((code) => {
      if (code >= 0) process.exit(code);
    })
    .catch((err: unknown) => {
      process.stderr.write(`payments-service: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    });
}

const isEntry = process.argv[1] !== undefined && /main\.(ts|js)$/.test(process.argv[1]);
if (isEntry) runCli(process.argv.slice(2));
