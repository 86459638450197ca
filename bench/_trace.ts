import Database from 'better-sqlite3';
import { makeApp } from '../test/helpers.js';
import { fund, newCustomer, quoteRequest, usdExternal } from '../test/money-helpers.js';
let on = false;
const probe = new Database(':memory:');
const Statement = Object.getPrototypeOf(probe.prepare('select 1')) as Record<string, (...a: unknown[]) => unknown>;
probe.close();
for (const m of ['run', 'get', 'all', 'iterate']) {
  const orig = Statement[m]!;
  Statement[m] = function (this: { source: string }, ...args: unknown[]) {
    if (on) console.log('SQL', m, this.source.replace(/\s+/g, ' ').slice(0, 220));
    return orig.apply(this, args);
  };
}
const t = await makeApp({ worker: false });
const c = await newCustomer(t, ['USD']);
const usd = c.accounts.USD!.id;
const dest = await usdExternal(t, c.id, '000000456');
await fund(t, usd, 100_000_000);
await t.call('POST', '/quotes', quoteRequest(usd, dest, 1_000, { immediatelyExecute: true }));
await t.call('POST', '/sandbox/clock/advance', { seconds: 86_400 });
on = true;
console.log('=== flow');
await t.call('POST', '/quotes', quoteRequest(usd, dest, 1_000, { immediatelyExecute: true }));
console.log('=== settle');
await t.call('POST', '/sandbox/clock/advance', { seconds: 86_400 });
on = false;
await t.close();
