import { afterEach, describe, expect, it } from 'vitest';
import { dummyVerifications } from '../../src/kernel/secrets.js';
import { basic, DEFAULT_AUTH, DEFAULT_TOKEN_ID, envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// Issue 14: an unknown token id and a wrong secret answer alike (and both cost a scrypt);
// repeated credential failures are throttled per token and per client address.

const SAME = 'Unknown API token id or wrong client secret';

describe(`credential failures (${STORE})`, () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const get = (auth: string, ip = '127.0.0.1') => t!.app.inject({ method: 'GET', url: '/2025-10-13/config', headers: { authorization: auth }, remoteAddress: ip });

  it('answers an unknown token id exactly like a wrong secret, and hashes for the unknown id too', async () => {
    t = await makeApp();
    const before = dummyVerifications();
    const unknown = await get(basic('no-such-token', 'whatever'));
    expect(dummyVerifications()).toBe(before + 1);
    const unknownTokenId = await get(basic('Token:01950000-0000-7000-8000-000000000000', 'whatever'));
    expect(dummyVerifications()).toBe(before + 2);
    const wrong = await get(basic(DEFAULT_TOKEN_ID, 'not-the-secret'));
    // A known token's wrong secret is a real verification, not the dummy one.
    expect(dummyVerifications()).toBe(before + 2);
    const bodies = [unknown, unknownTokenId, wrong].map((r) => envelope(r, 401, 'UNAUTHORIZED'));
    for (const b of bodies) expect(b).toEqual(bodies[0]);
    expect(bodies[0]).toEqual({ status: 401, code: 'UNAUTHORIZED', message: 'Authentication failed', reason: SAME, details: { reason: SAME } });
    expect(new Set([unknown, unknownTokenId, wrong].map((r) => JSON.stringify(Object.keys(r.headers).sort()))).size).toBe(1);
  });

  it('throttles a token after 20 failures (429 with Retry-After), even its right secret, until the minute has passed', async () => {
    t = await makeApp();
    // Failures from different addresses, so only the token's own count applies.
    for (let i = 0; i < 20; i++) envelope(await get(basic(DEFAULT_TOKEN_ID, `guess-${i}`), `10.0.0.${i + 1}`), 401, 'UNAUTHORIZED');
    t.clock.advance(30_000);
    const limited = await get(basic(DEFAULT_TOKEN_ID, 'guess-11'), '10.0.1.1');
    const e = envelope(limited, 429, 'RATE_LIMITED');
    expect(limited.headers['retry-after']).toBe('30');
    expect(e.details).toEqual({ retryAfterSeconds: 30 });
    // The right secret is not checked while the token is throttled (no oracle for guesses).
    envelope(await get(DEFAULT_AUTH, '10.0.1.2'), 429, 'RATE_LIMITED');
    // Other tokens are not affected.
    envelope(await get(basic('someone-else', 'x'), '10.0.1.3'), 401, 'UNAUTHORIZED');
    t.clock.advance(30_000);
    expect((await get(DEFAULT_AUTH, '10.0.1.2')).statusCode).toBe(200);
  });

  it('throttles an address after 100 failures over any tokens; a success in between resets nothing', async () => {
    t = await makeApp();
    const ip = '192.0.2.7';
    for (let i = 0; i < 100; i++) {
      envelope(await get(basic(`unknown-${i}`, 'x'), ip), 401, 'UNAUTHORIZED');
      if (i % 20 === 0) expect((await get(DEFAULT_AUTH, ip)).statusCode).toBe(200);
    }
    const limited = await get(basic('unknown-next', 'x'), ip);
    envelope(limited, 429, 'RATE_LIMITED');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    // Valid credentials from that address wait too; another address is not affected.
    envelope(await get(DEFAULT_AUTH, ip), 429, 'RATE_LIMITED');
    expect((await get(DEFAULT_AUTH, '192.0.2.8')).statusCode).toBe(200);
    t.clock.advance(60_000);
    expect((await get(DEFAULT_AUTH, ip)).statusCode).toBe(200);
    envelope(await get(basic('unknown-after', 'x'), ip), 401, 'UNAUTHORIZED');
  });

  it('a loopback client past its address limit: its failing attempts answer 429, its valid requests still pass', async () => {
    t = await makeApp();
    for (let i = 0; i < 100; i++) envelope(await get(basic(`unknown-${i}`, 'x')), 401, 'UNAUTHORIZED');
    const limited = await get(basic('unknown-next', 'x'));
    envelope(limited, 429, 'RATE_LIMITED');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await get(DEFAULT_AUTH)).statusCode).toBe(200);
    expect((await get(DEFAULT_AUTH, '::1')).statusCode).toBe(200);
    envelope(await get(basic('unknown-ipv6', 'x'), '::ffff:127.0.0.1'), 429, 'RATE_LIMITED');
    t.clock.advance(60_000);
    envelope(await get(basic('unknown-after', 'x')), 401, 'UNAUTHORIZED');
  });

  it('a loopback client past a token’s limit: wrong secrets answer 429, the right one still passes', async () => {
    t = await makeApp();
    for (let i = 0; i < 20; i++) envelope(await get(basic(DEFAULT_TOKEN_ID, `guess-${i}`)), 401, 'UNAUTHORIZED');
    envelope(await get(basic(DEFAULT_TOKEN_ID, 'guess-next')), 429, 'RATE_LIMITED');
    expect((await get(DEFAULT_AUTH)).statusCode).toBe(200);
    // From elsewhere the token is held off, the right secret included.
    envelope(await get(DEFAULT_AUTH, '198.51.100.4'), 429, 'RATE_LIMITED');
  });
});
