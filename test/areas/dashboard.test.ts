import { existsSync, mkdirSync } from 'node:fs';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_SCRIPT } from '../../src/dashboard/script.js';
import { DEFAULT_SECRET, DEFAULT_TOKEN_ID, makeApp, STORE, type TestApp } from '../helpers.js';

// The dashboard: served by the server itself, no CDN; walked in a real browser (Debian's
// chromium through playwright-core) when /usr/bin/chromium exists, screenshots in test-results/.

const CHROMIUM = '/usr/bin/chromium';

describe(`dashboard (${STORE})`, { timeout: 180_000 }, () => {
  let t: TestApp;
  let url: string;
  beforeAll(async () => {
    t = await makeApp();
    url = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => t.close());

  it('serves the page and its one script from the server, nothing from elsewhere', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/dashboard' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toContain('<script src="/dashboard/app.js"></script>');
    expect(page.body).not.toMatch(/https?:\/\//);
    const script = await t.app.inject({ method: 'GET', url: '/dashboard/app.js' });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toMatch(/javascript/);
    expect(() => new vm.Script(DASHBOARD_SCRIPT)).not.toThrow();
    expect((await t.app.inject({ method: 'GET', url: '/dashboard/customers' })).body).toContain('/dashboard/app.js');
  });

  it.skipIf(!existsSync(CHROMIUM))('signs in, walks every page, does the sandbox actions, sees the request log update; screenshots', async () => {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'] });
    mkdirSync('test-results', { recursive: true });
    try {
      const page = await browser.newPage({ viewport: { width: 1366, height: 800 } });
      page.on('dialog', (d) => void d.accept(d.type() === 'prompt' ? '120' : undefined));
      await page.goto(`${url}/dashboard`);
      await page.fill('input[name=id]', 'wrong');
      await page.fill('input[name=secret]', 'wrong');
      await page.click('form.signin button');
      await page.waitForSelector('#err:has-text("401")');
      await page.fill('input[name=id]', DEFAULT_TOKEN_ID);
      await page.fill('input[name=secret]', DEFAULT_SECRET);
      await page.click('form.signin button');
      await page.waitForSelector('#clock');
      const customer = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Browser Person', currencies: ['USD'] });
      expect(customer.statusCode).toBe(201);
      // The clock button advances by 120 s (the prompt's answer).
      const before = (await t.call('GET', '/sandbox/clock')).json().offsetSeconds as number;
      await page.click('#advance');
      await expect.poll(async () => (await t.call('GET', '/sandbox/clock')).json().offsetSeconds).toBe(before + 120);
      await page.screenshot({ path: `test-results/dashboard-overview-${STORE}.png`, fullPage: true });
      for (const [hash, text] of [
        ['customers', 'Browser Person'],
        ['accounts', 'Fund'],
        ['external', 'External accounts'],
        ['transactions', 'Transactions'],
        ['webhooks', 'Webhook deliveries'],
        ['requests', '/2025-10-13/customers'],
      ] as const) {
        await page.goto(`${url}/dashboard#${hash}`);
        await page.waitForSelector(`main:has-text("${text}")`);
        await page.screenshot({ path: `test-results/dashboard-${hash}-${STORE}.png`, fullPage: true });
      }
      // Live: a request made elsewhere shows up in the open request log.
      await t.call('GET', '/customers?limit=7');
      await page.waitForSelector('main:has-text("/2025-10-13/customers?limit=7")', { timeout: 15_000 });
      // Search by id.
      const id = customer.json().id as string;
      await page.goto(`${url}/dashboard#search/${encodeURIComponent(id)}`);
      await page.waitForSelector('main:has-text("Browser Person")');
      // Reset from the overview.
      await page.goto(`${url}/dashboard#overview`);
      await page.click('#reset');
      await expect.poll(async () => (await t.call('GET', '/customers')).json().data.length).toBe(0);
    } finally {
      await browser.close();
    }
  });
});
