import { describe, expect, it } from 'vitest';
import { DICTIONARY_V1_BYTES, packPayload, payloadText, unpackPayload } from '../../src/kernel/event-bodies.js';

// The stored form of event payloads (issue 15): packed once per event, read back byte for byte.

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
      const packed = packPayload(text);
      expect(packed[0]).toBe(1);
      expect(unpackPayload(packed)).toBe(text);
      expect(payloadText({ payload: '', body: packed })).toBe(text);
    }
  });

  it('packs a payment event to a fraction of its JSON', () => {
    for (let n = 0; n < 20; n += 1) {
      const text = paymentEvent(n);
      expect(text.length).toBeGreaterThan(900);
      expect(packPayload(text).length).toBeLessThan(text.length / 3);
    }
  });

  it('reads rows stored before bodies (JSON in payload), and refuses an unknown version', () => {
    expect(payloadText({ payload: '{"a":1}', body: null })).toBe('{"a":1}');
    expect(payloadText({ payload: '{"a":1}' })).toBe('{"a":1}');
    const packed = packPayload('{"a":1}');
    packed[0] = 9;
    expect(() => unpackPayload(packed)).toThrow(/unknown version 9/);
  });

  it('keeps the dictionary inside the 4 KB window', () => {
    expect(DICTIONARY_V1_BYTES).toBeLessThanOrEqual(4096 - 262);
  });
});
