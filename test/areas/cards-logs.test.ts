import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, STORE, V } from '../helpers.js';

// A revealed PAN, CVV and reveal URL never reach the logs: the server as a real process at
// LOG_LEVEL=trace (every request and answer line), a card issued, revealed and its reveal
// page opened, then its stdout and stderr searched. (The store is the process's own
// in-memory SQLite on both projects: the logs, not the store, are under test.)

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = join(ROOT, 'bin', 'payments-service.js');
const ADMIN = 'cards-logs-admin-key';

async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => ok(port));
    });
  });
}

describe(`reveal never reaches the logs (${STORE} project)`, () => {
  let child: ChildProcess;
  let base = '';
  let out = '';

  beforeAll(async () => {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of ['PAYMENTS_API_TOKEN_ID', 'PAYMENTS_API_CLIENT_SECRET', 'PAYMENTS_SECRET_KEY', 'PAYMENTS_DATA_KEY', 'DATABASE_URL']) delete env[k];
    child = spawn(process.execPath, [BIN, 'serve'], {
      cwd: ROOT,
      env: { ...env, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'trace', DATABASE_URL: 'sqlite::memory:', PAYMENTS_ADMIN_KEY: ADMIN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stderr!.setEncoding('utf8').on('data', (s: string) => (out += s));
    base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        if ((await fetch(`${base}/healthz`)).status === 200) break;
      } catch {
        /* not up yet */
      }
      if (Date.now() > deadline) throw new Error(`server did not start: ${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 70_000);

  afterAll(async () => {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  });

  it('issues, reveals, opens the page: the PAN, CVV and URL token are in no log line', async () => {
    const platform = (await (
      await fetch(`${base}/admin/platforms`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Cards logs', regulated: true }) })
    ).json()) as { credentials: { clientId: string; clientSecret: string } };
    const auth = basic(platform.credentials.clientId, platform.credentials.clientSecret);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}${V}${path}`, { method, headers: { authorization: auth, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : null });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };
    const customer = await call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Lola Logs', currencies: ['USD'] });
    expect(customer.status, JSON.stringify(customer.json)).toBe(201);
    expect(customer.json.kycStatus).toBe('APPROVED');
    const accounts = await call('GET', `/customers/internal-accounts?customerId=${customer.json.id as string}`);
    const account = (accounts.json.data as Array<{ id: string }>)[0]!.id;
    const card = await call('POST', '/cards', { cardholderId: customer.json.id, form: 'VIRTUAL', fundingSources: [account], platformCardId: 'logs-100' });
    expect(card.status, JSON.stringify(card.json)).toBe(201);
    const reveal = await call('POST', `/cards/${card.json.id as string}/reveal`);
    expect(reveal.status).toBe(200);
    // The answer is the URL and its expiry only; the PAN and CVV are on the page behind it.
    expect(Object.keys(reveal.json).sort()).toEqual(['expiresAt', 'panEmbedUrl']);
    const { panEmbedUrl } = reveal.json as { panEmbedUrl: string };
    const page = await fetch(panEmbedUrl);
    expect(page.status).toBe(200);
    const [panText, , cvv] = [...(await page.text()).matchAll(/<dd>([^<]*)<\/dd>/g)].map((m) => m[1]!);
    const pan = panText!.replace(/\s/g, '');
    expect(pan).toMatch(/^4\d{15}$/);
    expect(cvv).toMatch(/^\d{3}$/);
    await call('GET', `/cards/${card.json.id as string}`);
    // The request log (bodies and answers) carries none of them either.
    const requests = await fetch(`${base}${V}/sandbox/requests?limit=200`, { headers: { authorization: auth } });
    expect(requests.status).toBe(200);
    const requestLog = await requests.text();
    expect(requestLog).toContain('/reveal');
    await new Promise((r) => setTimeout(r, 300));
    // The log is verbose (the requests are there) but carries none of the secrets.
    expect(out).toContain('/reveal');
    for (const text of [out, requestLog]) {
      expect(text).not.toContain(pan);
      expect(text).not.toContain(new URL(panEmbedUrl).searchParams.get('t')!);
      expect(text).not.toMatch(new RegExp(`"cvv"\\s*:\\s*"${cvv}"`));
    }
  }, 60_000);
});
