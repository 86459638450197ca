import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { type Account, newCustomer, otherPlatformAuth } from '../money-helpers.js';

// POST /crypto/estimate-withdrawal-fee (black box, over HTTP): the sandbox fee table of
// docs/sandbox.md ("Crypto withdrawal fee estimates"), its conversions, and every refusal.

interface Estimate {
  networkFee: number;
  networkFeeAsset: string;
  applicationFee: number;
  totalFee: number;
  netAmount: number;
}
interface FieldError {
  field: string;
  constraint?: Record<string, unknown>;
  message: string;
}

const PATH = '/crypto/estimate-withdrawal-fee';

const EVM = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const SOLANA = '4Nd1m6Qkq7RfKuE5vQ9qP9Tn6H94Ueqb4xXHzsAbd8Wg';
const TRON = 'TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL';
const SPARK = 'spark1pgssyuuuhnrrdjswal5c3s3rafw9w3y5dd4cjy3duxlf7hjzkp0rqx6dj6mrhu';
const BITCOIN = 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4';
const INVOICE =
  'lnbc15u1p3xnhl2pp5jptserfk3zk4qy42tlucycrfwxhydvlemu9pqr93tuzlv9cc7g3sdqsvfhkcap3xyhx7un8cqzpgxqzjcsp5f8c52y2stc300gl6s4xswtjpc37hrnnr3c9wvtgjfuvqmpm35evq9qyyssqy4lgd8tj637qcjp05rdpxxykjenthxftej7a2zzmwrmrl70fyj9hvj0rewhzj7jfyuwkwcg9g2jpwtk3wkjtwnkdks84hsnu8xps5vsq4gj5hs';

const ADDRESS: Record<string, string> = {
  SOLANA,
  ETHEREUM: EVM,
  BASE: EVM,
  POLYGON: EVM,
  PLASMA: EVM,
  TRON,
  BITCOIN,
  SPARK,
  LIGHTNING: INVOICE,
};

const ALL_NETWORKS = ['SOLANA', 'ETHEREUM', 'BASE', 'POLYGON', 'TRON', 'PLASMA', 'BITCOIN', 'SPARK', 'LIGHTNING'];
/** Every name the schema takes: the networks, then the sandbox's testnet names for them (docs/sandbox.md, "Crypto networks"). */
const ALL_NAMES = [...ALL_NETWORKS, 'SOLANA_DEVNET', ...ALL_NETWORKS.slice(1).map((n) => `${n}_TESTNET`)];

/** The fee table, row by row: network, currency, an amount, and the expected estimate. */
const TABLE: Array<[string, string, number, Estimate]> = [
  // 5,000 lamports = 0.000005 SOL × US$160 = US$0.0008 = 800 × 10^-6 USDC.
  ['SOLANA', 'USDC', 10_000_000, { networkFee: 5_000, networkFeeAsset: 'SOL', applicationFee: 0, totalFee: 800, netAmount: 9_999_200 }],
  ['SOLANA', 'USDT', 10_000_000, { networkFee: 5_000, networkFeeAsset: 'SOL', applicationFee: 0, totalFee: 800, netAmount: 9_999_200 }],
  // The fee asset itself: no conversion.
  ['SOLANA', 'SOL', 1_000_000_000, { networkFee: 5_000, networkFeeAsset: 'SOL', applicationFee: 0, totalFee: 5_000, netAmount: 999_995_000 }],
  // 0.00013 ETH × US$2,500 = US$0.325.
  ['ETHEREUM', 'USDC', 10_000_000, { networkFee: 130_000_000_000_000, networkFeeAsset: 'ETH', applicationFee: 0, totalFee: 325_000, netAmount: 9_675_000 }],
  ['ETHEREUM', 'USDT', 10_000_000, { networkFee: 130_000_000_000_000, networkFeeAsset: 'ETH', applicationFee: 0, totalFee: 325_000, netAmount: 9_675_000 }],
  // 0.001 ETH (amounts are JSON integers: at most 2^53 − 1 wei, about 0.009 ETH).
  ['ETHEREUM', 'ETH', 1_000_000_000_000_000, { networkFee: 130_000_000_000_000, networkFeeAsset: 'ETH', applicationFee: 0, totalFee: 130_000_000_000_000, netAmount: 870_000_000_000_000 }],
  // 0.000001 ETH × US$2,500 = US$0.0025.
  ['BASE', 'USDC', 10_000_000, { networkFee: 1_000_000_000_000, networkFeeAsset: 'ETH', applicationFee: 0, totalFee: 2_500, netAmount: 9_997_500 }],
  // 0.00195 POL × US$0.19 = US$0.0003705: 370.5 × 10^-6 USDC, rounded up to 371.
  ['POLYGON', 'USDC', 10_000_000, { networkFee: 1_950_000_000_000_000, networkFeeAsset: 'POL', applicationFee: 0, totalFee: 371, netAmount: 9_999_629 }],
  // 13.5 TRX × US$0.25 = US$3.375.
  ['TRON', 'USDT', 10_000_000, { networkFee: 13_500_000, networkFeeAsset: 'TRX', applicationFee: 0, totalFee: 3_375_000, netAmount: 6_625_000 }],
  ['PLASMA', 'USDT', 10_000_000, { networkFee: 0, networkFeeAsset: 'XPL', applicationFee: 0, totalFee: 0, netAmount: 10_000_000 }],
  ['BITCOIN', 'BTC', 100_000, { networkFee: 1_410, networkFeeAsset: 'BTC', applicationFee: 0, totalFee: 1_410, netAmount: 98_590 }],
  ['SPARK', 'BTC', 100_000, { networkFee: 0, networkFeeAsset: 'BTC', applicationFee: 0, totalFee: 0, netAmount: 100_000 }],
  ['LIGHTNING', 'BTC', 100_000, { networkFee: 10, networkFeeAsset: 'BTC', applicationFee: 0, totalFee: 10, netAmount: 99_990 }],
];

const cfg = (currencyCode: string, minAmount: number, maxAmount: number) => ({ currencyCode, minAmount, maxAmount, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING', 'INCOMING'] });

describe(`crypto withdrawal fee estimates (${STORE})`, () => {
  let t: TestApp;
  let accounts: Record<string, Account>;
  let other: Record<string, string>;

  beforeAll(async () => {
    t = await makeApp();
    // The default platform supports USDC, USDT and BTC; ETH and SOL are added.
    const config = (await t.call('GET', '/config')).json() as { supportedCurrencies: unknown[] };
    const patched = await t.call('PATCH', '/config', {
      supportedCurrencies: [...config.supportedCurrencies, cfg('ETH', 1_000_000_000_000, 9_000_000_000_000_000), cfg('SOL', 1_000_000, 1_000_000_000_000)],
    });
    expect(patched.statusCode, patched.body).toBe(200);
    accounts = (await newCustomer(t, ['USD', 'USDC', 'USDT', 'BTC', 'ETH', 'SOL'])).accounts;
    other = await otherPlatformAuth(t);
  });
  afterAll(async () => t.close());

  const body = (currency: string, cryptoNetwork: string, amount: number, extra: Record<string, unknown> = {}) => ({
    internalAccountId: accounts[currency]!.id,
    currency,
    cryptoNetwork,
    amount,
    destinationAddress: ADDRESS[cryptoNetwork],
    ...extra,
  });

  async function estimate(b: Record<string, unknown>, headers?: Record<string, string>): Promise<Estimate> {
    const res = await t.call('POST', PATH, b, headers);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Estimate;
  }

  function fieldErrors(e: { details?: Record<string, unknown> }): FieldError[] {
    return e.details?.errors as FieldError[];
  }

  it('has a crypto internal account for every currency it withdraws', () => {
    for (const c of ['USDC', 'USDT', 'BTC', 'ETH', 'SOL']) expect(accounts[c]?.id, c).toMatch(/^InternalAccount:/);
  });

  it.each(TABLE)('estimates %s / %s from the sandbox table', async (network, currency, amount, expected) => {
    const r = await estimate(body(currency, network, amount));
    expect(r).toEqual(expected);
    expect(Object.keys(r)).toEqual(['networkFee', 'networkFeeAsset', 'applicationFee', 'totalFee', 'netAmount']);
  });

  it('covers every network of the table', () => {
    expect([...new Set(TABLE.map(([n]) => n))].sort()).toEqual([...ALL_NETWORKS].sort());
  });

  it('is the same for every amount above the fee: only netAmount moves', async () => {
    const small = await estimate(body('USDC', 'SOLANA', 801));
    expect(small).toEqual({ networkFee: 5_000, networkFeeAsset: 'SOL', applicationFee: 0, totalFee: 800, netAmount: 1 });
    const large = await estimate(body('USDC', 'SOLANA', Number.MAX_SAFE_INTEGER));
    expect(large.netAmount).toBe(Number.MAX_SAFE_INTEGER - 800);
    // The smallest amounts that pass: totalFee + 1 (the rounded-up fee on POLYGON too).
    expect((await estimate(body('USDC', 'POLYGON', 372))).netAmount).toBe(1);
    expect((await estimate(body('USDT', 'TRON', 3_375_001))).netAmount).toBe(1);
    expect((await estimate(body('BTC', 'BITCOIN', 1_411))).netAmount).toBe(1);
    // A network without a fee: any positive amount.
    expect(await estimate(body('BTC', 'SPARK', 1))).toEqual({ networkFee: 0, networkFeeAsset: 'BTC', applicationFee: 0, totalFee: 0, netAmount: 1 });
    expect((await estimate(body('USDT', 'PLASMA', 1))).netAmount).toBe(1);
  });

  it('accepts every address form of each network', async () => {
    const ok = async (currency: string, network: string, destinationAddress: string) => {
      const res = await t.call('POST', PATH, body(currency, network, 10_000_000, { destinationAddress }));
      expect(res.statusCode, `${network} ${destinationAddress}: ${res.body}`).toBe(200);
    };
    // EVM: one case, or EIP-55 checksummed.
    for (const n of ['ETHEREUM', 'BASE', 'POLYGON']) {
      await ok('USDC', n, EVM.toLowerCase());
      await ok('USDC', n, `0x${EVM.slice(2).toUpperCase()}`);
    }
    await ok('USDT', 'PLASMA', EVM);
    // Bitcoin: segwit v0 and taproot (bech32m), upper case, testnet, legacy P2PKH and P2SH.
    for (const a of [
      'bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0',
      BITCOIN.toUpperCase(),
      'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx',
      '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2',
      '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy',
    ]) {
      await ok('BTC', 'BITCOIN', a);
    }
    // Lightning: an invoice, a BOLT 12 offer or a Lightning address.
    await ok('BTC', 'LIGHTNING', 'lno1pqps7sjqpgtyzm3qv4uxzmtsd3jjqer9wd3hy6tsw35k7msjzfpy7nz5yqcnygrfdej82um5wf5k2uckyypwa3eyt44h6txtxquqh7lz5djge4afgfjn7k4rgrkuag0jsd5xvxg');
    await ok('BTC', 'LIGHTNING', 'satoshi@wallet.example.com');
    // The funding address the sandbox gives a BTC account is a Bitcoin address.
    const funding = (await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(accounts.BTC!.customerId!)}&currency=BTC`)).json() as {
      data: Array<{ fundingPaymentInstructions: Array<{ accountOrWalletInfo: { address?: string } }> }>;
    };
    const fundingAddress = funding.data[0]!.fundingPaymentInstructions[0]!.accountOrWalletInfo.address!;
    expect(fundingAddress).toMatch(/^bc1q/);
    await ok('BTC', 'BITCOIN', fundingAddress);
  });

  it('estimates for the platform\'s own crypto accounts too', async () => {
    const list = (await t.call('GET', '/platform/internal-accounts')).json() as { data: Account[] };
    const usdc = list.data.find((a) => a.balance.currency.code === 'USDC')!;
    expect(usdc.customerId).toBeUndefined();
    const r = await estimate({ internalAccountId: usdc.id, currency: 'USDC', cryptoNetwork: 'BASE', amount: 5_000_000, destinationAddress: EVM });
    expect(r).toEqual({ networkFee: 1_000_000_000_000, networkFeeAsset: 'ETH', applicationFee: 0, totalFee: 2_500, netAmount: 4_997_500 });
  });

  it('stores nothing: the balance and the estimate stay the same', async () => {
    const first = await estimate(body('USDC', 'ETHEREUM', 10_000_000));
    expect(await estimate(body('USDC', 'ETHEREUM', 10_000_000))).toEqual(first);
    const list = (await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(accounts.USDC!.customerId!)}&currency=USDC`)).json() as { data: Account[] };
    expect(list.data[0]!.balance.amount).toBe(0);
  });

  describe('400 INVALID_AMOUNT', () => {
    it('names the minimum when the amount does not cover the fee', async () => {
      for (const [network, currency, , expected] of TABLE) {
        if (expected.totalFee === 0) continue;
        const e = envelope(await t.call('POST', PATH, body(currency, network, expected.totalFee)), 400, 'INVALID_AMOUNT');
        expect(e.details, `${network} ${currency}`).toMatchObject({ amount: expected.totalFee, totalFee: expected.totalFee, minimumAmount: expected.totalFee + 1, currency });
        expect(fieldErrors(e)).toEqual([{ field: 'amount', message: expect.stringContaining(`at least ${expected.totalFee + 1}`) }]);
        expect(e.message).toContain(String(expected.totalFee + 1));
      }
    });

    it('refuses zero and negative amounts, even on a network without a fee', async () => {
      for (const amount of [0, -1, -Number.MAX_SAFE_INTEGER]) {
        const e = envelope(await t.call('POST', PATH, body('BTC', 'SPARK', amount)), 400, 'INVALID_AMOUNT');
        expect(e.details).toMatchObject({ amount, totalFee: 0, minimumAmount: 1, currency: 'BTC' });
      }
      const e = envelope(await t.call('POST', PATH, body('USDC', 'SOLANA', 0)), 400, 'INVALID_AMOUNT');
      expect(e.details).toMatchObject({ totalFee: 800, minimumAmount: 801 });
      const tiny = envelope(await t.call('POST', PATH, body('USDC', 'SOLANA', 799)), 400, 'INVALID_AMOUNT');
      expect(tiny.details).toMatchObject({ amount: 799, minimumAmount: 801 });
    });
  });

  describe('400 INVALID_CURRENCY', () => {
    it('when the account does not hold the currency', async () => {
      const e = envelope(await t.call('POST', PATH, body('USDC', 'ETHEREUM', 10_000_000, { currency: 'USDT' })), 400, 'INVALID_CURRENCY');
      expect(fieldErrors(e)).toEqual([{ field: 'currency', constraint: { enum: ['USDC'] }, message: expect.stringContaining('USDC') }]);
      const btc = envelope(await t.call('POST', PATH, body('USDC', 'SOLANA', 10_000_000, { currency: 'BTC' })), 400, 'INVALID_CURRENCY');
      expect(fieldErrors(btc)).toEqual([expect.objectContaining({ field: 'currency', constraint: { enum: ['USDC'] } })]);
      // A fiat code on a crypto account: the account's currency is what is offered.
      const usd = envelope(await t.call('POST', PATH, body('BTC', 'BITCOIN', 10_000, { currency: 'USD' })), 400, 'INVALID_CURRENCY');
      expect(fieldErrors(usd)).toEqual([expect.objectContaining({ field: 'currency', constraint: { enum: ['BTC'] } })]);
    });
  });

  describe('400 INVALID_INPUT', () => {
    it('when the network does not carry the currency, with the networks that do', async () => {
      const cases: Array<[string, string, string[]]> = [
        ['USDC', 'TRON', ['SOLANA', 'ETHEREUM', 'BASE', 'POLYGON']],
        ['USDC', 'BITCOIN', ['SOLANA', 'ETHEREUM', 'BASE', 'POLYGON']],
        ['USDT', 'BASE', ['SOLANA', 'ETHEREUM', 'TRON', 'PLASMA']],
        ['BTC', 'SOLANA', ['BITCOIN', 'SPARK', 'LIGHTNING']],
        ['ETH', 'BASE', ['ETHEREUM']],
        ['SOL', 'ETHEREUM', ['SOLANA']],
      ];
      for (const [currency, network, allowed] of cases) {
        // The address is right for the network asked: only the pairing is wrong.
        const e = envelope(await t.call('POST', PATH, body(currency, network, 10_000_000)), 400, 'INVALID_INPUT');
        expect(fieldErrors(e), `${currency} on ${network}`).toEqual([{ field: 'cryptoNetwork', constraint: { enum: allowed }, message: expect.stringContaining(`does not carry ${currency}`) }]);
      }
    });

    it('when the address is not one of the network\'s', async () => {
      const cases: Array<[string, string, string, Record<string, unknown>]> = [
        ['USDC', 'ETHEREUM', SOLANA, { pattern: '^0x[0-9a-fA-F]{40}$' }],
        ['USDC', 'BASE', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD', { format: 'eip55-address' }],
        ['USDC', 'POLYGON', '0x5aaeb6053f3e94c9b9a09f33669435e7ef1bea', { pattern: '^0x[0-9a-fA-F]{40}$' }],
        ['USDT', 'PLASMA', TRON, { pattern: '^0x[0-9a-fA-F]{40}$' }],
        ['USDC', 'SOLANA', EVM, { pattern: '^[1-9A-HJ-NP-Za-km-z]{32,44}$' }],
        ['USDC', 'SOLANA', '1111111111111111111111111111111111', { format: 'solana-address' }],
        ['USDT', 'TRON', 'TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeM', { format: 'tron-address' }],
        ['USDT', 'TRON', EVM, { format: 'tron-address' }],
        ['BTC', 'SPARK', 'spark1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq', { format: 'spark-address' }],
        ['BTC', 'LIGHTNING', `${INVOICE.slice(0, -1)}q`, { format: 'lightning-destination' }],
        ['BTC', 'LIGHTNING', BITCOIN, { format: 'lightning-destination' }],
        ['BTC', 'BITCOIN', 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5', { format: 'bitcoin-address' }],
        ['BTC', 'BITCOIN', 'bc1qW508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', { format: 'bitcoin-address' }],
        ['BTC', 'BITCOIN', '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3', { format: 'bitcoin-address' }],
        // A segwit version 1 address in bech32 instead of bech32m (BIP 350).
        ['BTC', 'BITCOIN', 'bc1pw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7k7grplx', { format: 'bitcoin-address' }],
        ['BTC', 'BITCOIN', SPARK, { format: 'bitcoin-address' }],
      ];
      for (const [currency, network, destinationAddress, constraint] of cases) {
        const e = envelope(await t.call('POST', PATH, body(currency, network, 10_000_000, { destinationAddress })), 400, 'INVALID_INPUT');
        expect(fieldErrors(e), `${network} ${destinationAddress}`).toEqual([{ field: 'destinationAddress', constraint, message: expect.any(String) }]);
      }
    });

    it('when the account is not a crypto account', async () => {
      const e = envelope(await t.call('POST', PATH, { internalAccountId: accounts.USD!.id, currency: 'USD', cryptoNetwork: 'SOLANA', amount: 10_000, destinationAddress: SOLANA }), 400, 'INVALID_INPUT');
      expect(fieldErrors(e)).toEqual([
        { field: 'internalAccountId', message: expect.stringContaining('INTERNAL_FIAT') },
        { field: 'currency', constraint: { enum: ['USDC', 'USDT', 'SOL', 'ETH', 'BTC'] }, message: expect.any(String) },
      ]);
      const usdc = envelope(await t.call('POST', PATH, { internalAccountId: accounts.USD!.id, currency: 'USDC', cryptoNetwork: 'SOLANA', amount: 10_000, destinationAddress: SOLANA }), 400, 'INVALID_INPUT');
      expect(fieldErrors(usdc).map((x) => x.field)).toEqual(['internalAccountId']);
    });

    it('lists every invalid field of a body its schema accepts in one 400', async () => {
      // A network that does not carry the currency, a bad address and a zero amount.
      const e = envelope(
        await t.call('POST', PATH, { internalAccountId: accounts.USDC!.id, currency: 'USDC', cryptoNetwork: 'TRON', amount: 0, destinationAddress: 'nope' }),
        400,
        'INVALID_INPUT',
      );
      expect(fieldErrors(e)).toEqual([
        { field: 'cryptoNetwork', constraint: { enum: ['SOLANA', 'ETHEREUM', 'BASE', 'POLYGON'] }, message: expect.any(String) },
        { field: 'destinationAddress', constraint: { format: 'tron-address' }, message: expect.any(String) },
        { field: 'amount', message: 'must be greater than 0' },
      ]);
      // A currency the account does not hold: the network is not judged against it.
      const wrong = envelope(
        await t.call('POST', PATH, { internalAccountId: accounts.USDC!.id, currency: 'BTC', cryptoNetwork: 'TRON', amount: -5, destinationAddress: 'nope' }),
        400,
        'INVALID_INPUT',
      );
      expect(fieldErrors(wrong)).toEqual([
        { field: 'currency', constraint: { enum: ['USDC'] }, message: expect.any(String) },
        { field: 'destinationAddress', constraint: { format: 'tron-address' }, message: expect.any(String) },
        { field: 'amount', message: 'must be greater than 0' },
      ]);
      // The amount under the fee and a bad address: INVALID_INPUT naming both.
      const both = envelope(await t.call('POST', PATH, body('USDC', 'SOLANA', 10, { destinationAddress: EVM })), 400, 'INVALID_INPUT');
      expect(fieldErrors(both).map((x) => x.field)).toEqual(['destinationAddress', 'amount']);
      expect(fieldErrors(both)[1]!.message).toContain('at least 801');
    });

    it('lists the schema\'s problems and the other checks together', async () => {
      const missing = envelope(await t.call('POST', PATH, {}), 400, 'INVALID_INPUT');
      expect(fieldErrors(missing).map((x) => x.field).sort()).toEqual(['amount', 'cryptoNetwork', 'currency', 'destinationAddress', 'internalAccountId']);
      expect(fieldErrors(missing).every((x) => x.message === 'is required')).toBe(true);

      const e = envelope(
        await t.call('POST', PATH, { internalAccountId: accounts.USDC!.id, currency: 'XXX', cryptoNetwork: 'DOGECOIN', amount: 1.5, destinationAddress: '' }),
        400,
        'INVALID_INPUT',
      );
      const errors = fieldErrors(e);
      expect(errors.map((x) => x.field).sort()).toEqual(['amount', 'cryptoNetwork', 'currency', 'destinationAddress']);
      expect(errors.find((x) => x.field === 'currency')?.constraint).toEqual({ format: 'iso4217' });
      expect(errors.find((x) => x.field === 'cryptoNetwork')?.constraint).toEqual({ enum: ALL_NAMES });
      expect(errors.find((x) => x.field === 'destinationAddress')?.constraint).toEqual({ minLength: 1 });

      // A schema problem (the amount's type) with a wrong currency and an address of another network.
      const mixed = envelope(
        await t.call('POST', PATH, { internalAccountId: accounts.USDC!.id, currency: 'USDT', cryptoNetwork: 'ETHEREUM', amount: '100', destinationAddress: SOLANA }),
        400,
        'INVALID_INPUT',
      );
      expect(fieldErrors(mixed)).toEqual([
        { field: 'amount', message: 'must be integer' },
        { field: 'currency', constraint: { enum: ['USDC'] }, message: expect.any(String) },
        { field: 'destinationAddress', constraint: { pattern: '^0x[0-9a-fA-F]{40}$' }, message: expect.any(String) },
      ]);
      // A network that does not carry the currency, with an amount beyond what JSON carries exactly.
      const carry = envelope(
        await t.call('POST', PATH, { internalAccountId: accounts.BTC!.id, currency: 'BTC', cryptoNetwork: 'BASE', amount: 2 ** 53, destinationAddress: EVM }),
        400,
        'INVALID_INPUT',
      );
      expect(fieldErrors(carry).map((x) => x.field)).toEqual(['amount', 'cryptoNetwork']);
      // An unknown account with a schema problem: the 400 comes first.
      const unknown = envelope(await t.call('POST', PATH, { ...body('USDC', 'SOLANA', 10_000_000), internalAccountId: 'InternalAccount:nope', amount: 'x' }), 400, 'INVALID_INPUT');
      expect(fieldErrors(unknown).map((x) => x.field)).toEqual(['amount']);
    });

    it('refuses a body that is not a JSON object', async () => {
      envelope(await t.call('POST', PATH), 400);
      envelope(await t.call('POST', PATH, [body('USDC', 'SOLANA', 10_000_000)]), 400, 'INVALID_INPUT');
      envelope(await t.call('POST', PATH, 'not json', { 'content-type': 'application/json' }), 400, 'INVALID_REQUEST_FORMAT');
    });
  });

  describe('404', () => {
    it('for an unknown internal account', async () => {
      for (const id of ['InternalAccount:0190b5a2-7c1e-7000-8000-000000000000', 'nope', 'ExternalAccount:0190b5a2-7c1e-7000-8000-000000000000']) {
        const e = envelope(await t.call('POST', PATH, { ...body('USDC', 'SOLANA', 10_000_000), internalAccountId: id }), 404, 'REFERENCE_NOT_FOUND');
        expect(e.message).toContain(id);
      }
    });

    it('for another platform\'s account, and its own accounts work for it', async () => {
      const b = body('USDC', 'SOLANA', 10_000_000);
      envelope(await t.call('POST', PATH, b, other), 404, 'REFERENCE_NOT_FOUND');
      // Even with other problems in the body: the account is looked up first.
      envelope(await t.call('POST', PATH, { ...b, currency: 'BTC', amount: 0 }, other), 404, 'REFERENCE_NOT_FOUND');
      const theirs = await newCustomer(t, ['USDC'], { headers: other });
      const r = await estimate({ ...b, internalAccountId: theirs.accounts.USDC!.id }, other);
      expect(r.totalFee).toBe(800);
      envelope(await t.call('POST', PATH, { ...b, internalAccountId: theirs.accounts.USDC!.id }), 404, 'REFERENCE_NOT_FOUND');
      // A schema problem with another platform's account: what that account holds is not told
      // (no currency error naming USDC), only the checks the body allows on its own.
      const e = envelope(await t.call('POST', PATH, { ...b, internalAccountId: theirs.accounts.USDC!.id, currency: 'BTC', amount: 'x' }), 400, 'INVALID_INPUT');
      expect(fieldErrors(e).map((x) => x.field)).toEqual(['amount', 'cryptoNetwork']);
      expect(JSON.stringify(e)).not.toContain(theirs.accounts.USDC!.id);
    });
  });

  describe('authentication', () => {
    it('needs Basic credentials', async () => {
      const b = body('USDC', 'SOLANA', 10_000_000);
      envelope(await t.call('POST', PATH, b, { authorization: '' }), 401, 'UNAUTHORIZED');
      envelope(await t.call('POST', PATH, b, { authorization: 'Bearer some-agent-token' }), 401, 'UNAUTHORIZED');
      envelope(await t.call('POST', PATH, b, { authorization: basic('test-token-id', 'wrong') }), 401, 'UNAUTHORIZED');
      // Unauthenticated is 401 whatever the body.
      envelope(await t.call('POST', PATH, {}, { authorization: '' }), 401, 'UNAUTHORIZED');
    });

    it('is a read: a VIEW token may estimate', async () => {
      const tok = await t.call('POST', '/tokens', { name: 'viewer', permissions: ['VIEW'] });
      expect(tok.statusCode, tok.body).toBe(201);
      const { clientId, clientSecret } = tok.json() as { clientId: string; clientSecret: string };
      expect((await estimate(body('BTC', 'LIGHTNING', 1_000), { authorization: basic(clientId, clientSecret) })).totalFee).toBe(10);
    });
  });

  it('is in the OpenAPI document', async () => {
    const doc = (await t.call('GET', '/openapi.json')).json() as {
      paths: Record<string, Record<string, { operationId: string; tags: string[]; responses: Record<string, unknown>; security?: unknown }>>;
    };
    const op = doc.paths['/crypto/estimate-withdrawal-fee']?.post;
    expect(op?.operationId).toBe('estimateCryptoWithdrawalFee');
    expect(op?.tags).toEqual(['Cross-Currency Transfers']);
    expect(Object.keys(op?.responses ?? {}).sort()).toEqual(['200', '400', '401', '404', '500']);
  });
});
