import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DICTIONARY_V1_BYTES, packPayload, payloadText, textBody, unpackPayload } from '../../src/kernel/event-bodies.js';

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
      const packed = packPayload(text, row);
      expect(packed[0]).toBe(2);
      expect(unpackPayload(packed, row)).toBe(text);
      expect(payloadText({ ...row, payload: '', body: packed })).toBe(text);
      // Version 2 reads only with the row it was stored in: its values are part of the dictionary.
      expect(() => unpackPayload(packed)).toThrow(/only with its row/);
    }
  });

  it('packs a payment event to a fraction of its JSON', () => {
    for (let n = 0; n < 20; n += 1) {
      const text = paymentEvent(n);
      expect(text.length).toBeGreaterThan(900);
      expect(packPayload(text, row).length).toBeLessThan(text.length / 3);
    }
  });

  it("takes the row's own time, resource id and event id from the dictionary", () => {
    const text = JSON.stringify({ id: row.id, type: 'OUTGOING_PAYMENT.COMPLETED', timestamp: row.created_at, data: { id: row.resource_id, status: 'COMPLETED', updatedAt: row.created_at } });
    const other = { id: 'Webhook:01a221a9-6fdb-7018-bdbe-b40b672c67e0', resource_id: 'Transaction:01a221a9-6fce-727c-b7ab-e7de1c01a852', created_at: '2027-01-02T03:04:05.678Z' };
    // The same text stored in another row (whose values it does not repeat) packs larger.
    expect(packPayload(text, row).length + 30).toBeLessThan(packPayload(text, other).length);
    expect(unpackPayload(packPayload(text, other), other)).toBe(text);
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

  it('packs instead (version 2) a text holding a marker byte raw, which no JSON.stringify output does', () => {
    for (const raw of ['{"a":"\u0001"}', 'x\u0002', '\u0003']) {
      const body = textBody(raw, row);
      expect(body[0]).toBe(2);
      expect(unpackPayload(body, row)).toBe(raw);
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
        const body = packPayload(text, r);
        expect({ name, bytes: body.length, sha: createHash('sha256').update(body).digest('hex') }).toEqual({ name, bytes, sha });
        expect(unpackPayload(body, r)).toBe(text);
      }
    }
  });

  it('keeps the dictionary inside the 4 KB window', () => {
    expect(DICTIONARY_V1_BYTES).toBeLessThanOrEqual(4096 - 262);
  });
});
