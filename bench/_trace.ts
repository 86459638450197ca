import pg from 'pg';
import Database from 'better-sqlite3';
import { makeApp } from '../test/helpers.js';
import { newCustomer } from '../test/money-helpers.js';
let on = false; const log: string[] = [];
const q = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: any[]) {
  if (on) log.push('PG ' + (typeof args[0] === 'string' ? args[0] : args[0]?.text ?? args[0]?.name).slice(0, 160));
  return (q as any).apply(this, args);
} as any;
const probe = new Database(':memory:');
const Statement = Object.getPrototypeOf(probe.prepare('select 1')) as any;
probe.close();
for (const m of ['run', 'get', 'all', 'iterate']) { const orig = Statement[m]; Statement[m] = function (this: any, ...a: any[]) { if (on) log.push('SQ ' + this.source.slice(0, 160)); return orig.apply(this, a); }; }
const t = await makeApp({ worker: false });
const c = await newCustomer(t, ['USD']);
const r = await t.call('POST', `/customers/external-accounts`, { customerId: c.id, currency: 'MXN', accountInfo: { accountType: 'MXN_ACCOUNT', clabeNumber: '032180000118359719', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Rosa Receiver' } } });
const acc = JSON.parse(r.body); if (r.statusCode >= 300) console.log(r.body);
const path = `/receiver/external-account/${encodeURIComponent(acc.id)}?customerId=${encodeURIComponent(c.id)}`;
console.log((await t.call('GET', path)).statusCode);
on = true; const x = await t.call('GET', path); on = false; console.log(x.statusCode);
console.log(log.join('\n'));
log.length = 0; on = true; await t.call('GET', `/customers/${c.id}`); on = false; console.log('--- customer'); console.log(log.join('\n'));
await t.close();
