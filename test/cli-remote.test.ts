import { execFile, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, DEFAULT_SECRET, DEFAULT_TOKEN_ID, makeApp, STORE, type TestApp } from './helpers.js';

// The command line's commands that talk to a running server (seed, reset, clock advance,
// webhooks tail, requests tail), run for real against a listening test server; and the
// usage when run with no command.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'payments-service.js');

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

describe(`payments-service remote commands (${STORE})`, { timeout: 120_000 }, () => {
  let t: TestApp;
  let url: string;
  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
    const e: NodeJS.ProcessEnv = { ...process.env, PAYMENTS_URL: url, PAYMENTS_API_TOKEN_ID: DEFAULT_TOKEN_ID, PAYMENTS_API_CLIENT_SECRET: DEFAULT_SECRET, ...extra };
    delete e.DATABASE_URL;
    return e;
  };
  const cli = (args: string[], extra: Record<string, string> = {}): Promise<Result> =>
    new Promise((resolve) => {
      execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: env(extra), timeout: 60_000 }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0;
        resolve({ code, stdout, stderr });
      });
    });

  beforeAll(async () => {
    t = await makeApp();
    url = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => t.close());

  it('prints the usage on stderr and exits 2 when run with no command (it no longer starts a server)', async () => {
    const r = await cli([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/Usage: payments-service <command>/);
    for (const c of ['seed', 'reset \\[--all\\]', 'clock advance <duration>', 'snapshot save <name>', 'snapshot restore <name>', 'webhooks tail', 'requests tail']) expect(r.stderr).toMatch(new RegExp(c));
  });

  it('seed creates the demo data set through the API: customers in several states, accounts, completed, failed and pending payments, deliveries', async () => {
    const r = await cli(['seed']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { customers: Array<{ status: string }>; internalAccounts: string[]; externalAccounts: string[]; transactions: Array<{ id: string; expected: string }> };
    expect(out.customers.length).toBe(4);
    expect(new Set(out.customers.map((c) => c.status)).size).toBeGreaterThan(1);
    expect(out.customers.map((c) => c.status)).toContain('APPROVED');
    expect(out.internalAccounts.length).toBeGreaterThanOrEqual(3);
    expect(out.externalAccounts.length).toBe(3);
    for (const tx of out.transactions) {
      const got = await t.call('GET', `/transactions/${encodeURIComponent(tx.id)}`);
      expect(got.statusCode, got.body).toBe(200);
      expect(got.json().status, tx.expected).toBe(tx.expected);
    }
    const deliveries = await t.call('GET', '/sandbox/webhook-deliveries?limit=100');
    expect(deliveries.json().data.length).toBeGreaterThan(5);
  });

  it('clock advance takes a duration; reset empties the platform; reset --all needs the operator key', async () => {
    const before = (await t.call('GET', '/sandbox/clock')).json().offsetSeconds as number;
    const adv = await cli(['clock', 'advance', '15m']);
    expect(adv.code, adv.stderr).toBe(0);
    expect(JSON.parse(adv.stdout).offsetSeconds).toBe(before + 900);
    const bad = await cli(['clock', 'advance', 'soon']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/clock advance needs a duration/);

    const reset = await cli(['reset']);
    expect(reset.code, reset.stderr).toBe(0);
    expect(JSON.parse(reset.stdout).platformIds).toEqual([t.running.bootstrap.platform.id]);
    expect((await t.call('GET', '/customers')).json().data).toEqual([]);

    const noKey = await cli(['reset', '--all']);
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/PAYMENTS_ADMIN_KEY/);
    const all = await cli(['reset', '--all'], { PAYMENTS_ADMIN_KEY: ADMIN_KEY });
    expect(all.code, all.stderr).toBe(0);
    expect(JSON.parse(all.stdout).platformIds).toContain(t.running.bootstrap.platform.id);

    const wrong = await cli(['reset'], { PAYMENTS_API_CLIENT_SECRET: 'wrong' });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/401 UNAUTHORIZED/);
    const down = await cli(['reset'], { PAYMENTS_URL: 'http://127.0.0.1:1' });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot reach the server/);
  });

  it('faults add, list and clear manage the platform\'s fault rules; the API\'s refusal is reported', async () => {
    const added = await cli(['faults', 'add', '--kind', 'internal_error', '--operation', 'createCustomer', '--count', '2']);
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    const rule = JSON.parse(added.stdout) as { id: string; kind: string; remaining: number };
    expect(rule).toMatchObject({ kind: 'INTERNAL_ERROR', remaining: 2 });
    const faulted = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Cli Fault' });
    expect(faulted.statusCode).toBe(500);
    const second = await cli(['faults', 'add', '--kind', 'DELAY', '--operation', 'GET /customers', '--duration', '2m', '--fraction', '0.5', '--delay-ms', '10']);
    expect(second.code, second.stderr).toBe(0);
    const listed = JSON.parse((await cli(['faults', 'list'])).stdout) as { data: Array<{ id: string; remaining: number | null; durationSeconds: number | null }> };
    expect(listed.data.map((f) => [f.remaining, f.durationSeconds])).toEqual([[1, null], [null, 120]]);
    const bad = await cli(['faults', 'add', '--kind', 'DELAY', '--operation', 'nothing', '--count', '1']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/400 INVALID_INPUT.*operation.*delayMs/);
    const usage = await cli(['faults', 'add', '--count', 'x']);
    expect(usage.code).toBe(2);
    const one = await cli(['faults', 'clear', rule.id]);
    expect(one.code, one.stderr).toBe(0);
    expect(JSON.parse((await cli(['faults', 'list'])).stdout).data).toHaveLength(1);
    const all = await cli(['faults', 'clear']);
    expect(JSON.parse(all.stdout)).toEqual({ deleted: 1 });
    expect((await t.call('GET', '/sandbox/faults')).json().data).toEqual([]);
  });
  it('snapshot save | list | restore | delete, and --all for the whole store with the operator key', async () => {
    const customers = async () => ((await t.call('GET', '/customers')).json() as { totalCount: number }).totalCount;
    const before = await customers();
    const save = await cli(['snapshot', 'save', 'cli-snap']);
    expect(save.code, save.stderr).toBe(0);
    expect(JSON.parse(save.stdout)).toMatchObject({ name: 'cli-snap' });
    const again = await cli(['snapshot', 'save', 'cli-snap']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/409 CONFLICT.*replace=true/);
    const list = await cli(['snapshot', 'list']);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as Array<{ name: string }>).map((s) => s.name)).toContain('cli-snap');

    const made = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'After Snap', currencies: ['USD'] });
    expect(made.statusCode, made.body).toBe(201);
    expect(await customers()).toBe(before + 1);
    const restore = await cli(['snapshot', 'restore', 'cli-snap']);
    expect(restore.code, restore.stderr).toBe(0);
    expect(JSON.parse(restore.stdout)).toMatchObject({ name: 'cli-snap' });
    expect(await customers()).toBe(before);

    const del = await cli(['snapshot', 'delete', 'cli-snap']);
    expect(del.code, del.stderr).toBe(0);
    expect(del.stdout).toMatch(/Deleted cli-snap/);

    expect((await cli(['snapshot', 'save', 'whole', '--all'])).stderr).toMatch(/PAYMENTS_ADMIN_KEY/);
    const whole = await cli(['snapshot', 'save', 'whole', '--all'], { PAYMENTS_ADMIN_KEY: ADMIN_KEY });
    expect(whole.code, whole.stderr).toBe(0);
    await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'After Whole', currencies: ['USD'] });
    const back = await cli(['snapshot', 'restore', 'whole', '--all'], { PAYMENTS_ADMIN_KEY: ADMIN_KEY });
    expect(back.code, back.stderr).toBe(0);
    expect(await customers()).toBe(before);
    expect((await t.call('GET', '/admin/snapshots', undefined, { authorization: `Bearer ${ADMIN_KEY}` })).json().data.map((s: { name: string }) => s.name)).toEqual(['whole']);
  }, 240_000);

  it('requests tail and webhooks tail follow live until interrupted', async () => {
    const follow = (what: string) => {
      const child = spawn(process.execPath, [BIN, what, 'tail'], { cwd: ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      return { child, out: () => out };
    };
    const requests = follow('requests');
    const webhooks = follow('webhooks');
    try {
      const waitFor = async (cond: () => boolean) => {
        const deadline = Date.now() + 30_000;
        while (!cond()) {
          if (Date.now() > deadline) throw new Error(`not seen: ${requests.out()} / ${webhooks.out()}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      await new Promise((r) => setTimeout(r, 1500));
      await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Tail Person', currencies: ['USD'] }, { 'idempotency-key': 'tail-key' });
      await waitFor(() => /POST\s+201\s+[\d.]+ms\s+\/2025-10-13\/customers\s+key=tail-key/.test(requests.out()));
      const account = (await t.call('GET', '/platform/internal-accounts')).json().data[0].id as string;
      const funded = await t.call('POST', `/sandbox/internal-accounts/${encodeURIComponent(account)}/fund`, { amount: 100 });
      expect(funded.statusCode, funded.body).toBe(200);
      await waitFor(() => /INTERNAL_ACCOUNT\.BALANCE_UPDATED/.test(webhooks.out()));
    } finally {
      requests.child.kill('SIGINT');
      webhooks.child.kill('SIGINT');
    }
  });
});
