import { describe, expect, it } from 'vitest';
import { iso, ManualClock, platformNowMs } from '../../src/kernel/clock.js';
import { CURRENCIES, CURRENCY_CODES, currencyView, findCurrency, getCurrency } from '../../src/kernel/currencies.js';
import { ApiError } from '../../src/kernel/errors.js';
import { idPattern, isIdOf, newId, uuidv7 } from '../../src/kernel/ids.js';
import { assertMinorUnits, bps, currencyAmount, formatMinor, mulDiv } from '../../src/kernel/money.js';
import { decodeCursor, encodeCursor } from '../../src/kernel/pagination.js';
import { STORE } from '../helpers.js';

// The small kernel modules, as plain functions (no store involved; they run under both
// store projects all the same).

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe(`ids (${STORE})`, () => {
  it('mints <Type>:<uuid v7> ids with the version nibble 7 and the variant 10xx', () => {
    const id = newId('Customer');
    expect(id).toMatch(new RegExp(`^Customer:${UUID_V7.source.slice(1)}`));
    const hex = id.slice('Customer:'.length).replace(/-/g, '');
    expect(hex[12]).toBe('7');
    expect(parseInt(hex[16]!, 16) >> 2).toBe(0b10);
  });

  it('puts the creation millisecond in the first 48 bits', () => {
    const before = Date.now();
    const hex = newId('X').slice(2).replace(/-/g, '');
    const after = Date.now();
    const ms = parseInt(hex.slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after + 1);
  });

  it('mints 10,000 unique, strictly increasing ids in a tight loop', () => {
    const ids: string[] = [];
    for (let i = 0; i < 10_000; i += 1) ids.push(newId('Customer'));
    expect(new Set(ids).size).toBe(10_000);
    for (let i = 1; i < ids.length; i += 1) {
      if (!(ids[i - 1]! < ids[i]!)) throw new Error(`id ${i} (${ids[i]}) does not sort after ${ids[i - 1]}`);
    }
    for (const id of ids) expect(id).toMatch(/^Customer:/);
  });

  it('isIdOf checks the type prefix and the uuid', () => {
    const id = newId('Customer');
    expect(isIdOf('Customer', id)).toBe(true);
    expect(isIdOf('Cust', id)).toBe(false);
    expect(isIdOf('Quote', id)).toBe(false);
    expect(isIdOf('Customer', id.toUpperCase().replace('CUSTOMER', 'Customer'))).toBe(true);
    expect(isIdOf('Customer', `${id}0`)).toBe(false);
    expect(isIdOf('Customer', `x${id}`)).toBe(false);
    expect(isIdOf('Customer', 'Customer:not-a-uuid')).toBe(false);
    expect(isIdOf('Customer', 'Customer:')).toBe(false);
  });

  it('idPattern is an anchored pattern for the same shape', () => {
    const re = new RegExp(idPattern('Customer'));
    expect(re.test(newId('Customer'))).toBe(true);
    expect(re.test(newId('Quote'))).toBe(false);
    expect(re.test(`prefix ${newId('Customer')}`)).toBe(false);
    expect(re.test(`${newId('Customer')} suffix`)).toBe(false);
    expect(re.test('Customer:0192f7c4-1234-7abc-8def-0123456789ab')).toBe(true);
    expect(re.test('Customer:0192f7c4-1234-7abc-8def-0123456789a')).toBe(false);
  });

  it('formats an id in the v7 layout with the variant bits, and an instant as ISO text (the last one kept)', () => {
    const ids = Array.from({ length: 600 }, () => uuidv7()); // past a refill of the random pool
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids.map((id) => id.slice(19))).size).toBe(ids.length);
    for (const ms of [0, 1, Date.UTC(2026, 11, 6, 10, 0, 0, 5), Date.UTC(2026, 11, 6, 10, 0, 0, 5), 1, 253402300799999]) {
      expect(iso(ms)).toBe(new Date(ms).toISOString());
    }
  });

  it('formats an instant as toISOString does, from the number: leap days, century years, the ends of its range and beyond', () => {
    const edges = [0, 999, 86_399_999, 86_400_000, Date.UTC(2000, 1, 29, 23, 59, 59, 999), Date.UTC(2100, 2, 1), Date.UTC(2024, 11, 31, 23, 59, 59, 999), 253_402_300_799_999, 253_402_300_800_000, -1, -62_198_755_200_001, 1.5, 8.64e15];
    for (const ms of edges) expect(iso(ms)).toBe(new Date(ms).toISOString());
    expect(() => iso(Number.NaN)).toThrow(RangeError);
    // Every day from 1970 to 2400 (at an hour that moves), and random instants up to 9999.
    for (let ms = 0; ms < Date.UTC(2400, 0, 1); ms += 86_400_000 + 3_601_001) expect(iso(ms)).toBe(new Date(ms).toISOString());
    for (let i = 0; i < 20_000; i++) {
      const ms = Math.floor(Math.random() * 253_402_300_800_000);
      expect(iso(ms)).toBe(new Date(ms).toISOString());
    }
  });

  it('never mints an id ending in a sandbox magic suffix (000–009), so no id triggers a sandbox rule by chance', () => {
    // 1 in 410 random ids would end in 00 and a digit; 40,000 ids meet about a hundred such draws.
    const ids = Array.from({ length: 40_000 }, () => uuidv7());
    expect(ids.filter((id) => /00[0-9]$/.test(id))).toEqual([]);
    // The rewrite keeps the rest random: endings 010–019 appear at about twice their share.
    expect(ids.filter((id) => /01[0-9]$/.test(id)).length).toBeGreaterThan(100);
  });

  // Last in this block: minting at a future time moves the generator's notion of "last
  // millisecond" forward for the rest of this file (module state).
  it('stays increasing when the clock steps back and when one millisecond runs out of sequence', () => {
    expect(parseInt(uuidv7(Date.UTC(2030, 0, 1)).replace(/-/g, '').slice(0, 12), 16)).toBe(Date.UTC(2030, 0, 1));
    const a = uuidv7(Date.UTC(2031, 0, 1));
    const b = uuidv7(Date.UTC(2031, 0, 1) - 60_000); // the clock went back a minute
    expect(b > a).toBe(true);
    const many = Array.from({ length: 5_000 }, () => uuidv7(Date.UTC(2031, 0, 1))); // more than 12 bits of sequence
    expect(new Set(many).size).toBe(many.length);
    expect(many.every((id, i) => i === 0 || many[i - 1]! < id)).toBe(true);
    expect(many[0]! > b).toBe(true);
  });
});

describe(`money (${STORE})`, () => {
  it('mulDiv rounds half up (away from zero at the half), floor and ceil', () => {
    // 25 / 10 = 2.5; 24 / 10 = 2.4; 26 / 10 = 2.6
    expect(mulDiv(25, 1n, 10n)).toBe(3);
    expect(mulDiv(24, 1n, 10n)).toBe(2);
    expect(mulDiv(26, 1n, 10n)).toBe(3);
    expect(mulDiv(25, 1n, 10n, 'floor')).toBe(2);
    expect(mulDiv(21, 1n, 10n, 'ceil')).toBe(3);
    expect(mulDiv(20, 1n, 10n, 'ceil')).toBe(2);
    expect(mulDiv(29, 1n, 10n, 'floor')).toBe(2);
    expect(mulDiv(1, 2n, 3n)).toBe(1); // 0.667
    expect(mulDiv(1, 1n, 3n)).toBe(0); // 0.333
  });

  it('mulDiv handles negative amounts, numerators and denominators', () => {
    expect(mulDiv(-25, 1n, 10n)).toBe(-3); // -2.5 → -3
    expect(mulDiv(-24, 1n, 10n)).toBe(-2);
    expect(mulDiv(-26, 1n, 10n)).toBe(-3);
    expect(mulDiv(-21, 1n, 10n, 'floor')).toBe(-3);
    expect(mulDiv(-29, 1n, 10n, 'ceil')).toBe(-2);
    expect(mulDiv(25, -1n, 10n, 'floor')).toBe(-3);
    expect(mulDiv(25, 1n, -10n, 'ceil')).toBe(-2);
    expect(mulDiv(-25, 1n, -10n, 'floor')).toBe(2);
    expect(mulDiv(-25, 1n, -10n)).toBe(3);
    expect(mulDiv(0, 7n, 3n, 'ceil')).toBe(0);
  });

  it('mulDiv keeps precision for large amounts and refuses unsafe results', () => {
    // 2^53 - 1 is odd: times 1/2 is x.5 → rounds up.
    const max = Number.MAX_SAFE_INTEGER;
    expect(mulDiv(max, 1n, 2n)).toBe(4503599627370496);
    expect(mulDiv(max, 1n, 2n, 'floor')).toBe(4503599627370495);
    expect(mulDiv(max, 3n, 3n)).toBe(max);
    expect(() => mulDiv(max, 2n, 1n)).toThrow(RangeError);
  });

  it('bps takes basis points of an amount', () => {
    expect(bps(10_000, 150)).toBe(150); // 1.5 % of 100.00
    expect(bps(12_345, 250)).toBe(309); // 308.625 → 309
    expect(bps(12_345, 250, 'floor')).toBe(308);
    expect(bps(100, 1)).toBe(0); // 0.01
    expect(bps(100, 1, 'ceil')).toBe(1);
    expect(bps(50, 100)).toBe(1); // 0.5 → 1
    expect(bps(-50, 100)).toBe(-1); // -0.5 → -1
    expect(bps(-12_345, 250, 'ceil')).toBe(-308);
    expect(bps(1_000, 10_000)).toBe(1_000);
  });

  it('formatMinor writes the amount with its currency decimals', () => {
    expect(formatMinor(12_345, 'USD')).toBe('123.45 USD');
    expect(formatMinor(5, 'USD')).toBe('0.05 USD');
    expect(formatMinor(0, 'USD')).toBe('0.00 USD');
    expect(formatMinor(-12_345, 'USD')).toBe('-123.45 USD');
    expect(formatMinor(-5, 'EUR')).toBe('-0.05 EUR');
    expect(formatMinor(12_345, 'JPY')).toBe('12345 JPY');
    expect(formatMinor(-7, 'JPY')).toBe('-7 JPY');
    expect(formatMinor(1, 'BTC')).toBe('0.00000001 BTC');
    expect(formatMinor(123_456_789, 'BTC')).toBe('1.23456789 BTC');
    expect(formatMinor(1_500_000, 'USDC')).toBe('1.500000 USDC');
    expect(() => formatMinor(1, 'XYZ')).toThrow(/unknown currency/);
  });

  it('refuses amounts that are not safe integers', () => {
    for (const bad of [2 ** 53, -(2 ** 53), 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => assertMinorUnits(bad)).toThrow(RangeError);
      expect(() => formatMinor(bad, 'USD')).toThrow(RangeError);
      expect(() => mulDiv(bad, 1n, 1n)).toThrow(RangeError);
      expect(() => currencyAmount(bad, 'USD')).toThrow(RangeError);
    }
    expect(() => assertMinorUnits(Number.MAX_SAFE_INTEGER)).not.toThrow();
  });

  it('currencyAmount is {amount, currency} with the public currency object', () => {
    expect(currencyAmount(1_000, 'USD')).toEqual({ amount: 1_000, currency: { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 } });
  });
});

describe(`currencies (${STORE})`, () => {
  it('every currency has a code, name, symbol and a whole number of decimals ≥ 0', () => {
    expect(CURRENCY_CODES.length).toBeGreaterThan(0);
    expect(new Set(CURRENCY_CODES).size).toBe(CURRENCY_CODES.length);
    for (const code of CURRENCY_CODES) {
      const c = getCurrency(code);
      expect(c.code).toBe(code);
      expect(code).toMatch(/^[A-Z]{3,5}$/);
      expect(c.name.length).toBeGreaterThan(0);
      expect(c.symbol.length).toBeGreaterThan(0);
      expect(Number.isInteger(c.decimals) && c.decimals >= 0).toBe(true);
      expect(['FIAT', 'CRYPTO']).toContain(c.kind);
    }
    expect(CURRENCIES.size).toBe(CURRENCY_CODES.length);
  });

  it('knows the decimals of the common currencies', () => {
    expect(getCurrency('USD').decimals).toBe(2);
    expect(getCurrency('EUR').decimals).toBe(2);
    expect(getCurrency('JPY').decimals).toBe(0);
    expect(getCurrency('KRW').decimals).toBe(0);
    expect(getCurrency('BTC').decimals).toBe(8);
    expect(getCurrency('USDC').decimals).toBe(6);
    expect(getCurrency('BTC').kind).toBe('CRYPTO');
    expect(getCurrency('USD').kind).toBe('FIAT');
  });

  it('findCurrency answers undefined and getCurrency throws for an unknown code', () => {
    expect(findCurrency('XYZ')).toBeUndefined();
    expect(findCurrency('usd')).toBeUndefined();
    expect(() => getCurrency('XYZ')).toThrow(/unknown currency XYZ/);
  });

  it('currencyView is exactly {code, name, symbol, decimals}', () => {
    expect(currencyView('USD')).toStrictEqual({ code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 });
    for (const code of CURRENCY_CODES) {
      expect(Object.keys(currencyView(code)).sort()).toEqual(['code', 'decimals', 'name', 'symbol']);
    }
    expect(() => currencyView('XYZ')).toThrow();
  });
});

describe(`pagination cursors (${STORE})`, () => {
  it('round-trips an id through an opaque base64url cursor', () => {
    for (const id of [newId('Customer'), 'Token:abc', 'ünïcødé:∑', 'a'.repeat(500)]) {
      const cursor = encodeCursor(id);
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(cursor).not.toContain(id);
      expect(decodeCursor(cursor)).toBe(id);
    }
  });

  it('answers 400 INVALID_INPUT on the cursor field for anything it did not issue', () => {
    const garbage = [
      'not a cursor',
      '',
      '!!!',
      Buffer.from('null').toString('base64url'),
      Buffer.from('42').toString('base64url'),
      Buffer.from('{"id":""}').toString('base64url'),
      Buffer.from('{"id":7}').toString('base64url'),
      Buffer.from('{"other":"x"}').toString('base64url'),
      Buffer.from('{"id":"x"').toString('base64url'),
    ];
    for (const cursor of garbage) {
      let caught: unknown;
      try {
        decodeCursor(cursor);
      } catch (err) {
        caught = err;
      }
      expect(caught, `cursor ${JSON.stringify(cursor)}`).toBeInstanceOf(ApiError);
      const e = caught as ApiError;
      expect(e.status).toBe(400);
      expect(e.code).toBe('INVALID_INPUT');
      expect((e.details?.errors as Array<{ field: string }>)[0]!.field).toBe('cursor');
    }
  });
});

describe(`clock (${STORE})`, () => {
  it('ManualClock moves only by hand, and platform time adds the offset', () => {
    const clock = new ManualClock(1_000);
    expect(clock.nowMs()).toBe(1_000);
    clock.advance(500);
    expect(clock.nowMs()).toBe(1_500);
    clock.set(10_000);
    expect(clock.nowMs()).toBe(10_000);
    expect(platformNowMs(clock, 6 * 60_000)).toBe(10_000 + 6 * 60_000);
    expect(new ManualClock().nowMs()).toBe(Date.UTC(2025, 9, 13, 12, 0, 0));
  });

  it('iso is fixed-width UTC with milliseconds', () => {
    expect(iso(Date.UTC(2025, 0, 2, 3, 4, 5, 6))).toBe('2025-01-02T03:04:05.006Z');
    expect(iso(Date.UTC(2025, 0, 2))).toBe('2025-01-02T00:00:00.000Z');
  });
});
