import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECK_DIGIT_HINT } from '../../src/api/external-accounts/account-checks.js';
import { evmAddressProblem, ibanProblem, isAbaRoutingNumber, isClabe } from '../../src/kernel/rails.js';
import { sandboxSuffix } from '../../src/sandbox/rules/identifiers.js';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { fund, newCustomer, PERSON, type QuoteBody, quoteRequest } from '../money-helpers.js';

// The sandbox keeps the IBAN mod 97, ABA routing and EIP-55 checks (issue 13): the
// identifiers docs/sandbox/external-accounts.md ("Ready-to-use identifiers") gives for each magic suffix pass
// them and carry their suffix, and a failed check digit is a 400 with a hint pointing there.

const ROUTING = '021000021';

interface Row {
  suffix: string;
  usd: string;
  iban: string;
  clabe: string;
  evm: string;
}

/** The rows of the "Ready-to-use identifiers" table of docs/sandbox/external-accounts.md. */
function documentedRows(): Row[] {
  const doc = readFileSync(new URL('../../docs/sandbox/external-accounts.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('### Ready-to-use identifiers'), doc.indexOf('### Beneficiary name verification'));
  return [...section.matchAll(/^\| `(\d{3})` \| `(\d+)` \| `([A-Z0-9]+)` \| `(\d{18})` \| `(0x[0-9a-f]{40})` \|$/gm)].map((m) => ({
    suffix: m[1]!,
    usd: m[2]!,
    iban: m[3]!,
    clabe: m[4]!,
    evm: m[5]!,
  }));
}

const SUFFIXES = ['002', '003', '004', '005', '006', '007', '102', '103', '104', '105', '106', '107'];

describe('the documented identifiers', () => {
  it('cover every suffix of the transfer, quote and beneficiary tables, pass the checks and carry their suffix', () => {
    const rows = documentedRows();
    expect(rows.map((r) => r.suffix)).toEqual(SUFFIXES);
    expect(isAbaRoutingNumber(ROUTING)).toBe(true);
    for (const r of rows) {
      expect(ibanProblem(r.iban), r.iban).toBeUndefined();
      expect(isClabe(r.clabe), r.clabe).toBe(true);
      expect(evmAddressProblem(r.evm), r.evm).toBeUndefined();
      expect(sandboxSuffix({ accountType: 'USD_ACCOUNT', accountNumber: r.usd, routingNumber: ROUTING })).toBe(r.suffix);
      expect(sandboxSuffix({ accountType: 'EUR_ACCOUNT', iban: r.iban })).toBe(r.suffix);
      expect(sandboxSuffix({ accountType: 'MXN_ACCOUNT', clabeNumber: r.clabe })).toBe(r.suffix);
      expect(sandboxSuffix({ accountType: 'BASE_WALLET', address: r.evm })).toBe(r.suffix);
    }
  });

  it('the hosted docs’ examples are refused by the checks the sandbox keeps', () => {
    expect(ibanProblem('DE89370400440532013003')).toBe('checksum');
    expect(ibanProblem('DE08370400440532013003')).toBeUndefined(); // the same account, valid check digits
    expect(ibanProblem('DK5000400040116243')).toBe('checksum');
    expect(isAbaRoutingNumber('987654321')).toBe(false);
    expect(isAbaRoutingNumber('123456789')).toBe(false);
    expect(evmAddressProblem('0xAbCDEF1234567890aBCdEf1234567890ABcDef12')).toBe('checksum');
  });
});

describe(`sandbox identifiers through the API (${STORE})`, () => {
  let t: TestApp;
  let customerId: string;

  beforeAll(async () => {
    t = await makeApp();
    customerId = (await newCustomer(t, ['USD'])).id;
  });
  afterAll(async () => t.close());

  const create = (currency: string, accountInfo: Record<string, unknown>) => t.call('POST', '/customers/external-accounts', { customerId, currency, accountInfo });
  const beneficiary = { beneficiaryType: 'INDIVIDUAL', fullName: 'Maria Garcia Lopez', countryOfResidence: 'DE' };

  it('each documented identifier is accepted and gets its suffix’s beneficiary outcome', async () => {
    const expected: Record<string, string> = { '102': 'NOT_MATCHED', '103': 'PARTIAL_MATCH', '104': 'PENDING', '106': 'UNSUPPORTED', '107': 'CHECKED_BY_RECEIVING_FI' };
    for (const r of documentedRows()) {
      const bodies: Array<[string, Record<string, unknown>]> = [
        ['USD', { accountType: 'USD_ACCOUNT', accountNumber: r.usd, routingNumber: ROUTING, bankName: 'Sandbox Bank', beneficiary }],
        ['EUR', { accountType: 'EUR_ACCOUNT', iban: r.iban, beneficiary }],
        ['MXN', { accountType: 'MXN_ACCOUNT', clabeNumber: r.clabe, beneficiary }],
        ['USDC', { accountType: 'BASE_WALLET', address: r.evm }],
      ];
      for (const [currency, info] of bodies) {
        const res = await create(currency, info);
        if (r.suffix === '105') {
          envelope(res, 400, 'INVALID_BANK_ACCOUNT');
          continue;
        }
        expect(res.statusCode, `${r.suffix} ${info.accountType as string}: ${res.body}`).toBe(201);
        if (info.accountType === 'BASE_WALLET') continue; // no beneficiary, no name verification
        expect((res.json() as { beneficiaryVerificationStatus: string }).beneficiaryVerificationStatus).toBe(expected[r.suffix] ?? 'MATCHED');
      }
    }
  });

  it('a failed check digit is 400 INVALID_INPUT listing the field, with details.hint', async () => {
    const iban = envelope(await create('EUR', { accountType: 'EUR_ACCOUNT', iban: 'DE89370400440532013003', beneficiary }), 400, 'INVALID_INPUT');
    expect(iban.details).toEqual({
      errors: [{ field: 'accountInfo.iban', constraint: { format: 'iban' }, message: 'is not a valid IBAN: its check digits do not match (ISO 7064 mod 97)' }],
      hint: CHECK_DIGIT_HINT,
    });
    expect(CHECK_DIGIT_HINT).toContain('docs/sandbox.md');

    const dkk = envelope(await create('DKK', { accountType: 'DKK_ACCOUNT', iban: 'DK5000400040116243', beneficiary }), 400, 'INVALID_INPUT');
    expect(dkk.details).toMatchObject({ errors: [{ field: 'accountInfo.iban' }], hint: CHECK_DIGIT_HINT });

    for (const routingNumber of ['987654321', '123456789']) {
      const aba = envelope(await create('USD', { accountType: 'USD_ACCOUNT', accountNumber: '1234567003', routingNumber, bankName: 'Sandbox Bank', beneficiary }), 400, 'INVALID_INPUT');
      expect(aba.details).toEqual({
        errors: [{ field: 'accountInfo.routingNumber', constraint: { format: 'aba-routing-number' }, message: expect.stringContaining('ABA routing number') }],
        hint: CHECK_DIGIT_HINT,
      });
    }

    const evm = envelope(await create('USDC', { accountType: 'BASE_WALLET', address: '0xAbCDEF1234567890aBCdEf1234567890ABcDef12' }), 400, 'INVALID_INPUT');
    expect(evm.details).toMatchObject({ errors: [{ field: 'accountInfo.address', constraint: { format: 'eip55-address' } }], hint: CHECK_DIGIT_HINT });
    // Its lowercase form is an address in one case: accepted.
    expect((await create('USDC', { accountType: 'BASE_WALLET', address: '0xabcdef1234567890abcdef1234567890abcdef12' })).statusCode).toBe(201);

    // Other problems carry no hint: a wrong length, a missing field; with a check digit among them, the hint and every field.
    const length = envelope(await create('EUR', { accountType: 'EUR_ACCOUNT', iban: 'DE8937040044053201300', beneficiary }), 400, 'INVALID_INPUT');
    expect(Object.keys(length.details!)).toEqual(['errors']);
    const both = envelope(await create('USD', { accountType: 'USD_ACCOUNT', routingNumber: '123456789', beneficiary: PERSON }), 400, 'INVALID_INPUT');
    expect((both.details!.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual(['accountInfo.accountNumber', 'accountInfo.routingNumber']);
    expect(both.details!.hint).toBe(CHECK_DIGIT_HINT);
  });

  it('the documented IBAN ending in 003 gives the long payment: completed after 6 minutes', async () => {
    const c = await newCustomer(t, ['USD']);
    await fund(t, c.accounts.USD!.id, 100_000);
    const row = documentedRows().find((r) => r.suffix === '003')!;
    expect(row.iban).toBe('DE08370400440532013003');
    const ext = await t.call('POST', '/customers/external-accounts', { customerId: c.id, currency: 'EUR', accountInfo: { accountType: 'EUR_ACCOUNT', iban: row.iban, beneficiary } });
    expect(ext.statusCode, ext.body).toBe(201);
    const q = await t.call('POST', '/quotes', quoteRequest(c.accounts.USD!.id, (ext.json() as { id: string }).id, 10_000, { immediatelyExecute: true }));
    expect(q.statusCode, q.body).toBe(201);
    const txId = (q.json() as QuoteBody).transactionId;
    const status = async () => ((await t.call('GET', `/transactions/${encodeURIComponent(txId)}`)).json() as { status: string }).status;
    const advance = async (seconds: number) => expect((await t.call('POST', '/sandbox/clock/advance', { seconds })).statusCode).toBe(200);
    await advance(359);
    expect(await status()).toBe('PROCESSING');
    await advance(1);
    expect(await status()).toBe('COMPLETED');
    await assertLedgerInvariants(t.store);
  });
});
