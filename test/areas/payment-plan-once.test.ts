import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeApp, STORE, type TestApp } from '../helpers.js';
import { fund, newCustomer, quoteRequest, usdExternal } from '../money-helpers.js';

// Issue 35: a quote created with immediatelyExecute works out its payment's plan (flow,
// sandbox outcome, transaction row) once, in buildQuote, and executeRow starts that same plan
// (quotes/execute.ts keepPlan) instead of working it out again. The destination's outcome is
// drawn only while planning (planOf), so its count says how many times a payment planned.
const outcomes = vi.hoisted(() => ({ calls: 0 }));
vi.mock('../../src/sandbox/rules/payment-outcomes.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/sandbox/rules/payment-outcomes.js')>();
  return {
    ...actual,
    quoteDestinationOutcome: (...args: Parameters<typeof actual.quoteDestinationOutcome>) => {
      outcomes.calls += 1;
      return actual.quoteDestinationOutcome(...args);
    },
  };
});

describe(`a payment's plan, worked out once (${STORE})`, () => {
  let t: TestApp;
  let usd: string;

  beforeAll(async () => {
    t = await makeApp({ worker: false });
    const c = await newCustomer(t, ['USD']);
    usd = c.accounts.USD!.id;
    await fund(t, usd, 10_000_000);
  });
  afterAll(async () => t.close());

  it('plans a quote executed at once a single time, and starts the plan it made (its destination decides how it settles)', async () => {
    const c = (await t.call('GET', `/internal-accounts/${usd}`)).json() as { customerId: string };
    const paid: [string, string][] = [];
    for (const [suffix, settled] of [
      ['000000456', 'COMPLETED'],
      ['000000002', 'FAILED'],
    ] as const) {
      const dest = await usdExternal(t, c.customerId, suffix);
      outcomes.calls = 0;
      const res = await t.call('POST', '/quotes', quoteRequest(usd, dest, 1_000, { immediatelyExecute: true }));
      expect(res.statusCode).toBe(201);
      expect(outcomes.calls).toBe(1);
      const quote = res.json() as { status: string; transactionId: string };
      expect(quote.status).toBe('PROCESSING');
      paid.push([quote.transactionId, settled]);
    }
    expect((await t.call('POST', '/sandbox/clock/advance', { seconds: 86_400 })).statusCode).toBe(200);
    for (const [id, settled] of paid) expect(((await t.call('GET', `/transactions/${id}`)).json() as { status: string }).status).toBe(settled);
  });

  it('plans again a quote executed later, by POST /quotes/{id}/execute', async () => {
    const c = (await t.call('GET', `/internal-accounts/${usd}`)).json() as { customerId: string };
    const dest = await usdExternal(t, c.customerId, '000000789');
    outcomes.calls = 0;
    const created = await t.call('POST', '/quotes', quoteRequest(usd, dest, 1_000));
    expect(created.statusCode).toBe(201);
    const quote = created.json() as { id: string; transactionId: string };
    const res = await t.call('POST', `/quotes/${quote.id}/execute`);
    expect(res.statusCode).toBe(200);
    expect(outcomes.calls).toBe(2);
    expect(((await t.call('GET', `/transactions/${quote.transactionId}`)).json() as { status: string }).status).toBe('PROCESSING');
  });
});
