import { existsSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { iso } from '../../src/kernel/clock.js';
import { emitEvent } from '../../src/kernel/events.js';
import { DEFAULT_AUTH, DEFAULT_SECRET, DEFAULT_TOKEN_ID, envelope, freshStore, makeApp, openSameSchema, sleep, STORE, type TestApp, V, waitFor } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { fund, newCustomer, otherPlatformAuth, quoteRequest, usdExternal } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';

// Faults on demand (issue 36; docs/sandbox/faults.md): rules through /sandbox/faults make a
// platform's chosen operations fail as the real service can, and its webhook deliveries
// misbehave; each faulted request is marked in the request log.

interface Fault {
  id: string;
  operation: string | null;
  kind: string;
  count: number | null;
  remaining: number | null;
  fraction: number | null;
  durationSeconds: number | null;
  expiresAt: string | null;
  delayMs: number | null;
  retryAfterSeconds: number | null;
  createdAt: string;
}

interface Logged {
  method: string;
  route: string | null;
  status: number;
  latencyMs: number;
  idempotencyKey: string | null;
  fault: { ruleId: string; kind: string } | null;
}

const CHROMIUM = '/usr/bin/chromium';
const CUSTOMER = { customerType: 'INDIVIDUAL', fullName: 'Faye Fault', currencies: ['USD'] };

async function addFault(t: TestApp, body: Record<string, unknown>, headers?: Record<string, string>): Promise<Fault> {
  const res = await t.call('POST', '/sandbox/faults', body, headers);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as Fault;
}

async function faults(t: TestApp, headers?: Record<string, string>): Promise<Fault[]> {
  const res = await t.call('GET', '/sandbox/faults', undefined, headers);
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { data: Fault[] }).data;
}

async function requestLog(t: TestApp): Promise<Logged[]> {
  return ((await t.call('GET', '/sandbox/requests')).json() as { data: Logged[] }).data;
}

async function customerCount(t: TestApp): Promise<number> {
  return (await t.store.db.selectFrom('customers').select('id').execute()).length;
}

// Ports of this task: 18120-18129 on SQLite, 18130-18139 on PostgreSQL (the two projects run side by side).
let nextPort = STORE === 'sqlite' ? 18120 : 18130;
async function listen(t: TestApp): Promise<string> {
  const port = nextPort++;
  await t.app.listen({ port, host: '127.0.0.1' });
  return `http://127.0.0.1:${port}${V}`;
}

describe(`faults on demand (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => {
    await t.close();
  });

  it('refuses an invalid rule naming every invalid field', async () => {
    const e = envelope(await t.call('POST', '/sandbox/faults', { operation: 'noSuchOperation', kind: 'DELAY', count: 2, durationSeconds: 5, retryAfterSeconds: 3 }), 400, 'INVALID_INPUT');
    const fields = (e.details!.errors as Array<{ field: string }>).map((x) => x.field).sort();
    expect(fields).toEqual(['delayMs', 'durationSeconds', 'operation', 'retryAfterSeconds']);
    const typed = envelope(await t.call('POST', '/sandbox/faults', { kind: 'EXPLODE', count: 0, fraction: 2 }), 400, 'INVALID_INPUT');
    const typedFields = (typed.details!.errors as Array<{ field: string }>).map((x) => x.field).join(' ');
    for (const f of ['kind', 'count', 'fraction']) expect(typedFields).toContain(f);
    const hook = envelope(await t.call('POST', '/sandbox/faults', { operation: 'createCustomer', kind: 'WEBHOOK_DUPLICATE' }), 400, 'INVALID_INPUT');
    expect((hook.details!.errors as Array<{ field: string }>).map((x) => x.field).sort()).toEqual(['count', 'operation']);
    envelope(await t.call('POST', '/sandbox/faults', { operation: 'createSandboxFault', kind: 'INTERNAL_ERROR', count: 1 }), 400, 'INVALID_INPUT');
    expect(await faults(t)).toEqual([]);
  });

  it('INTERNAL_ERROR: the next N calls answer 500 before anything is written; then the operation works again', async () => {
    const rule = await addFault(t, { operation: 'createCustomer', kind: 'INTERNAL_ERROR', count: 2 });
    expect(rule).toMatchObject({ operation: 'createCustomer', kind: 'INTERNAL_ERROR', count: 2, remaining: 2, durationSeconds: null });
    for (let i = 0; i < 2; i++) {
      const res = await t.call('POST', '/customers', CUSTOMER);
      const e = envelope(res, 500, 'INTERNAL_ERROR');
      expect(e.details).toEqual({ sandboxFault: { ruleId: rule.id, kind: 'INTERNAL_ERROR' } });
      expect(res.headers['x-sandbox-fault']).toBe(`INTERNAL_ERROR ${rule.id}`);
    }
    expect(await customerCount(t)).toBe(0);
    // Another operation is not named by the rule.
    expect((await t.call('GET', '/customers')).statusCode).toBe(200);
    expect((await t.call('POST', '/customers', CUSTOMER)).statusCode).toBe(201);
    expect(await customerCount(t)).toBe(1);
    expect(await faults(t)).toEqual([]);
    // Every faulted request is marked in the request log, the others are not.
    const log = (await requestLog(t)).filter((e) => e.route === `${V}/customers` && e.method === 'POST');
    expect(log.map((e) => [e.status, e.fault])).toEqual([
      [201, null],
      [500, { ruleId: rule.id, kind: 'INTERNAL_ERROR' }],
      [500, { ruleId: rule.id, kind: 'INTERNAL_ERROR' }],
    ]);
  });

  it('SERVICE_UNAVAILABLE and RATE_LIMITED answer with Retry-After; rules name "METHOD /path-template"', async () => {
    await addFault(t, { operation: 'GET /customers/{customerId}', kind: 'SERVICE_UNAVAILABLE', count: 1, retryAfterSeconds: 7 });
    await addFault(t, { operation: 'get /customers', kind: 'RATE_LIMITED', count: 1 });
    const c = (await t.call('POST', '/customers', CUSTOMER)).json() as { id: string };
    const one = await t.call('GET', `/customers/${encodeURIComponent(c.id)}`);
    envelope(one, 503, 'SERVICE_UNAVAILABLE');
    expect(one.headers['retry-after']).toBe('7');
    expect((await t.call('GET', `/customers/${encodeURIComponent(c.id)}`)).statusCode).toBe(200);
    const list = await t.call('GET', '/customers');
    envelope(list, 429, 'RATE_LIMITED');
    expect(list.headers['retry-after']).toBe('1');
    expect((await t.call('GET', '/customers')).statusCode).toBe(200);
  });

  it('DELAY answers normally after delayMs (a timer: other requests are served meanwhile)', async () => {
    const rule = await addFault(t, { operation: 'listCustomers', kind: 'DELAY', delayMs: 1_000, count: 1 });
    const started = performance.now();
    const order: string[] = [];
    const slow = t.call('GET', '/customers').then((r) => {
      order.push('delayed');
      return r;
    });
    // Served while the delayed one waits.
    await sleep(50);
    expect((await t.call('GET', '/config')).statusCode).toBe(200);
    order.push('other');
    const res = await slow;
    expect(res.statusCode).toBe(200);
    expect(order).toEqual(['other', 'delayed']);
    expect(performance.now() - started).toBeGreaterThanOrEqual(990);
    const entry = (await requestLog(t)).find((e) => e.route === `${V}/customers` && e.method === 'GET')!;
    expect(entry.fault).toEqual({ ruleId: rule.id, kind: 'DELAY' });
    expect(entry.latencyMs).toBeGreaterThanOrEqual(990);
  });

  it('a fraction for a duration faults a deterministic share of calls; a rule is removed by id or all at once', async () => {
    const half = await addFault(t, { operation: 'listCustomers', kind: 'INTERNAL_ERROR', fraction: 0.5, durationSeconds: 60 });
    expect(half).toMatchObject({ fraction: 0.5, durationSeconds: 60, count: null, remaining: null });
    expect(Date.parse(half.expiresAt!) - Date.now()).toBeGreaterThan(55_000);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await t.call('GET', '/customers')).statusCode);
    expect(statuses).toEqual([200, 500, 200, 500, 200, 500]);
    const all = await addFault(t, { operation: '*', kind: 'SERVICE_UNAVAILABLE', durationSeconds: 60, retryAfterSeconds: 0 });
    expect((await faults(t)).map((f) => f.id)).toEqual([half.id, all.id]);
    // "*" is every operation of the reference, not the faults' own routes nor the other sandbox routes.
    envelope(await t.call('GET', '/config'), 503, 'SERVICE_UNAVAILABLE');
    expect((await t.call('GET', '/sandbox/clock')).statusCode).toBe(200);
    expect((await t.call('DELETE', `/sandbox/faults/${encodeURIComponent(half.id)}`)).statusCode).toBe(204);
    envelope(await t.call('DELETE', `/sandbox/faults/${encodeURIComponent(half.id)}`), 404, 'REFERENCE_NOT_FOUND');
    expect((await faults(t)).map((f) => f.id)).toEqual([all.id]);
    const cleared = await t.call('DELETE', '/sandbox/faults');
    expect(cleared.json()).toEqual({ deleted: 1 });
    expect((await t.call('GET', '/config')).statusCode).toBe(200);
    expect(await faults(t)).toEqual([]);
  });

  it('another platform is never affected, and cannot see or remove the rules', async () => {
    const other = await otherPlatformAuth(t);
    const rule = await addFault(t, { operation: '*', kind: 'INTERNAL_ERROR', count: 5 });
    expect((await t.call('POST', '/customers', CUSTOMER, other)).statusCode).toBe(201);
    expect((await t.call('GET', '/customers', undefined, other)).statusCode).toBe(200);
    expect(await faults(t, other)).toEqual([]);
    envelope(await t.call('DELETE', `/sandbox/faults/${encodeURIComponent(rule.id)}`, undefined, other), 404, 'REFERENCE_NOT_FOUND');
    expect((await t.call('DELETE', '/sandbox/faults', undefined, other)).json()).toEqual({ deleted: 0 });
    expect((await faults(t))[0]!.remaining).toBe(5);
    envelope(await t.call('GET', '/customers'), 500, 'INTERNAL_ERROR');
    // The dashboard's requests are not the platform's client: never faulted.
    expect((await t.call('GET', '/customers', undefined, { 'x-payments-dashboard': '1' })).statusCode).toBe(200);
    expect((await faults(t))[0]!.remaining).toBe(4);
    // A reset takes the platform's rules with the rest.
    expect((await t.call('POST', '/sandbox/reset')).statusCode).toBe(200);
    expect(await faults(t)).toEqual([]);
    expect((await t.call('GET', '/customers')).statusCode).toBe(200);
  });

  it('COMMIT_THEN_DROP: the customer is created, the connection drops, a retry with the same key gets the stored answer', async () => {
    const base = await listen(t);
    const rule = await addFault(t, { operation: 'POST /customers', kind: 'COMMIT_THEN_DROP', count: 1 });
    const headers = { authorization: DEFAULT_AUTH, 'content-type': 'application/json', 'idempotency-key': 'drop-1' };
    await expect(fetch(`${base}/customers`, { method: 'POST', headers, body: JSON.stringify(CUSTOMER) })).rejects.toThrow();
    expect(await customerCount(t)).toBe(1);
    const retry = await fetch(`${base}/customers`, { method: 'POST', headers, body: JSON.stringify(CUSTOMER) });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const stored = await t.store.db.selectFrom('customers').select('id').executeTakeFirstOrThrow();
    expect(((await retry.json()) as { id: string }).id).toBe(stored.id);
    expect(await customerCount(t)).toBe(1);
    const entries = (await requestLog(t)).filter((e) => e.idempotencyKey === 'drop-1');
    expect(entries.map((e) => [e.status, e.fault])).toEqual([
      [201, null],
      [201, { ruleId: rule.id, kind: 'COMMIT_THEN_DROP' }],
    ]);
  });

  it('a client retrying with its Idempotency-Key through 500, 503, 429 and a dropped answer pays exactly once', async () => {
    const base = await listen(t);
    const c = await newCustomer(t, ['USD']);
    const usd = c.accounts.USD!.id;
    const dest = await usdExternal(t, c.id, '000000456');
    await fund(t, usd, 100_000);
    const txsBefore = (await t.store.db.selectFrom('transactions').select('id').execute()).length;
    for (const rule of [
      { kind: 'INTERNAL_ERROR', count: 1 },
      { kind: 'SERVICE_UNAVAILABLE', count: 1, retryAfterSeconds: 0 },
      { kind: 'RATE_LIMITED', count: 1, retryAfterSeconds: 0 },
      { kind: 'COMMIT_THEN_DROP', count: 1 },
      { kind: 'INTERNAL_ERROR', count: 1 },
    ]) {
      await addFault(t, { operation: 'createQuote', ...rule });
    }
    const body = JSON.stringify(quoteRequest(usd, dest, 12_345, { immediatelyExecute: true }));
    const seen: Array<number | 'dropped'> = [];
    // The client docs/sandbox/faults.md describes: same key, retry 5xx, 429 and dropped
    // connections, honour Retry-After, otherwise back off; stop on any other answer.
    let answer: Response | undefined;
    for (let attempt = 0; attempt < 10 && !answer; attempt++) {
      let res: Response;
      try {
        res = await fetch(`${base}/quotes`, { method: 'POST', headers: { authorization: DEFAULT_AUTH, 'content-type': 'application/json', 'idempotency-key': 'pay-once-1' }, body });
      } catch {
        seen.push('dropped');
        await sleep(10 * 2 ** attempt);
        continue;
      }
      seen.push(res.status);
      if (res.status === 429 || res.status >= 500) {
        const after = res.headers.get('retry-after');
        await sleep(after !== null ? Number(after) * 1_000 : 10 * 2 ** attempt);
        continue;
      }
      answer = res;
    }
    expect(seen).toEqual([500, 503, 429, 'dropped', 500, 201]);
    expect(answer!.headers.get('idempotent-replayed')).toBe('true');
    const quote = (await answer!.json()) as { id: string; transactionId?: string };
    const quotes = await t.store.db.selectFrom('quotes').select('id').execute();
    expect(quotes.map((q) => q.id)).toEqual([quote.id]);
    const txs = await t.store.db.selectFrom('transactions').select(['id', 'quote_id']).execute();
    expect(txs.filter((x) => x.quote_id === quote.id)).toHaveLength(1);
    expect(txs).toHaveLength(txsBefore + 1);
    await assertLedgerInvariants(t.store);
    expect(await faults(t)).toEqual([]);
  });

  describe('webhook faults', () => {
    let rx: Receiver;
    beforeEach(async () => {
      rx = await new Receiver().start();
      expect((await t.call('PATCH', '/config', { webhookEndpoint: rx.url })).statusCode).toBe(200);
      await t.running.webhooks.runDue(); // the new endpoint's TEST webhook
    });
    afterEach(async () => {
      await rx.stop();
    });

    async function emit(resourceId: string, type: string): Promise<string> {
      const platformId = t.running.bootstrap.platform.id;
      return t.store.db.transaction().execute((trx) => emitEvent(trx, platformId, iso(t.clock.nowMs()), { type, resourceId, data: { id: resourceId } }));
    }

    it('WEBHOOK_DUPLICATE delivers each event twice with the same id', async () => {
      await addFault(t, { kind: 'WEBHOOK_DUPLICATE', count: 1 });
      const first = await emit('Customer:dup-1', 'CUSTOMER.KYC_APPROVED');
      await t.running.webhooks.runDue();
      const second = await emit('Customer:dup-1', 'CUSTOMER.KYC_REJECTED');
      await t.running.webhooks.runDue();
      expect(rx.got.map((r) => r.json.id)).toEqual([first, first, second]);
      expect(rx.got[0]!.body).toBe(rx.got[1]!.body);
    });

    it('WEBHOOK_DELAY holds deliveries for delayMs', async () => {
      await addFault(t, { kind: 'WEBHOOK_DELAY', delayMs: 300, count: 1 });
      await emit('Customer:slow-1', 'CUSTOMER.KYC_APPROVED');
      const started = performance.now();
      await t.running.webhooks.runDue();
      expect(performance.now() - started).toBeGreaterThanOrEqual(290);
      expect(rx.got).toHaveLength(1);
    });

    it('WEBHOOK_OUT_OF_ORDER sends the next N events of one resource latest first; the order holds without the rule', async () => {
      await addFault(t, { kind: 'WEBHOOK_OUT_OF_ORDER', count: 3 });
      const ids = [await emit('Transaction:ooo-1', 'OUTGOING_PAYMENT.PENDING'), await emit('Transaction:ooo-1', 'OUTGOING_PAYMENT.PROCESSING'), await emit('Transaction:ooo-1', 'OUTGOING_PAYMENT.COMPLETED')];
      await t.running.webhooks.runDue();
      await waitFor(() => rx.got.length === 3);
      expect(rx.got.map((r) => r.json.id)).toEqual([...ids].reverse());
      expect(await faults(t)).toEqual([]);
      // The rule is used up: the next events go in order again.
      const next = [await emit('Transaction:ooo-2', 'OUTGOING_PAYMENT.PENDING'), await emit('Transaction:ooo-2', 'OUTGOING_PAYMENT.COMPLETED')];
      await t.running.webhooks.runDue();
      expect(rx.got.slice(3).map((r) => r.json.id)).toEqual(next);
    });
  });
});

describe.runIf(STORE === 'postgres')('faults across two server processes on one PostgreSQL schema', () => {
  let a: TestApp;
  let b: TestApp;
  beforeEach(async () => {
    const ts = await freshStore();
    a = await makeApp({ testStore: ts });
    b = await makeApp({ testStore: { store: await openSameSchema(ts.schema!), drop: async () => {} } });
  });
  afterEach(async () => {
    await b.close();
    await a.close();
  });

  it('a rule added or removed through one process applies in the other, and its count is consumed exactly once in all', async () => {
    // b has read the platform's (empty) rules and keeps them in memory.
    expect((await b.call('GET', '/customers')).statusCode).toBe(200);
    expect((await b.call('GET', '/customers')).statusCode).toBe(200);
    const rule = await addFault(a, { operation: 'listCustomers', kind: 'SERVICE_UNAVAILABLE', count: 1000, retryAfterSeconds: 0 });
    // The change reaches b by NOTIFY, a moment after the commit.
    await waitFor(async () => (await b.call('GET', '/customers')).statusCode === 503);
    expect((await b.call('DELETE', `/sandbox/faults/${encodeURIComponent(rule.id)}`)).statusCode).toBe(204);
    await waitFor(async () => (await a.call('GET', '/customers')).statusCode === 200);

    await addFault(a, { operation: 'listCustomers', kind: 'INTERNAL_ERROR', count: 7 });
    await waitFor(async () => (await b.call('GET', '/sandbox/faults')).json().data.length === 1);
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? a : b).call('GET', '/customers')));
    expect(answers.filter((r) => r.statusCode === 500)).toHaveLength(7);
    expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(23);
  });
});

// The dashboard's Faults page and the request log's mark, in a real browser (Debian's
// chromium through playwright-core) when /usr/bin/chromium exists.
describe(`the dashboard's faults (${STORE})`, { timeout: 120_000 }, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => {
    await t.close();
  });

  it.skipIf(!existsSync(CHROMIUM))('adds a rule, shows it and its count, marks the faulted request in the request log, removes the rules', async () => {
    const base = await listen(t);
    const url = base.slice(0, -V.length);
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1366, height: 800 } });
      page.setDefaultTimeout(15_000);
      page.on('dialog', (d) => void d.accept());
      const open = async (hash: string, text: string) => {
        await page.$eval('main', (main) => { main.textContent = ''; }).catch(() => undefined);
        await page.goto(`${url}/dashboard#${hash}`);
        await page.waitForSelector(`main:has-text(${JSON.stringify(text)})`);
      };
      await page.goto(`${url}/dashboard`);
      await page.fill('#signin input[name=id]', DEFAULT_TOKEN_ID);
      await page.fill('#signin input[name=secret]', DEFAULT_SECRET);
      await page.click('#signin button');
      await page.waitForSelector('#clock');

      await open('faults', 'Faults on demand');
      expect(await page.textContent('main')).toContain('No fault rule');
      // An invalid rule: the API's message names the fields.
      await page.click('button[data-act=addFault]');
      await page.waitForSelector('dialog[open]');
      await page.fill('dialog input[name=kind]', 'DELAY');
      await page.fill('dialog input[name=operation]', 'noSuchOperation');
      await page.click('#ask-ok');
      await page.waitForSelector('#note.err:has-text("INVALID_INPUT")');
      expect(await page.textContent('#note')).toMatch(/operation.*delayMs/);
      // A valid one.
      await page.click('button[data-act=addFault]');
      await page.waitForSelector('dialog[open]');
      await page.fill('dialog input[name=kind]', 'SERVICE_UNAVAILABLE');
      await page.fill('dialog input[name=operation]', 'createCustomer');
      await page.fill('dialog input[name=count]', '2');
      await page.fill('dialog input[name=retryAfterSeconds]', '5');
      await page.click('#ask-ok');
      await page.waitForSelector('main:has-text("2 of 2 calls left")');
      const rules = await faults(t);
      expect(rules).toMatchObject([{ kind: 'SERVICE_UNAVAILABLE', operation: 'createCustomer', count: 2, retryAfterSeconds: 5 }]);

      // The platform's client meets the fault; the request log shows it marked.
      envelope(await t.call('POST', '/customers', CUSTOMER), 503, 'SERVICE_UNAVAILABLE');
      await open('faults', '1 of 2 calls left');
      await open('requests', 'Request log');
      await page.waitForSelector('main .fault:has-text("fault: SERVICE_UNAVAILABLE")');
      await page.screenshot({ path: `test-results/dashboard-faults-${STORE}.png`, fullPage: true }).catch(() => undefined);

      // Removed one by one, and all at once.
      await open('faults', '1 of 2 calls left');
      await page.click('button[data-act=removeFault]');
      await page.waitForSelector('main:has-text("No fault rule")');
      expect(await faults(t)).toEqual([]);
      await addFault(t, { kind: 'WEBHOOK_DUPLICATE', count: 3 });
      await addFault(t, { operation: '*', kind: 'INTERNAL_ERROR', durationSeconds: 60 });
      await open('faults', 'webhook deliveries');
      // The dashboard's own reads are never faulted, so the page shows under the '*' rule.
      await page.click('button[data-act=clearFaults]');
      await page.waitForSelector('main:has-text("No fault rule")');
      expect(await faults(t)).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
