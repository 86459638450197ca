import { createHash } from 'node:crypto';
import * as zlib from 'node:zlib';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { DICTIONARY_V1_BYTES, dictionaryV1, lateFilled, lateTemplate, packPayload, packPayloadV2, payloadText, textBody, unpackPayload } from '../../src/kernel/event-bodies.js';
import { LATE_VALUES } from '../../src/kernel/db/late-move.js';

// The one-shot zlib calls, counted: version 4 packs and reads through a kept stream and makes
// them only when it cannot (kernel/event-bodies.ts `KeptStream`).
vi.mock('node:zlib', async (original) => {
  const real = await original<typeof import('node:zlib')>();
  return { ...real, deflateRawSync: vi.fn(real.deflateRawSync), inflateRawSync: vi.fn(real.inflateRawSync) };
});
const oneShots = () => vi.mocked(zlib.deflateRawSync).mock.calls.length + vi.mocked(zlib.inflateRawSync).mock.calls.length;
beforeEach(() => {
  vi.mocked(zlib.deflateRawSync).mockClear();
  vi.mocked(zlib.inflateRawSync).mockClear();
});

// The stored form of event payloads (issue 15): packed once per event, read back byte for byte.

const row = { id: 'Webhook:01a221a9-5125-71c6-99c9-9cc19d8df78f', resource_id: 'Transaction:01a221a9-50a5-73dd-aa54-435a3a70a249', created_at: '2026-11-28T10:17:52.930Z' };

const paymentEvent = (n: number) =>
  JSON.stringify({
    id: `Webhook:${crypto.randomUUID()}`,
    type: 'OUTGOING_PAYMENT.COMPLETED',
    timestamp: '2026-11-27T21:18:40.559Z',
    data: {
      id: `Transaction:${crypto.randomUUID()}`,
      direction: 'DEBIT',
      source: { sourceType: 'ACCOUNT', accountId: `InternalAccount:${crypto.randomUUID()}`, currency: 'USD' },
      destination: { destinationType: 'ACCOUNT', accountId: `ExternalAccount:${crypto.randomUUID()}`, currency: 'USD' },
      customerId: `Customer:${crypto.randomUUID()}`,
      platformCustomerId: `cust_${n}`,
      createdAt: '2026-11-27T21:18:39.559Z',
      updatedAt: '2026-11-27T21:18:40.559Z',
      exchangeRate: 1,
      quoteId: `Quote:${crypto.randomUUID()}`,
      status: 'COMPLETED',
      type: 'OUTGOING',
      sentAmount: { amount: 1000 + n, currency: { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 } },
      fees: 0,
      receivedAmount: { amount: 1000 + n, currency: { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 } },
    },
  });

describe('event bodies', () => {
  it('round-trips any JSON text exactly: unicode, escapes, large and empty payloads', () => {
    const texts = [
      paymentEvent(1),
      JSON.stringify({ s: 'é ✓ 😀 \u2028 "quoted" \\ back', n: [1, 2.5, -3e21], nested: { deep: [{}, [], null, true] } }),
      JSON.stringify({ big: 'x'.repeat(50_000), list: Array.from({ length: 5_000 }, (_, i) => i) }),
      '{}',
      '',
    ];
    for (const text of texts) {
      for (const [packed, version] of [[packPayload(text, row), 4], [packPayloadV2(text, row), 2]] as const) {
        expect(packed[0]).toBe(version);
        expect(unpackPayload(packed, row)).toBe(text);
        expect(payloadText({ ...row, payload: '', body: packed })).toBe(text);
        // Versions 2 and 4 read only with the row they were stored in: its values are part of the dictionary, or elided.
        expect(() => unpackPayload(packed)).toThrow(/only with its row/);
      }
    }
  });

  it('packs a payment event to a fraction of its JSON', () => {
    for (let n = 0; n < 20; n += 1) {
      const text = paymentEvent(n);
      expect(text.length).toBeGreaterThan(900);
      expect(packPayload(text, row).length).toBeLessThan(text.length / 3);
    }
  });

  it("takes the row's own time, resource id and event id from the row (version 4: elided; version 2: the dictionary)", () => {
    const text = JSON.stringify({ id: row.id, type: 'OUTGOING_PAYMENT.COMPLETED', timestamp: row.created_at, data: { id: row.resource_id, status: 'COMPLETED', updatedAt: row.created_at } });
    const other = { id: 'Webhook:01a221a9-6fdb-7018-bdbe-b40b672c67e0', resource_id: 'Transaction:01a221a9-6fce-727c-b7ab-e7de1c01a852', created_at: '2027-01-02T03:04:05.678Z' };
    // The same text stored in another row (whose values it does not repeat) packs larger.
    for (const pack of [packPayload, packPayloadV2]) {
      expect(pack(text, row).length + 30).toBeLessThan(pack(text, other).length);
      expect(unpackPayload(pack(text, other), other)).toBe(text);
    }
    // Version 4 stores each of the row's values as one byte, not a back-reference.
    expect(packPayload(text, row).length).toBeLessThan(packPayloadV2(text, row).length);
  });

  it('packs version 4 through one kept zlib stream: the same bytes as a one-shot deflate, no one-shot call, any order of sizes', () => {
    const opts = { dictionary: dictionaryV1(), level: 3, windowBits: 12, memLevel: 4 };
    // Version 4's elision: the row's time, resource id and event id, then its time to the minute and its event id's first 9 characters after the type.
    const elide = (text: string, r: typeof row) =>
      text
        .replaceAll(r.created_at, '\u0001')
        .replaceAll(r.resource_id, '\u0002')
        .replaceAll(r.id, '\u0003')
        .replaceAll(r.created_at.slice(0, 16), '\u0004')
        .replaceAll(r.id.slice(r.id.indexOf(':') + 1, r.id.indexOf(':') + 10), '\u0005');
    const realDeflate = vi.mocked(zlib.deflateRawSync).getMockImplementation()!;
    const sameMinute = JSON.stringify({ id: row.id, data: { id: row.resource_id, createdAt: '2026-11-28T10:17:01.002Z', quoteId: 'Quote:01a221a9-0000-7000-8000-000000000000' } });
    const texts = [paymentEvent(1), '{}', paymentEvent(2).repeat(20), JSON.stringify({ id: row.id, note: 'é ✓ 😀' }), sameMinute, paymentEvent(3), ''];
    for (let round = 0; round < 3; round++) {
      for (const text of texts) {
        const body = packPayload(text, row);
        expect(body[0]).toBe(4);
        expect(body.subarray(1).equals(realDeflate(elide(text, row), opts))).toBe(true);
      }
    }
    vi.mocked(zlib.deflateRawSync).mockClear();
    for (const text of texts) expect(unpackPayload(packPayload(text, row), row)).toBe(text);
    expect(oneShots()).toBe(0);
    // The row's minute and its id's time part, where they occur in other values, are one byte each.
    expect(packPayload(sameMinute, row).length).toBeLessThan(packPayloadV2(sameMinute, row).length);
  });

  it('packs and reads version 4 one-shot when the kept buffers are too small, and goes on after a corrupt body', () => {
    const big = JSON.stringify({ id: row.id, big: 'y'.repeat(40_000) }); // over the 32 KB input buffer
    const wide = JSON.stringify({ id: row.id, blob: Array.from({ length: 20_000 }, (_, i) => i % 7) }); // packs small, reads over 64 KB
    for (const text of [big, wide]) {
      vi.mocked(zlib.deflateRawSync).mockClear();
      vi.mocked(zlib.inflateRawSync).mockClear();
      const body = packPayload(text, row);
      expect(body[0]).toBe(4);
      expect(unpackPayload(body, row)).toBe(text);
      expect(oneShots()).toBeGreaterThan(0);
    }
    const text4 = paymentEvent(4);
    const good = packPayload(text4, row);
    const corrupt = Buffer.from(good);
    corrupt.fill(0xff, 5, 25);
    expect(() => unpackPayload(corrupt, row)).toThrow();
    const truncated = good.subarray(0, good.length - 10);
    expect(() => unpackPayload(truncated, row)).toThrow();
    // The kept stream was dropped and is made again: the next bodies read, through it.
    vi.mocked(zlib.inflateRawSync).mockClear();
    expect(unpackPayload(good, row)).toBe(text4);
    expect(vi.mocked(zlib.inflateRawSync).mock.calls.length).toBe(0);
  });

  it('packs version 4 the same bytes as when it was introduced (stored bodies never change)', () => {
    const usd = { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 };
    const text = JSON.stringify({ id: row.id, type: 'OUTGOING_PAYMENT.PENDING', timestamp: row.created_at, data: { id: row.resource_id, direction: 'DEBIT', status: 'PENDING', createdAt: row.created_at, updatedAt: row.created_at, sentAmount: { amount: 1000, currency: usd } } });
    const settled = JSON.stringify({ id: row.id, type: 'OUTGOING_PAYMENT.COMPLETED', timestamp: row.created_at, data: { id: row.resource_id, quoteId: 'Quote:01a221a9-4e11-7000-8000-00000000000a', createdAt: '2026-11-28T10:17:51.930Z', settledAt: row.created_at, sentAmount: { amount: 1000, currency: usd } } });
    const pinned = [text, settled].map((t) => {
      const body = packPayload(t, row);
      expect(unpackPayload(body, row)).toBe(t);
      return { bytes: body.length, sha: createHash('sha256').update(body).digest('hex') };
    });
    expect(pinned).toEqual([
      { bytes: 39, sha: '6e7165fe547ecad45d5a9a3126040429c6b006f7cb8b8bec5aa9660a3887bc0a' },
      { bytes: 64, sha: '2cc3ef2c6496af65f55049250b80a85783df47b2ac98d265a3dead02df1baf5f' },
    ]);
  });

  it('reads bodies of version 1 (the shared dictionary alone), stored before version 2', () => {
    // Written by version 1's packPayload (commit 2e207aa).
    const v1 = Buffer.from('AbWWwQ2AMAwDJwqK04Y0zMGLX9SqW3R3xAsJQX9sYEv22Q9qMEIE4aQQJUNdyb06ea3wVlq30idkmc4oQFJ28AbbVBZPfMxwc0vhULLUGkVoppw0UhiHZP9y/N6T64f+EMcxTg==', 'base64');
    expect(v1[0]).toBe(1);
    const text = JSON.stringify({ id: row.id, type: 'OUTGOING_PAYMENT.COMPLETED', timestamp: row.created_at, data: { id: row.resource_id, status: 'COMPLETED', sentAmount: { amount: 1000, currency: { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 } } } });
    expect(unpackPayload(v1)).toBe(text);
    expect(payloadText({ ...row, payload: '', body: v1 })).toBe(text);
  });

  it('reads rows stored before bodies (JSON in payload), and refuses an unknown version', () => {
    expect(payloadText({ payload: '{"a":1}', body: null })).toBe('{"a":1}');
    expect(payloadText({ payload: '{"a":1}' })).toBe('{"a":1}');
    const packed = packPayload('{"a":1}', row);
    packed[0] = 9;
    expect(() => unpackPayload(packed, row)).toThrow(/unknown version 9/);
  });

  it("keeps a body as text (version 3) with the row's values elided, read back byte for byte", () => {
    const texts = [
      paymentEvent(1),
      // The row's values repeated, next to each other, inside other strings, and `$` patterns a replacement string would read.
      JSON.stringify({ id: row.id, type: 'CUSTOMER.KYC_APPROVED', timestamp: row.created_at, data: { id: row.resource_id, createdAt: row.created_at, updatedAt: row.created_at, note: `${row.id}${row.resource_id}x${row.created_at}`, fullName: "$& $' $` $$ $1 é ✓ 😀" } }),
      JSON.stringify({ s: 'é ✓ 😀 \u2028 "quoted" \\ back \u0001 \u0002 \u0003', n: [1, 2.5] }),
      '{}',
      '',
    ];
    for (const text of texts) {
      const body = textBody(text, row);
      expect(body[0]).toBe(3);
      expect(unpackPayload(body, row)).toBe(text);
      expect(payloadText({ ...row, payload: '', body })).toBe(text);
      expect(() => unpackPayload(body)).toThrow(/only with its row/);
    }
    // Each occurrence of a row value is one byte.
    const event = texts[1]!;
    const occurrences = (v: string) => event.split(v).length - 1;
    expect(textBody(event, row).length).toBe(
      1 + Buffer.byteLength(event) - occurrences(row.created_at) * (row.created_at.length - 1) - occurrences(row.resource_id) * (row.resource_id.length - 1) - occurrences(row.id) * (row.id.length - 1),
    );
  });

  it('packs instead (version 2) a text holding a marker byte raw, which no JSON.stringify output does, or for a row with an empty value', () => {
    for (const raw of ['{"a":"\u0001"}', 'x\u0002', '\u0003']) {
      for (const body of [textBody(raw, row), packPayload(raw, row)]) {
        expect(body[0]).toBe(2);
        expect(unpackPayload(body, row)).toBe(raw);
      }
    }
    for (const odd of [{ ...row, resource_id: '' }, { ...row, id: 'Webhook:' }, { ...row, resource_id: 'Customer:\u0004' }, { ...row, created_at: '' }]) {
      const body = packPayload('{"a":1,"b":"Webhook:01a221a9-5125"}', odd);
      expect(body[0]).toBe(2);
      expect(unpackPayload(body, odd)).toBe('{"a":1,"b":"Webhook:01a221a9-5125"}');
    }
    // Version 4's own markers (0x04, 0x05) in the text: version 2 too.
    for (const raw of ['{"a":"\u0004"}', '\u0005']) {
      expect(packPayload(raw, row)[0]).toBe(2);
      expect(unpackPayload(packPayload(raw, row), row)).toBe(raw);
    }
  });

  it('packs (version 2) the same bytes as before issue 35 built the dictionary in a kept buffer and packed in 1 KB chunks', () => {
    // SHA-256 of what packPayload of commit 303e4c2 (a Buffer.concat per dictionary, 16 KB
    // chunks) wrote for each case: stored bodies must never change.
    let x = 0x2545f491;
    const hex = (n: number) => {
      let s = '';
      for (let i = 0; i < n; i++) {
        x ^= x << 13;
        x >>>= 0;
        x ^= x >>> 17;
        x ^= x << 5;
        x >>>= 0;
        s += (x & 15).toString(16);
      }
      return s;
    };
    const usd = { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 };
    const cases: [string, string, typeof row, number, string][] = [
      ['a payment event', JSON.stringify({ id: row.id, type: 'OUTGOING_PAYMENT.PENDING', timestamp: row.created_at, data: { id: row.resource_id, direction: 'DEBIT', status: 'PENDING', createdAt: row.created_at, updatedAt: row.created_at, sentAmount: { amount: 1000, currency: usd } } }), row, 45, 'da2d840638d6c8a6c7030cca899d407977feafcb300c6ddd9278bda56172d6ad'],
      ['non-ASCII row values', JSON.stringify({ id: 'Webhook:é', data: { id: 'Customer:✓😀', name: 'Zoë' } }), { id: 'Webhook:é', resource_id: 'Customer:✓😀', created_at: '2026-11-28T10:17:52.930Z' }, 22, 'ac459a19ad1590d1c68d3111b7c869202d6694a496ee2c5a51305a7e5540387a'],
      ['row values too long for the whole dictionary', JSON.stringify({ id: row.id, data: { id: 'R'.repeat(900) } }), { ...row, resource_id: 'R'.repeat(900) }, 26, 'b155491f6c3bc6a0162d73ac336de5b4174578b8a0f244570b7ec4b65491c1f7'],
      ['an output of several chunks', JSON.stringify({ id: row.id, data: { id: row.resource_id, blob: hex(6000) } }), row, 3234, 'accef297ba52e363fb7296fafb4c7db4941f002c8843da236fba9a860fa800f0'],
      ['an empty text', '', row, 3, '01ac26723cbcba804b62c46419db1c078912c2905c421b5be95ed5b3523cb78b'],
    ];
    // Twice, in turn: each row's dictionary is written over the previous one's.
    for (let round = 0; round < 2; round++) {
      for (const [name, text, r, bytes, sha] of cases) {
        const body = packPayloadV2(text, r);
        expect({ name, bytes: body.length, sha: createHash('sha256').update(body).digest('hex') }).toEqual({ name, bytes, sha });
        expect(unpackPayload(body, r)).toBe(text);
      }
    }
  });

  it('keeps a template whose figures the database appends (version 5), read back as the text with those figures', () => {
    const balanceEvent = (available: number, total: number) =>
      JSON.stringify({
        id: row.id,
        type: 'INTERNAL_ACCOUNT.BALANCE_UPDATED',
        timestamp: row.created_at,
        data: { id: row.resource_id, balance: { amount: available, currency: { code: 'USD' } }, totalBalance: { amount: total, currency: { code: 'USD' } }, note: 'ünïcode' },
      });
    const [a, t] = LATE_VALUES;
    const template = lateTemplate(balanceEvent(a, t), row, LATE_VALUES)!;
    expect(template[0]).toBe(5);
    // As the database writes it: the figures appended in ASCII, comma-separated.
    expect(unpackPayload(lateFilled(template, [95_000, 100_000]), row)).toBe(balanceEvent(95_000, 100_000));
    expect(payloadText({ payload: '', body: lateFilled(template, [0, -12]), ...row })).toBe(balanceEvent(0, -12));
    // A text without the stand-ins has no template (its body is packed as usual).
    expect(lateTemplate(balanceEvent(1, 2), row, LATE_VALUES)).toBeUndefined();
    // The figures are not in the template: it is the same whatever the move returns.
    expect(template.includes(Buffer.from('95000'))).toBe(false);
  });

  it('keeps the dictionary inside the 4 KB window', () => {
    expect(DICTIONARY_V1_BYTES).toBeLessThanOrEqual(4096 - 262);
  });
});
