import { Type, type Static } from 'typebox';
import { CRYPTO_NETWORK_NAMES } from '../../sandbox/rules/crypto-networks.js';

// POST /crypto/estimate-withdrawal-fee (estimateCryptoWithdrawalFee).

export const CryptoNetwork = Type.Enum([...CRYPTO_NETWORK_NAMES], {
  title: 'CryptoWithdrawalNetwork',
  description: 'The network the withdrawal is sent on; the sandbox also takes its test-network name (SOLANA_DEVNET, ETHEREUM_TESTNET, TRON_TESTNET, …) for the same network',
});

export const EstimateCryptoWithdrawalFeeRequest = Type.Object(
  {
    internalAccountId: Type.String({
      minLength: 1,
      description: 'The crypto internal account (INTERNAL_CRYPTO) the funds would leave',
      examples: ['InternalAccount:019a2b3c-4d5e-7f60-8a1b-2c3d4e5f6a7b'],
    }),
    currency: Type.String({ format: 'iso4217', description: 'The currency withdrawn; the account must hold it', examples: ['USDC'] }),
    cryptoNetwork: CryptoNetwork,
    // A safe integer: zero and negative ones are refused by the fee check (400 INVALID_AMOUNT,
    // with the minimum); beyond ±(2^53 − 1) the schema refuses them (400 INVALID_INPUT).
    amount: Type.Integer({
      minimum: Number.MIN_SAFE_INTEGER,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'Amount to withdraw, in the smallest unit of currency (10^-6 for USDC, satoshis for BTC). It must be more than totalFee (else 400 INVALID_AMOUNT)',
      examples: [10_000_000],
    }),
    destinationAddress: Type.String({
      minLength: 1,
      description:
        'Where the funds go, in the form the network uses: 0x address (EIP-55 when mixed case) on ETHEREUM, BASE, POLYGON and PLASMA; base58 on SOLANA; T… on TRON; ' +
        'bc1… / 1… / 3… (or testnet forms) on BITCOIN; spark1… on SPARK; a BOLT 11 invoice, BOLT 12 offer or Lightning address on LIGHTNING',
      examples: ['7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV'],
    }),
  },
  { title: 'EstimateCryptoWithdrawalFeeRequest' },
);
export type EstimateCryptoWithdrawalFeeRequest = Static<typeof EstimateCryptoWithdrawalFeeRequest>;

export const EstimateCryptoWithdrawalFeeResponse = Type.Object(
  {
    networkFee: Type.Integer({
      minimum: 0,
      description: 'The network fee in the smallest unit of networkFeeAsset (lamports for SOL, wei for ETH, satoshis for BTC); informational',
      examples: [5_000],
    }),
    networkFeeAsset: Type.String({ description: 'The asset that pays the network fee', examples: ['SOL'] }),
    applicationFee: Type.Integer({ minimum: 0, description: 'The platform’s fee on the withdrawal, in the smallest unit of currency; 0 when there is none', examples: [0] }),
    totalFee: Type.Integer({
      minimum: 0,
      description: 'The network fee converted to the withdrawal currency at current rates (rounded up), plus applicationFee; smallest unit of currency',
      examples: [800],
    }),
    netAmount: Type.Integer({ minimum: 1, description: 'What arrives: amount − totalFee, in the smallest unit of currency', examples: [9_999_200] }),
  },
  { title: 'EstimateCryptoWithdrawalFeeResponse' },
);
export type EstimateCryptoWithdrawalFeeResponse = Static<typeof EstimateCryptoWithdrawalFeeResponse>;
