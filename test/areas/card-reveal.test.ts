import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceAndDeliver, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { fund, newCustomer } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';

// POST /cards/{id}/reveal as the reference describes it (docs/cards.md "Reveal"): the answer
// is only {panEmbedUrl, expiresAt}; the PAN and CVV are shown by the page behind the URL,
// which the sandbox serves itself (short-lived, one card, sealed; expired or altered: an
// error page with nothing of the card), and they appear in no API answer, webhook or
// request-log entry. (The server's own log lines: cards-logs.test.ts, a real process.)

interface Card {
  id: string;
  last4?: string;
  expMonth?: number;
  expYear?: number;
}

/** What the reveal page shows: the PAN (spaces removed), the CVV and the expiry MM/YYYY. */
function shown(html: string): { pan: string; cvv: string; expiry: string } | undefined {
  const dd = [...html.matchAll(/<dd>([^<]*)<\/dd>/g)].map((m) => m[1]!);
  if (dd.length !== 3) return undefined;
  return { pan: dd[0]!.replace(/\s/g, ''), expiry: dd[1]!, cvv: dd[2]! };
}

describe(`card reveal (${STORE})`, () => {
  let t: TestApp;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await makeApp();
    receiver = await new Receiver().start();
    expect((await t.call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
  }, 30_000);
  afterAll(async () => {
    await receiver?.stop();
    await t?.close();
  });

  async function card(platformCardId: string): Promise<Card> {
    const c = await newCustomer(t, ['USD']);
    await fund(t, c.accounts.USD!.id, 5_000);
    const res = await t.call('POST', '/cards', { cardholderId: c.id, form: 'VIRTUAL', fundingSources: [c.accounts.USD!.id], platformCardId });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Card;
  }
  const open = (url: string) => {
    const u = new URL(url);
    return t.app.inject({ method: 'GET', url: `${u.pathname}${u.search}` });
  };

  it('answers only panEmbedUrl and expiresAt; the page shows the PAN, CVV and expiry of that card', async () => {
    const c = await card('reveal-a-100');
    const now = Date.parse(((await t.call('GET', '/sandbox/clock')).json() as { now: string }).now);
    const res = await t.call('POST', `/cards/${c.id}/reveal`);
    expect(res.statusCode, res.body).toBe(200);
    const r = res.json() as { panEmbedUrl: string; expiresAt: string };
    expect(Object.keys(r).sort()).toEqual(['expiresAt', 'panEmbedUrl']);
    expect(Date.parse(r.expiresAt) - now).toBe(5 * 60_000);
    expect(new URL(r.panEmbedUrl).pathname).toBe('/hosted/cards/reveal');

    const page = await open(r.panEmbedUrl);
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    const s = shown(page.body)!;
    expect(s.pan).toMatch(/^4\d{15}$/);
    expect(s.pan.endsWith(c.last4!)).toBe(true);
    const luhn = s.pan.split('').reverse().reduce((sum, d, i) => sum + (i % 2 ? (Number(d) * 2 > 9 ? Number(d) * 2 - 9 : Number(d) * 2) : Number(d)), 0);
    expect(luhn % 10).toBe(0);
    expect(s.cvv).toMatch(/^\d{3}$/);
    expect(s.expiry).toBe(`${String(c.expMonth).padStart(2, '0')}/${c.expYear}`);

    // Another card's URL shows that card, not this one.
    const other = await card('reveal-b-200');
    const o = shown((await open(((await t.call('POST', `/cards/${other.id}/reveal`)).json() as { panEmbedUrl: string }).panEmbedUrl)).body)!;
    expect(o.pan.endsWith(other.last4!)).toBe(true);
    expect(o.pan).not.toBe(s.pan);
  });

  it('the served OpenAPI document declares only panEmbedUrl and expiresAt', async () => {
    const doc = (await t.call('GET', '/openapi.json')).json() as { components: { schemas: Record<string, { properties: Record<string, unknown>; required?: string[] }> } };
    const schema = doc.components.schemas.CardRevealResponse!;
    expect(Object.keys(schema.properties).sort()).toEqual(['expiresAt', 'panEmbedUrl']);
    expect([...(schema.required ?? [])].sort()).toEqual(['expiresAt', 'panEmbedUrl']);
  });

  it('an expired, altered or unknown URL shows an error page and nothing of the card', async () => {
    const c = await card('reveal-c-300');
    const { panEmbedUrl } = (await t.call('POST', `/cards/${c.id}/reveal`)).json() as { panEmbedUrl: string };
    const good = await open(panEmbedUrl);
    const { pan, cvv } = shown(good.body)!;
    const u = new URL(panEmbedUrl);
    const token = u.searchParams.get('t')!;
    const noCard = (body: string) => {
      expect(shown(body)).toBeUndefined();
      expect(body.replace(/\s/g, '')).not.toContain(pan);
      expect(body).not.toContain(`<dd>${cvv}</dd>`);
      expect(body).not.toContain(c.last4!);
    };

    // Altered: any character of the sealed token changed, cut short, or none at all.
    const flipped = token.slice(0, 20) + (token[20] === 'A' ? 'B' : 'A') + token.slice(21);
    for (const bad of [flipped, token.slice(0, -4), 'forged']) {
      const page = await t.app.inject({ method: 'GET', url: `${u.pathname}?t=${encodeURIComponent(bad)}` });
      expect(page.statusCode).toBe(404);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      noCard(page.body);
    }
    for (const query of ['', `?t=${encodeURIComponent(token)}&t=${encodeURIComponent(token)}`, `?t=${'A'.repeat(5000)}`]) {
      const page = await t.app.inject({ method: 'GET', url: `${u.pathname}${query}` });
      expect(page.statusCode, query.slice(0, 40)).toBe(404);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      noCard(page.body);
    }

    // Expired: five minutes on the platform's clock.
    await advanceAndDeliver(t, 301);
    const expired = await open(panEmbedUrl);
    expect(expired.statusCode).toBe(410);
    expect(expired.body).toContain('expired');
    noCard(expired.body);
  });

  it('a URL of a card closed since shows nothing', async () => {
    const c = await card('reveal-d-400');
    const { panEmbedUrl } = (await t.call('POST', `/cards/${c.id}/reveal`)).json() as { panEmbedUrl: string };
    expect((await t.call('PATCH', `/cards/${c.id}`, { state: 'CLOSED' })).statusCode).toBe(200);
    const page = await open(panEmbedUrl);
    expect(page.statusCode).toBe(410);
    expect(shown(page.body)).toBeUndefined();
  });

  it('the PAN and CVV are in no API answer, webhook, stored answer or request-log entry; the URL is not in the request log', async () => {
    const c = await card('reveal-e-500');
    const res = await t.call('POST', `/cards/${c.id}/reveal`, undefined, { 'idempotency-key': `reveal-${c.id}` });
    const { panEmbedUrl } = res.json() as { panEmbedUrl: string };
    const replay = await t.call('POST', `/cards/${c.id}/reveal`, undefined, { 'idempotency-key': `reveal-${c.id}` });
    const { pan, cvv } = shown((await open(panEmbedUrl)).body)!;
    const token = new URL(panEmbedUrl).searchParams.get('t')!;

    await t.call('POST', `/sandbox/cards/${c.id}/simulate/authorization`, { amount: 100, currency: { code: 'USD' }, merchant: { descriptor: 'REVEAL SHOP' } });
    await t.running.webhooks.runDue();
    const requestLog = await t.call('GET', '/sandbox/requests?limit=200');
    expect(requestLog.statusCode, requestLog.body).toBe(200);
    expect(requestLog.body).toContain(`/cards/${c.id}/reveal`);
    const texts = [
      res.body,
      replay.body,
      (await t.call('GET', `/cards/${c.id}`)).body,
      (await t.call('GET', '/cards?limit=100')).body,
      (await t.call('GET', `/cards/${c.id}/transactions`)).body,
      requestLog.body,
      ...receiver.got.map((x) => x.body),
      JSON.stringify(await t.store.db.selectFrom('idempotency_keys').selectAll().execute()),
      JSON.stringify(await t.store.db.selectFrom('card_reveals').selectAll().execute()),
    ];
    for (const text of texts) {
      expect(text).not.toContain(pan);
      expect(text).not.toMatch(new RegExp(`"cvv"\\s*:\\s*"${cvv}"`));
    }
    // The reveal answer itself is the only place the URL is sent: the log and stored answers keep it out.
    for (const text of texts.slice(2)) expect(text).not.toContain(token);
  });

  it('only an ACTIVE or FROZEN card has details to reveal; another platform’s card is 404', async () => {
    const c = await card('reveal-f-600');
    expect((await t.call('PATCH', `/cards/${c.id}`, { state: 'CLOSED' })).statusCode).toBe(200);
    envelope(await t.call('POST', `/cards/${c.id}/reveal`), 409, 'CONFLICT');
    envelope(await t.call('POST', '/cards/Card:01950000-0000-7000-8000-000000000000/reveal'), 404, 'REFERENCE_NOT_FOUND');
  });
});
