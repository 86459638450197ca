import { findCurrency, getCurrency } from '../../kernel/currencies.js';
import { CRYPTO_NETWORKS, type CryptoNetwork, NETWORK_RULES, networksCarrying } from './crypto-networks.js';
import { divRound, divR, parseRational, type Rational, USD_MID_RATES } from './fx.js';

// The sandbox's crypto withdrawal fees (POST /crypto/estimate-withdrawal-fee). Each network
// has one fixed network fee, in the smallest unit of the asset that pays for it (lamports
// of SOL, wei of ETH or POL, sun of TRX, satoshis of BTC), and carries a fixed set of
// withdrawal currencies. The fee is converted into the withdrawal currency at the sandbox
// mid rate (src/sandbox/rules/fx.ts; no spread: nothing is exchanged), in BigInt, rounded up, so
// an estimate never understates the fee. Fee assets the sandbox market does not quote (TRX,
// POL, XPL) carry their own fixed USD rate here. docs/sandbox.md ("Crypto withdrawal fee
// estimates") shows the table.

// Which currencies each network carries is the network table's (src/sandbox/rules/crypto-networks.ts).

export const WITHDRAWAL_NETWORKS = CRYPTO_NETWORKS;
export type WithdrawalNetwork = CryptoNetwork;
export { networksCarrying };

/** An asset that pays network fees. */
export interface FeeAsset {
  code: string;
  /** Decimals of its smallest unit (lamports: 9, wei: 18, sun: 6, satoshis: 8). */
  decimals: number;
  /**
   * Units of the asset per 1 USD, as fx.ts writes its mid rates ("4", "1/0.19"), for an
   * asset the sandbox market does not quote. Absent: the market's rate (fx.ts) applies.
   */
  unitsPerUsd?: string;
}

export const FEE_ASSETS: Readonly<Record<string, FeeAsset>> = {
  SOL: { code: 'SOL', decimals: 9 },
  ETH: { code: 'ETH', decimals: 18 },
  BTC: { code: 'BTC', decimals: 8 },
  // Not currencies of the service: fixed sandbox prices of US$0.25, US$0.19 and US$0.80.
  TRX: { code: 'TRX', decimals: 6, unitsPerUsd: '4' },
  POL: { code: 'POL', decimals: 18, unitsPerUsd: '1/0.19' },
  XPL: { code: 'XPL', decimals: 18, unitsPerUsd: '1.25' },
};

export interface NetworkFeeRule {
  network: WithdrawalNetwork;
  /** Withdrawal currencies the network carries. */
  currencies: readonly string[];
  /** Code of the FEE_ASSETS entry that pays the network fee. */
  feeAsset: string;
  /** The fixed sandbox network fee, in the fee asset's smallest unit. */
  networkFee: bigint;
  /** How the figure was chosen (documentation only). */
  basis: string;
}

export const NETWORK_FEES: Readonly<Record<WithdrawalNetwork, NetworkFeeRule>> = {
  SOLANA: { network: 'SOLANA', currencies: NETWORK_RULES.SOLANA.assets, feeAsset: 'SOL', networkFee: 5_000n, basis: 'one signature at 5,000 lamports' },
  ETHEREUM: {
    network: 'ETHEREUM',
    currencies: NETWORK_RULES.ETHEREUM.assets,
    feeAsset: 'ETH',
    networkFee: 130_000_000_000_000n,
    basis: '65,000 gas at 2 gwei (0.00013 ETH)',
  },
  BASE: { network: 'BASE', currencies: NETWORK_RULES.BASE.assets, feeAsset: 'ETH', networkFee: 1_000_000_000_000n, basis: 'L2 execution and L1 data (0.000001 ETH)' },
  POLYGON: { network: 'POLYGON', currencies: NETWORK_RULES.POLYGON.assets, feeAsset: 'POL', networkFee: 1_950_000_000_000_000n, basis: '65,000 gas at 30 gwei (0.00195 POL)' },
  TRON: { network: 'TRON', currencies: NETWORK_RULES.TRON.assets, feeAsset: 'TRX', networkFee: 13_500_000n, basis: 'a TRC-20 transfer burning its energy (13.5 TRX)' },
  PLASMA: { network: 'PLASMA', currencies: NETWORK_RULES.PLASMA.assets, feeAsset: 'XPL', networkFee: 0n, basis: 'USDT transfers are sponsored by the chain' },
  BITCOIN: { network: 'BITCOIN', currencies: NETWORK_RULES.BITCOIN.assets, feeAsset: 'BTC', networkFee: 1_410n, basis: '141 vbytes at 10 sat/vB' },
  SPARK: { network: 'SPARK', currencies: NETWORK_RULES.SPARK.assets, feeAsset: 'BTC', networkFee: 0n, basis: 'Spark transfers carry no fee' },
  LIGHTNING: { network: 'LIGHTNING', currencies: NETWORK_RULES.LIGHTNING.assets, feeAsset: 'BTC', networkFee: 10n, basis: 'a routing fee of 10 sats' },
};

/**
 * The platform's application fee on a withdrawal, in the withdrawal currency's smallest
 * unit. Always 0: the only platform fee the configuration knows (CROSS_CURRENCY_TRANSACTION)
 * is charged on currency exchanges, and a withdrawal exchanges nothing.
 */
export const APPLICATION_FEE = 0n;

/** Every currency some network carries, in table order. */
export const WITHDRAWAL_CURRENCIES: readonly string[] = [...new Set(WITHDRAWAL_NETWORKS.flatMap((n) => NETWORK_FEES[n].currencies))];

/** Units of a fee asset or currency per 1 USD. */
function unitsPerUsd(code: string): Rational {
  const own = FEE_ASSETS[code]?.unitsPerUsd;
  const text = own ?? USD_MID_RATES[code];
  if (text === undefined) throw new Error(`withdrawal fees: no USD rate for ${code}`);
  return parseRational(text);
}

/**
 * A network fee (smallest unit of its fee asset) in the smallest unit of `currency`, at the
 * sandbox mid rate, rounded up: fee / 10^dFee / perUsd(fee) × perUsd(currency) × 10^dCur.
 */
export function networkFeeIn(networkFee: bigint, feeAsset: string, currency: string): bigint {
  const asset = FEE_ASSETS[feeAsset];
  if (!asset) throw new Error(`withdrawal fees: unknown fee asset ${feeAsset}`);
  const rate = divR(unitsPerUsd(currency), unitsPerUsd(feeAsset));
  const num = networkFee * rate.num * 10n ** BigInt(getCurrency(currency).decimals);
  const den = rate.den * 10n ** BigInt(asset.decimals);
  return divRound(num, den, 'ceil');
}

// The table must agree with the currency table and the market: checked once, at load.
for (const asset of Object.values(FEE_ASSETS)) {
  const known = findCurrency(asset.code);
  if (known && known.decimals !== asset.decimals) throw new Error(`withdrawal fees: ${asset.code} has ${known.decimals} decimals, not ${asset.decimals}`);
  if (known && asset.unitsPerUsd !== undefined) throw new Error(`withdrawal fees: ${asset.code} is priced by the sandbox market (fx.ts)`);
  unitsPerUsd(asset.code);
}
for (const rule of Object.values(NETWORK_FEES)) {
  if (!FEE_ASSETS[rule.feeAsset]) throw new Error(`withdrawal fees: ${rule.network} pays in unknown asset ${rule.feeAsset}`);
  for (const c of rule.currencies) if (findCurrency(c)?.kind !== 'CRYPTO') throw new Error(`withdrawal fees: ${rule.network} carries ${c}, not a crypto currency`);
}
