import { createHash } from 'node:crypto';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { base58 } from '@scure/base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { type Account, newCustomer, usdExternal } from '../money-helpers.js';

// Stablecoin deposits on every network the reference names (black box, over HTTP):
// real-time funded quotes answer with the one wallet of the network asked for, internal
// accounts list one per network that carries their asset, each address in its network's
// form with its checksum (checked here independently of the service); the sandbox's testnet
// names are aliases echoed as sent; a network that does not carry the asset is a 400
// naming the networks that do; new platforms list USDT like USDC. docs/sandbox.md
// ("Crypto networks").

interface Instruction {
  instructionsNotes: string;
  isPlatformAccount: boolean;
  accountOrWalletInfo: { accountType: string; address: string; assetType?: string; reference: string };
}
interface Quote {
  id: string;
  transactionId: string;
  source: { sourceType: string; currency: string; customerId?: string; cryptoNetwork?: string };
  paymentInstructions: Instruction[];
}
interface FieldError {
  field: string;
  constraint?: { enum?: string[] };
  message: string;
}

/** The networks that carry each stablecoin, with their wallet shape and testnet name. */
const NETWORKS: Record<string, Array<{ network: string; wallet: string; alias: string }>> = {
  USDC: [
    { network: 'SOLANA', wallet: 'SOLANA_WALLET', alias: 'SOLANA_DEVNET' },
    { network: 'ETHEREUM', wallet: 'ETHEREUM_WALLET', alias: 'ETHEREUM_TESTNET' },
    { network: 'BASE', wallet: 'BASE_WALLET', alias: 'BASE_TESTNET' },
    { network: 'POLYGON', wallet: 'POLYGON_WALLET', alias: 'POLYGON_TESTNET' },
  ],
  USDT: [
    { network: 'SOLANA', wallet: 'SOLANA_WALLET', alias: 'SOLANA_DEVNET' },
    { network: 'ETHEREUM', wallet: 'ETHEREUM_WALLET', alias: 'ETHEREUM_TESTNET' },
    { network: 'TRON', wallet: 'TRON_WALLET', alias: 'TRON_TESTNET' },
    { network: 'PLASMA', wallet: 'PLASMA_WALLET', alias: 'PLASMA_TESTNET' },
  ],
};
const EVM_WALLETS = new Set(['ETHEREUM_WALLET', 'BASE_WALLET', 'POLYGON_WALLET', 'PLASMA_WALLET']);

// ---- Independent address checks -----------------------------------------------------------

/** EIP-55: the i-th hex letter is upper case exactly when the i-th nibble of keccak256(lower-case hex) is ≥ 8. */
function isEip55(address: string): boolean {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) return false;
  const lower = address.slice(2).toLowerCase();
  const hash = Buffer.from(keccak_256(new TextEncoder().encode(lower))).toString('hex');
  let expected = '0x';
  for (let i = 0; i < 40; i++) expected += parseInt(hash[i]!, 16) >= 8 ? lower[i]!.toUpperCase() : lower[i]!;
  return expected === address;
}

const dsha256 = (b: Uint8Array) => createHash('sha256').update(createHash('sha256').update(b).digest()).digest();

/** Tron: base58 of 0x41, 20 bytes, and the first 4 bytes of their double SHA-256. */
function isTron(address: string): boolean {
  if (!/^T[1-9A-HJ-NP-Za-km-z]{33}$/.test(address)) return false;
  const raw = base58.decode(address);
  if (raw.length !== 25 || raw[0] !== 0x41) return false;
  return Buffer.from(dsha256(raw.subarray(0, 21)).subarray(0, 4)).equals(Buffer.from(raw.subarray(21)));
}

/** Solana: base58 of a 32-byte public key. */
function isSolana(address: string): boolean {
  return /^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(address) && base58.decode(address).length === 32;
}

function validFor(wallet: string, address: string): boolean {
  if (EVM_WALLETS.has(wallet)) return isEip55(address);
  if (wallet === 'TRON_WALLET') return isTron(address);
  if (wallet === 'SOLANA_WALLET') return isSolana(address);
  return false;
}

describe(`crypto networks: stablecoin deposits on every network (${STORE})`, () => {
  let t: TestApp;
  let customerId: string;
  let ext: string;

  beforeAll(async () => {
    t = await makeApp();
    customerId = (await newCustomer(t, ['USD'])).id;
    ext = await usdExternal(t, customerId);
  });
  afterAll(async () => t.close());

  const quote = (currency: string, cryptoNetwork?: string) =>
    t.call('POST', '/quotes', {
      source: { sourceType: 'REALTIME_FUNDING', currency, customerId, ...(cryptoNetwork !== undefined ? { cryptoNetwork } : {}) },
      destination: { destinationType: 'ACCOUNT', accountId: ext },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 20_000_000,
    });
  const created = async (currency: string, cryptoNetwork: string): Promise<Quote> => {
    const res = await quote(currency, cryptoNetwork);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Quote;
  };
  const fieldErrors = (e: { details?: Record<string, unknown> }) => e.details?.errors as FieldError[];
  const instructionsOf = (a: Account | undefined) => (a as unknown as { fundingPaymentInstructions: Instruction[] }).fundingPaymentInstructions;

  it('new sandbox platforms list USDT among their currencies by default, right after USDC', async () => {
    const config = (await t.call('GET', '/config')).json() as { supportedCurrencies: Array<{ currencyCode: string; minAmount: number; maxAmount: number }> };
    const codes = config.supportedCurrencies.map((c) => c.currencyCode);
    expect(codes).toContain('USDT');
    expect(codes.indexOf('USDT')).toBe(codes.indexOf('USDC') + 1);
    expect(config.supportedCurrencies.find((c) => c.currencyCode === 'USDT')).toMatchObject({ minAmount: 1_000_000, maxAmount: 100_000_000_000 });
    // So a customer can hold USDT with no configuration change.
    const c = await newCustomer(t, ['USDT']);
    expect(c.accounts.USDT?.id).toMatch(/^InternalAccount:/);
  });

  for (const [currency, networks] of Object.entries(NETWORKS)) {
    for (const { network, wallet } of networks) {
      it(`a real-time ${currency} quote on ${network} answers one ${wallet} deposit address, valid and checksummed, kept by GET`, async () => {
        const q = await created(currency, network);
        expect(q.source).toEqual({ sourceType: 'REALTIME_FUNDING', currency, customerId, cryptoNetwork: network });
        expect(q.paymentInstructions).toHaveLength(1);
        const [i] = q.paymentInstructions;
        expect(i!.accountOrWalletInfo).toEqual({ accountType: wallet, address: expect.any(String), assetType: currency, reference: expect.stringMatching(/^UMA-/) });
        expect(validFor(wallet, i!.accountOrWalletInfo.address), i!.accountOrWalletInfo.address).toBe(true);
        expect(i!.instructionsNotes).toContain(`Send ${currency} on `);
        const got = await t.call('GET', `/quotes/${encodeURIComponent(q.id)}`);
        expect(got.statusCode, got.body).toBe(200);
        expect(got.json()).toMatchObject({ source: q.source, paymentInstructions: q.paymentInstructions });
      });
    }
  }

  it('EVM deposit addresses are mixed case (a real EIP-55 checksum, not lower-case hex)', async () => {
    for (const [currency, network] of [['USDC', 'ETHEREUM'], ['USDC', 'BASE'], ['USDC', 'POLYGON'], ['USDT', 'ETHEREUM'], ['USDT', 'PLASMA']] as const) {
      const info = (await created(currency, network)).paymentInstructions[0]!.accountOrWalletInfo;
      expect(EVM_WALLETS.has(info.accountType), `${currency} ${network}: ${info.accountType}`).toBe(true);
      expect(info.address, network).toMatch(/^0x(?=.*[a-f])(?=.*[A-F])[0-9a-fA-F]{40}$/);
      expect(isEip55(info.address), info.address).toBe(true);
    }
  });

  it('addresses are per quote and per network: two quotes, or two networks of one asset, never share one', async () => {
    const seen = new Set<string>();
    for (const [currency, networks] of Object.entries(NETWORKS)) {
      for (const { network, wallet } of networks) {
        for (let k = 0; k < 2; k++) {
          const [only, ...rest] = (await created(currency, network)).paymentInstructions;
          expect(rest, `${currency} ${network}`).toEqual([]);
          expect(only!.accountOrWalletInfo.accountType).toBe(wallet);
          seen.add(only!.accountOrWalletInfo.address);
        }
      }
    }
    expect(seen.size).toBe(2 * (NETWORKS.USDC!.length + NETWORKS.USDT!.length));
  });

  for (const [currency, networks] of Object.entries(NETWORKS)) {
    for (const { network, wallet, alias } of networks) {
      it(`the testnet name ${alias} is ${network} for ${currency}: accepted, echoed as sent, the same wallet shape`, async () => {
        const q = await created(currency, alias);
        expect(q.source.cryptoNetwork).toBe(alias);
        expect(q.paymentInstructions).toHaveLength(1);
        const info = q.paymentInstructions[0]!.accountOrWalletInfo;
        expect(info.accountType).toBe(wallet);
        expect(validFor(wallet, info.address)).toBe(true);
        expect(q.paymentInstructions[0]!.instructionsNotes).toContain(alias);
        const got = (await t.call('GET', `/quotes/${encodeURIComponent(q.id)}`)).json() as Quote;
        expect(got.source.cryptoNetwork).toBe(alias);
        expect(got.paymentInstructions).toEqual(q.paymentInstructions);
      });
    }
  }

  it('a testnet name in lower case is taken like the bare name is (upper-cased, echoed)', async () => {
    const q = await created('USDT', 'tron_testnet');
    expect(q.source.cryptoNetwork).toBe('TRON_TESTNET');
    expect(q.paymentInstructions[0]!.accountOrWalletInfo.accountType).toBe('TRON_WALLET');
  });

  it('a quote funded on a testnet name settles on the bare network: the funding leg names it', async () => {
    const q = await created('USDC', 'BASE_TESTNET');
    const sent = await t.call('POST', '/sandbox/send', { quoteId: q.id, currencyCode: 'USDC' });
    expect(sent.statusCode, sent.body).toBe(200);
    expect((sent.json() as { source: { onChainTransaction?: unknown } }).source.onChainTransaction).toEqual({ network: 'BASE', transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    // The quote still shows the name the client sent.
    expect(((await t.call('GET', `/quotes/${encodeURIComponent(q.id)}`)).json() as Quote).source.cryptoNetwork).toBe('BASE_TESTNET');
  });

  it('a network that does not carry the asset is 400 INVALID_INPUT on source.cryptoNetwork, naming the networks that do', async () => {
    const cases: Array<[string, string]> = [
      ['USDC', 'TRON'],
      ['USDC', 'PLASMA_TESTNET'],
      ['USDT', 'BASE'],
      ['USDT', 'POLYGON_TESTNET'],
      ['USDC', 'BITCOIN'],
      ['USDT', 'DOGECOIN'],
      ['USDC', 'SOLANA_TESTNET'],
    ];
    for (const [currency, network] of cases) {
      const e = envelope(await quote(currency, network), 400, 'INVALID_INPUT');
      const allowed = NETWORKS[currency]!.map((n) => n.network);
      expect(fieldErrors(e), `${currency} on ${network}`).toEqual([{ field: 'source.cryptoNetwork', constraint: { enum: allowed }, message: expect.stringContaining(`does not carry ${currency}`) }]);
      expect(fieldErrors(e)[0]!.message).toContain(allowed.join(', '));
    }
    // Missing: required for a stablecoin, with the same list.
    const missing = envelope(await quote('USDT'), 400, 'INVALID_INPUT');
    expect(fieldErrors(missing)).toEqual([{ field: 'source.cryptoNetwork', constraint: { enum: ['SOLANA', 'ETHEREUM', 'TRON', 'PLASMA'] }, message: expect.stringContaining('is required') }]);
  });

  it('internal accounts: a USDC or USDT account lists a deposit wallet on every network that carries it, each valid, stable across reads', async () => {
    const c = await newCustomer(t, ['USDC', 'USDT']);
    for (const [currency, networks] of Object.entries(NETWORKS)) {
      const list = instructionsOf(c.accounts[currency]);
      expect(list.map((i) => i.accountOrWalletInfo.accountType), currency).toEqual(networks.map((n) => n.wallet));
      for (const i of list) {
        expect(i.accountOrWalletInfo.assetType).toBe(currency);
        expect(validFor(i.accountOrWalletInfo.accountType, i.accountOrWalletInfo.address), `${currency} ${i.accountOrWalletInfo.accountType} ${i.accountOrWalletInfo.address}`).toBe(true);
      }
      expect(new Set(list.map((i) => i.accountOrWalletInfo.address)).size).toBe(list.length);
    }
    const again = await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(c.id)}`);
    const byCurrency = Object.fromEntries((again.json() as { data: Array<{ balance: { currency: { code: string } }; fundingPaymentInstructions: unknown }> }).data.map((a) => [a.balance.currency.code, a.fundingPaymentInstructions]));
    expect(byCurrency.USDC).toEqual(instructionsOf(c.accounts.USDC));
    expect(byCurrency.USDT).toEqual(instructionsOf(c.accounts.USDT));
  });

  it('the withdrawal fee estimate takes a testnet name as its network', async () => {
    const c = await newCustomer(t, ['USDC']);
    const body = (cryptoNetwork: string) => ({
      internalAccountId: c.accounts.USDC!.id,
      currency: 'USDC',
      cryptoNetwork,
      amount: 10_000_000,
      destinationAddress: '4Nd1m6Qkq7RfKuE5vQ9qP9Tn6H94Ueqb4xXHzsAbd8Wg',
    });
    const bare = await t.call('POST', '/crypto/estimate-withdrawal-fee', body('SOLANA'));
    const alias = await t.call('POST', '/crypto/estimate-withdrawal-fee', body('SOLANA_DEVNET'));
    expect(alias.statusCode, alias.body).toBe(200);
    expect(alias.json()).toEqual(bare.json());
    const wrong = envelope(await t.call('POST', '/crypto/estimate-withdrawal-fee', body('TRON_TESTNET')), 400, 'INVALID_INPUT');
    expect(fieldErrors(wrong)).toEqual([
      { field: 'cryptoNetwork', constraint: { enum: ['SOLANA', 'ETHEREUM', 'BASE', 'POLYGON'] }, message: expect.stringContaining('does not carry USDC') },
      expect.objectContaining({ field: 'destinationAddress' }),
    ]);
  });

  it('the OpenAPI document lists the testnet names among the networks a withdrawal estimate takes, and the new wallet shapes', async () => {
    const doc = (await t.call('GET', '/openapi.json', undefined, { authorization: '' })).json() as { components: { schemas: Record<string, { enum?: string[] }> } };
    const text = JSON.stringify(doc);
    for (const alias of ['SOLANA_DEVNET', 'ETHEREUM_TESTNET', 'BASE_TESTNET', 'POLYGON_TESTNET', 'TRON_TESTNET', 'PLASMA_TESTNET']) expect(text).toContain(`"${alias}"`);
    for (const shape of ['PaymentBaseWalletInfo', 'PaymentPolygonWalletInfo', 'PaymentPlasmaWalletInfo']) expect(text).toContain(shape);
  });
});
