import { existsSync, mkdirSync } from 'node:fs';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_SCRIPT } from '../../src/dashboard/script.js';
import { ADMIN_KEY, DEFAULT_SECRET, DEFAULT_TOKEN_ID, makeApp, STORE, type TestApp } from '../helpers.js';
import { fund, newCustomer, quoteRequest, usdExternal } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';

// The dashboard: served by the server itself, no CDN; walked in a real browser (Debian's
// chromium through playwright-core) when /usr/bin/chromium exists, screenshots in test-results/.
// Every page, every sandbox action (checked through the API), the live webhook and request
// logs, search, and the operator view.

const CHROMIUM = '/usr/bin/chromium';
const admin = { authorization: `Bearer ${ADMIN_KEY}` };

interface Seeded {
  customers: Array<{ id: string; name: string }>;
  internalAccounts: string[];
  transactions: Array<{ id: string; expected: string }>;
}

describe(`dashboard (${STORE})`, { timeout: 180_000 }, () => {
  let t: TestApp;
  let url: string;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await makeApp();
    url = await t.app.listen({ port: 0, host: '127.0.0.1' });
    // The platform's webhook endpoint: approval requests are answered 202 (decided on the dashboard).
    receiver = await new Receiver().start();
    receiver.behave = (r) => (r.json.type === 'INCOMING_PAYMENT.PENDING' ? 202 : 200);
    const cfg = await t.call('PATCH', '/config', { webhookEndpoint: receiver.url });
    expect(cfg.statusCode, cfg.body).toBe(200);
  });
  afterAll(async () => {
    await receiver.stop();
    await t.close();
  });

  it('serves the page and its one script from the server, nothing from elsewhere', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/dashboard' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toContain('<script src="/dashboard/app.js"></script>');
    expect(page.body).not.toMatch(/https?:\/\//);
    const script = await t.app.inject({ method: 'GET', url: '/dashboard/app.js' });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toMatch(/javascript/);
    expect(script.body).not.toMatch(/https?:\/\//);
    expect(() => new vm.Script(DASHBOARD_SCRIPT)).not.toThrow();
    expect((await t.app.inject({ method: 'GET', url: '/dashboard/customers' })).body).toContain('/dashboard/app.js');
  });

  it('GET / answers a small page linking the dashboard, the API docs and the checks; JSON to a client that asks for it', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    for (const href of ['/dashboard', '/docs', '/2025-10-13/openapi.json', '/healthz', '/readyz', '/metrics']) expect(res.body).toContain(`href="${href}"`);
    expect(res.body).not.toMatch(/https?:\/\//);
    // Every link it gives answers 200.
    for (const href of [...res.body.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!)) expect((await t.app.inject({ method: 'GET', url: href })).statusCode, href).toBe(200);
    const browser = await t.app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } });
    expect(browser.headers['content-type']).toMatch(/^text\/html/);
    const json = await t.app.inject({ method: 'GET', url: '/', headers: { accept: 'application/json' } });
    expect(json.statusCode).toBe(200);
    expect(json.headers['content-type']).toMatch(/^application\/json/);
    expect(json.json()).toMatchObject({ apiVersion: '2025-10-13', apiBaseUrl: '/2025-10-13', links: expect.arrayContaining([{ href: '/dashboard', title: 'Dashboard' }, { href: '/healthz', title: 'Health check' }]) });
    // Other methods on / are still refused in the envelope.
    const post = await t.app.inject({ method: 'POST', url: '/' });
    expect(post.statusCode).toBe(405);
    expect(post.json()).toMatchObject({ status: 405, code: 'METHOD_NOT_ALLOWED' });
  });

  it.skipIf(!existsSync(CHROMIUM))('signs in, walks every page, does every sandbox action, sees the logs update; the operator view; screenshots', async () => {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'] });
    mkdirSync('test-results', { recursive: true });
    const get = async <T>(path: string, headers?: Record<string, string>): Promise<T> => {
      const res = await t.call('GET', path, undefined, headers);
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as T;
    };
    const customerCount = async () => (await get<{ totalCount: number }>('/customers?limit=1')).totalCount;
    try {
      const page = await browser.newPage({ viewport: { width: 1366, height: 800 } });
      page.setDefaultTimeout(15_000);
      page.on('dialog', (d) => void d.accept()); // the confirm() of the resets
      const shot = (name: string) => page.screenshot({ path: `test-results/dashboard-${name}-${STORE}.png`, fullPage: true });
      const open = async (hash: string, text: string) => {
        // A new hash keeps the document: empty <main> first, so the text waited for is the new page's.
        await page.$eval('main', (main) => { main.textContent = ''; }).catch(() => undefined);
        await page.goto(`${url}/dashboard#${hash}`);
        await page.waitForSelector(`main:has-text(${JSON.stringify(text)})`);
      };
      /** Fill the action dialog and press OK. */
      const answer = async (fields: Record<string, string>) => {
        await page.waitForSelector('dialog[open]');
        for (const [name, value] of Object.entries(fields)) await page.fill(`dialog input[name=${name}]`, value);
        await page.click('#ask-ok');
      };

      // ---- Sign in ----
      await page.goto(`${url}/dashboard`);
      await page.fill('#signin input[name=id]', 'wrong');
      await page.fill('#signin input[name=secret]', 'wrong');
      await page.click('#signin button');
      await page.waitForSelector('#err:has-text("401")');
      await page.fill('#signin input[name=id]', DEFAULT_TOKEN_ID);
      await page.fill('#signin input[name=secret]', DEFAULT_SECRET);
      await page.click('#signin button');
      await page.waitForSelector('#clock');

      // ---- Seed: the demo data set through POST /sandbox/seed ----
      await page.click('button[data-act=seed]');
      await page.waitForSelector('#note:has-text("Seed.")', { timeout: 30_000 });
      expect(await customerCount()).toBe(4);
      const customers = await get<{ data: Array<{ id: string; fullName?: string; businessInfo?: { legalName: string } }> }>('/customers?limit=100');
      const acme = customers.data.find((c) => c.businessInfo?.legalName === 'Acme Imports LLC')!.id;
      const jane = customers.data.find((c) => c.fullName === 'Jane Doe')!.id;
      const accountsOf = async (customerId: string) => (await get<{ data: Array<{ id: string; balance: { amount: number; currency: { code: string } } }> }>(`/customers/internal-accounts?customerId=${encodeURIComponent(customerId)}`)).data;
      const acmeUsd = (await accountsOf(acme)).find((a) => a.balance.currency.code === 'USD')!.id;
      const janeUsd = (await accountsOf(jane)).find((a) => a.balance.currency.code === 'USD')!;
      const txs = await get<{ data: Array<{ id: string; status: string; quoteId?: string }> }>('/transactions?limit=100&type=OUTGOING');
      const completed = txs.data.find((x) => x.status === 'COMPLETED')!;

      // A card and an agent with two actions waiting for approval (through the API, as a platform and an agent would).
      const holder = await newCustomer(t, ['USD']);
      await fund(t, holder.accounts.USD!.id, 100_000);
      const card = await t.call('POST', '/cards', { cardholderId: holder.id, form: 'VIRTUAL', fundingSources: [holder.accounts.USD!.id] });
      expect(card.statusCode, card.body).toBe(201);
      const ext = await usdExternal(t, holder.id, '555000789');
      const policy = { permissions: ['VIEW_TRANSACTIONS', 'CREATE_TRANSFERS', 'CREATE_QUOTES', 'EXECUTE_QUOTES'], defaultExecutionMode: 'AUTO', spendingLimits: { currency: 'USD', perTransactionLimit: 100_000 }, approvalThresholds: { currency: 'USD', amount: 1_000 } };
      const agent = await t.call('POST', '/agents', { name: 'Dashboard agent', customerId: holder.id, policy });
      expect(agent.statusCode, agent.body).toBe(201);
      const { agent: agentBody, deviceCode } = agent.json() as { agent: { id: string }; deviceCode: { code: string } };
      const redeemed = await t.call('POST', `/agents/device-codes/${deviceCode.code}/redeem`, undefined, { authorization: '' });
      expect(redeemed.statusCode, redeemed.body).toBe(200);
      const agentAuth = { authorization: `Bearer ${(redeemed.json() as { accessToken: string }).accessToken}` };
      const pendingActions: string[] = [];
      for (const amount of [5_000, 6_000]) {
        const q = await t.call('POST', '/agents/me/quotes', quoteRequest(holder.accounts.USD!.id, ext, amount), agentAuth);
        expect(q.statusCode, q.body).toBe(201);
        const x = await t.call('POST', `/agents/me/quotes/${q.json().id}/execute`, undefined, agentAuth);
        expect(x.json().status, x.body).toBe('PENDING_APPROVAL');
        pendingActions.push(x.json().id as string);
      }
      const actionStatus = async (id: string) => (await get<{ status: string }>(`/agents/me/actions/${id}`, agentAuth)).status;

      // ---- Overview actions: advance the clock (the dialog), the test webhook ----
      await open('overview', 'Sandbox clock');
      const before = (await get<{ offsetSeconds: number }>('/sandbox/clock')).offsetSeconds;
      await page.click('button[data-act=advance]');
      await answer({ seconds: '120' });
      await expect.poll(async () => (await get<{ offsetSeconds: number }>('/sandbox/clock')).offsetSeconds).toBe(before + 120);
      const tests = receiver.tests.length;
      await page.click('button[data-act=testWebhook]');
      await page.waitForSelector('#note:has-text("Test webhook.")');
      expect(receiver.tests.length).toBe(tests + 1);
      await page.waitForSelector('main:has-text("/2025-10-13/sandbox/webhooks/test")');
      await shot('overview');

      // ---- Every page ----
      for (const [name, hash, text] of [
        ['customers', 'customers', 'Pending Review Co'],
        ['customer', `customer/${encodeURIComponent(acme)}`, 'Beneficial owners'],
        ['accounts', 'accounts', 'Fund'],
        ['account', `account/${encodeURIComponent(acmeUsd)}`, 'FUNDING'],
        ['external', 'external', 'Globex Supplies Inc'],
        ['quotes', 'quotes', 'COMPLETED'],
        ['quote', `quote/${encodeURIComponent(completed.quoteId!)}`, 'Timeline'],
        ['transactions', 'transactions', 'PROCESSING'],
        ['transaction', `transaction/${encodeURIComponent(completed.id)}`, 'SETTLED'],
        ['cards', 'cards', 'VIRTUAL'],
        ['agents', 'agents', 'Dashboard agent'],
        ['approvals', 'approvals', 'APPROVAL_THRESHOLD_EXCEEDED'],
        ['webhooks', 'webhooks', 'Webhook deliveries'],
        ['requests', 'requests', '/2025-10-13/sandbox/seed'],
      ] as const) {
        await open(hash, text);
        await shot(name);
      }
      // Links between resources: the transaction links its customer, the quote its transaction.
      await open(`transaction/${encodeURIComponent(completed.id)}`, 'Timeline');
      await page.waitForSelector(`main a[href="#customer/${encodeURIComponent(acme)}"]`);
      await page.waitForSelector(`main a[href="#quote/${encodeURIComponent(completed.quoteId!)}"]`);
      await page.click(`main a[href="#customer/${encodeURIComponent(acme)}"] >> nth=0`);
      await page.waitForSelector('main:has-text("Acme Imports LLC")');
      // The timeline lists the transaction's webhook events.
      await open(`transaction/${encodeURIComponent(completed.id)}`, 'OUTGOING_PAYMENT.COMPLETED');
      // In the order they happened, also within one millisecond.
      const steps = (await page.locator('main ol.timeline li b').allTextContents()).filter((x) => x.startsWith('OUTGOING_PAYMENT.'));
      expect(steps).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);

      // ---- Fund an account (the dialog asks the amount) ----
      await open('accounts', 'Fund');
      await page.click(`button[data-act=fund][data-id="${janeUsd.id}"]`);
      await answer({ amount: '777' });
      await expect.poll(async () => (await accountsOf(jane)).find((a) => a.id === janeUsd.id)!.balance.amount).toBe(janeUsd.balance.amount + 777);

      // ---- Simulate an incoming UMA payment, then approve it; a second one, rejected ----
      const pendingIncoming = async () => (await get<{ data: Array<{ id: string }> }>('/transactions?type=INCOMING&status=PENDING')).data.map((x) => x.id);
      await open(`customer/${encodeURIComponent(acme)}`, 'Verifications');
      await page.click('button[data-act=receive]');
      await answer({ receivingCurrencyAmount: '5000' });
      await expect.poll(pendingIncoming).toHaveLength(1);
      const [first] = await pendingIncoming();
      await open(`transaction/${encodeURIComponent(first!)}`, 'Approve');
      await page.click('button[data-act=approve]');
      await expect.poll(async () => (await get<{ status: string }>(`/transactions/${first}`)).status).toBe('COMPLETED');
      await open('transactions', 'Simulate an incoming UMA payment');
      await page.click('button[data-act=receive]');
      await answer({ customerId: acme, receivingCurrencyAmount: '4000' });
      await expect.poll(pendingIncoming).toHaveLength(1);
      const [second] = await pendingIncoming();
      await open('transactions', 'Reject');
      await page.click(`button[data-act=reject][data-id="${second}"]`);
      await answer({ reason: 'not expected' });
      await expect.poll(async () => (await get<{ status: string }>(`/transactions/${second}`)).status).toBe('REJECTED');

      // ---- Approvals: approve one agent action, reject the other ----
      await open('approvals', 'APPROVAL_THRESHOLD_EXCEEDED');
      await page.click(`button[data-act=approveAction][data-id="${pendingActions[0]}"]`);
      await expect.poll(() => actionStatus(pendingActions[0]!)).toBe('APPROVED');
      await page.click(`button[data-act=rejectAction][data-id="${pendingActions[1]}"]`);
      await answer({ reason: 'too much' });
      await expect.poll(() => actionStatus(pendingActions[1]!)).toBe('REJECTED');
      await page.waitForSelector('main:has-text("No action is waiting for approval")');

      // ---- The webhook log updates live: deliveries go out, then a redelivery adds an attempt ----
      await open('webhooks', 'Webhook deliveries');
      await t.running.webhooks.runDue();
      await page.waitForSelector('main:has-text("answer 200")');
      const deliveryId = await page.getAttribute('button[data-act=redeliver] >> nth=0', 'data-id');
      await page.click(`button[data-act=redeliver][data-id="${deliveryId}"]`);
      await page.waitForSelector('#note:has-text("Redelivery scheduled.")');
      await t.running.webhooks.runDue();
      await page.waitForSelector('main:has-text("#2")');
      const deliveries = await get<{ data: Array<{ id: string; attempts: number }> }>('/sandbox/webhook-deliveries?limit=100');
      expect(deliveries.data.find((d) => d.id === deliveryId)!.attempts).toBe(2);
      await shot('webhooks');

      // ---- The request log updates live, and shows the platform's calls, not the dashboard's own reads ----
      await open('requests', 'Request log');
      await t.call('GET', '/customers?limit=7');
      await page.waitForSelector('main:has-text("/2025-10-13/customers?limit=7")');
      await shot('requests');
      // The overview reads /customers/internal-accounts?limit=1 (and four more) at each re-read:
      // those reads are marked and hidden, so two more overviews leave the platform's call on it.
      const ownRead = '/2025-10-13/customers/internal-accounts?limit=1';
      await open('overview', 'Sandbox clock');
      await open('requests', 'Request log');
      await open('overview', 'Recent requests');
      await page.waitForSelector('main:has-text("/2025-10-13/customers?limit=7")');
      expect(await page.textContent('main')).not.toContain(ownRead);
      await open('requests', 'Request log');
      expect(await page.textContent('main')).not.toContain(ownRead);
      // Shown on request, marked as the dashboard's.
      await page.click('button[data-act=toggleDashboardReads]');
      await page.waitForSelector(`main tr:has-text(${JSON.stringify(ownRead)}) .st:has-text("dashboard")`);
      await page.click('button[data-act=toggleDashboardReads]');
      await page.waitForSelector('main:has-text("the dashboard\'s own reads are hidden")');
      const logged = await get<{ data: Array<{ source: string; method: string }> }>('/sandbox/requests');
      expect(logged.data.filter((e) => e.source === 'dashboard' && e.method === 'GET')).toEqual([]);
      expect(logged.data.some((e) => e.source === 'dashboard' && e.method === 'POST')).toBe(true); // its actions (the seed, the fund …) stay

      // ---- Settings: PATCH /config with each field error beside its field, the test webhook, the sandbox options ----
      const configBefore = await get<Record<string, unknown>>('/config');
      await open('settings', 'Sandbox options');
      expect(await page.inputValue('input[data-field=webhookEndpoint]')).toBe(receiver.url);
      expect(await page.inputValue('input[data-field="supportedCurrencies.0.currencyCode"]')).toBe('USD');
      const errorBeside = (field: string) => page.waitForSelector(`[data-field=${JSON.stringify(field)}] + .ferr[data-error-for=${JSON.stringify(field)}]`);
      await page.fill('input[data-field=umaDomain]', 'not a domain!');
      await page.fill('input[data-field="supportedCurrencies.0.maxAmount"]', 'lots');
      await page.click('#save-config');
      await errorBeside('umaDomain');
      await errorBeside('supportedCurrencies.0.maxAmount');
      await page.waitForSelector('#note:has-text("Settings not saved: 400 INVALID_INPUT")');
      await shot('settings-errors');
      await page.fill('input[data-field=umaDomain]', 'settings-page.example.com');
      await page.fill('input[data-field="supportedCurrencies.0.maxAmount"]', '50');
      await page.click('#save-config');
      await errorBeside('supportedCurrencies.0.minAmount');
      expect(await page.textContent('[data-error-for="supportedCurrencies.0.minAmount"]')).toContain('must not be greater than maxAmount');
      expect(await page.$('[data-error-for=umaDomain]')).toBeNull();
      expect(await get<Record<string, unknown>>('/config')).toEqual(configBefore); // nothing saved yet
      await page.fill('input[data-field="supportedCurrencies.0.maxAmount"]', '10000000');
      await page.click('button[data-act=addFee]');
      await page.fill('input[data-field="feeConfigs.0.variableFeeBps"]', '25');
      await page.fill('input[data-field="feeConfigs.0.fixedFee.amount"]', '30');
      await page.fill('input[data-field="cardTokenization2faConfig.displayName"]', 'Settings Page Bank');
      await page.fill('input[data-field="supportedCurrencies.1.requiredCounterpartyFields"]', 'FULL_NAME, EMAIL?');
      await page.click('#save-config');
      await page.waitForSelector('#note:has-text("Settings saved.")');
      const saved = await get<{ umaDomain: string; feeConfigs: unknown[]; cardTokenization2faConfig: { displayName: string }; supportedCurrencies: Array<{ requiredCounterpartyFields: unknown }>; webhookEndpoint: string }>('/config');
      expect(saved.umaDomain).toBe('settings-page.example.com');
      expect(saved.feeConfigs).toEqual([{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 25, fixedFee: { amount: 30, currency: 'USD' } }]);
      expect(saved.cardTokenization2faConfig.displayName).toBe('Settings Page Bank');
      expect(saved.supportedCurrencies[1]!.requiredCounterpartyFields).toEqual([{ name: 'FULL_NAME', mandatory: true }, { name: 'EMAIL', mandatory: false }]);
      expect(saved.webhookEndpoint).toBe(receiver.url);
      // The saved page shows the stored values again; the PATCH is in the request log, marked.
      await page.waitForSelector('input[data-field="feeConfigs.0.variableFeeBps"][value="25"]');
      expect((await get<{ data: Array<{ source: string; method: string; path: string }> }>('/sandbox/requests?limit=5')).data.find((e) => e.method === 'PATCH')).toMatchObject({ source: 'dashboard', path: '/2025-10-13/config' });
      // The test webhook, its answer shown.
      const testsBefore = receiver.tests.length;
      await page.click('button[data-act=testWebhookSettings]');
      await page.waitForSelector('#test-result:has-text("answered 200")');
      expect(receiver.tests.length).toBe(testsBefore + 1);
      // The sandbox options: Skip verification paperwork, through PATCH /sandbox/settings (the operator sees it).
      expect(await page.isChecked('input[data-field=skipVerificationPaperwork]')).toBe(false);
      expect(await page.isChecked('input[data-field=invitationsConfigured]')).toBe(true);
      await page.check('input[data-field=skipVerificationPaperwork]');
      await page.click('#save-sandbox');
      await page.waitForSelector('#note:has-text("Sandbox options saved.")');
      expect(await get('/sandbox/settings')).toEqual({ skipVerificationPaperwork: true, invitationsConfigured: true });
      const platforms = await get<{ data: Array<{ isDefault: boolean; skipVerificationPaperwork: boolean }> }>('/admin/platforms', admin);
      expect(platforms.data.find((p) => p.isDefault)!.skipVerificationPaperwork).toBe(true);
      expect(await page.isChecked('input[data-field=skipVerificationPaperwork]')).toBe(true);
      await shot('settings');

      // ---- Search by id (the header's box) ----
      await page.fill('#search input', acme);
      await page.press('#search input', 'Enter');
      await page.waitForSelector('main:has-text("Acme Imports LLC")');
      await page.waitForSelector('main:has-text("Internal accounts")');

      // ---- Reset the platform ----
      await open('overview', 'Sandbox clock');
      await page.click('button[data-act=reset]');
      await expect.poll(customerCount).toBe(0);

      // ---- The operator view: every platform, reset one, reset all ----
      await page.click('#signout');
      await page.fill('#signin-operator input[name=key]', 'wrong');
      await page.click('#signin-operator button');
      await page.waitForSelector('#err-operator:has-text("401")');
      await page.fill('#signin-operator input[name=key]', ADMIN_KEY);
      await page.click('#signin-operator button');
      await page.waitForSelector('main:has-text("All platforms")');
      const other = await t.call('POST', '/admin/platforms', { name: 'Second platform' }, admin);
      expect(other.statusCode, other.body).toBe(201);
      const { platform, credentials } = other.json() as { platform: { id: string }; credentials: { clientId: string; clientSecret: string } };
      const otherAuth = { authorization: `Basic ${Buffer.from(`${credentials.clientId}:${credentials.clientSecret}`).toString('base64')}` };
      expect((await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Other Person', currencies: ['USD'] }, otherAuth)).statusCode).toBe(201);
      expect((await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Default Person', currencies: ['USD'] })).statusCode).toBe(201);
      await page.waitForSelector('main:has-text("Second platform")');
      await shot('platforms');
      await page.click(`button[data-act=resetPlatform][data-id="${platform.id}"]`);
      await expect.poll(async () => (await get<{ totalCount: number }>('/customers?limit=1', otherAuth)).totalCount).toBe(0);
      expect(await customerCount()).toBe(1);
      await page.click('button[data-act=resetAll]');
      await expect.poll(customerCount).toBe(0);
    } finally {
      await browser.close();
    }
  });

  // The page re-reads itself every 3 s. A sign-in whose check is still running, or a page read
  // still running at sign-out, must not let that timer replace the sign-in form or its error line.
  it.skipIf(!existsSync(CHROMIUM))('a slow sign-in check and a page read running at sign-out keep the sign-in form and its error line', async () => {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'] });
    try {
      const page = await browser.newPage();
      page.setDefaultTimeout(15_000);
      const slow = new Set<string>();
      await page.route('**/*', async (route) => {
        const path = new URL(route.request().url()).pathname;
        if (slow.has(path)) await new Promise((r) => setTimeout(r, 4_000)); // longer than the timer's 3 s
        await route.continue();
      });
      await page.goto(`${url}/dashboard`);

      // A wrong operator key, checked slowly: the error line shows, nobody is signed in.
      slow.add('/admin/platforms');
      await page.fill('#signin-operator input[name=key]', 'wrong');
      await page.click('#signin-operator button');
      await page.waitForSelector('#err-operator:has-text("401")');
      expect(await page.evaluate("sessionStorage.getItem('admin')")).toBeNull();
      // A wrong platform pair, checked slowly: the same.
      slow.add('/2025-10-13/sandbox/clock');
      await page.fill('#signin input[name=id]', DEFAULT_TOKEN_ID);
      await page.fill('#signin input[name=secret]', 'wrong');
      await page.click('#signin button');
      await page.waitForSelector('#err:has-text("401")');
      expect(await page.evaluate("sessionStorage.getItem('auth')")).toBeNull();
      await new Promise((r) => setTimeout(r, 3_500)); // a timer tick with nobody signed in keeps the form
      expect(await page.textContent('#err')).toContain('401');

      // Signed in; the overview's read is slow; signing out during it keeps the sign-in form.
      await page.fill('#signin input[name=secret]', DEFAULT_SECRET);
      await page.click('#signin button');
      await page.waitForSelector('#signout');
      await page.click('#signout');
      await page.waitForSelector('#signin-operator');
      await new Promise((r) => setTimeout(r, 5_000)); // the overview's read ends after the sign-out
      expect(await page.$('#signin-operator')).not.toBeNull();
      expect(await page.evaluate("sessionStorage.getItem('auth')")).toBeNull();
    } finally {
      await browser.close();
    }
  });
});
