import { createHash } from 'node:crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { base58, createBase58check } from '@scure/base';
import { toEip55 } from '../../kernel/rails.js';

// The crypto networks of the sandbox, in one table: which assets each carries (deposits,
// withdrawals and their fees all read it), the form of its addresses, the wallet shape of
// its payment instructions (the reference's Payment*WalletInfo variants), and the name the
// vendor's sandbox tooling sends for its test network. The sandbox runs on test networks,
// so a testnet name is an alias of the bare name: it is accepted wherever a cryptoNetwork
// is taken, treated as the bare network, and echoed back as sent. docs/sandbox.md ("Crypto
// networks") shows the table.

export const CRYPTO_NETWORKS = ['SOLANA', 'ETHEREUM', 'BASE', 'POLYGON', 'TRON', 'PLASMA', 'BITCOIN', 'SPARK', 'LIGHTNING'] as const;
export type CryptoNetwork = (typeof CRYPTO_NETWORKS)[number];

/** How a network writes an address. */
export type AddressFormat =
  /** base58 of a 32-byte public key. */
  | 'SOLANA_BASE58'
  /** 0x and 20 bytes in hexadecimal, EIP-55 mixed-case checksum. */
  | 'EVM_EIP55'
  /** base58check (double SHA-256) of 0x41 and 20 bytes: 'T' and 33 characters. */
  | 'TRON_BASE58CHECK'
  /** Native SegWit (bech32, BIP 173). */
  | 'BITCOIN_BECH32'
  /** spark1… (bech32m of an identity public key). */
  | 'SPARK_BECH32M'
  /** A BOLT 11 invoice, BOLT 12 offer or Lightning address. */
  | 'LIGHTNING';

export interface NetworkRule {
  network: CryptoNetwork;
  /** Its name in words, for instructions. */
  label: string;
  /** The name the vendor's sandbox tooling sends for the network's test network. */
  testnetAlias: string;
  /** The currencies the network carries, in this order. */
  assets: readonly string[];
  addressFormat: AddressFormat;
  /**
   * The accountType of a deposit instruction to a wallet on this network (null: the network
   * has no wallet deposit shape of its own; BTC deposits are on-chain BITCOIN_L1 addresses).
   */
  depositWallet: string | null;
  /** The asset that is the network's own coin (SOL, ETH, BTC), if the sandbox carries it. */
  nativeAsset?: string;
  /** The prefix of the label a deposit address is derived under (kept stable: addresses must not change). */
  derivation: string;
}

export const NETWORK_RULES: Readonly<Record<CryptoNetwork, NetworkRule>> = {
  SOLANA: { network: 'SOLANA', label: 'Solana', testnetAlias: 'SOLANA_DEVNET', assets: ['USDC', 'USDT', 'SOL'], addressFormat: 'SOLANA_BASE58', depositWallet: 'SOLANA_WALLET', nativeAsset: 'SOL', derivation: 'sol' },
  ETHEREUM: { network: 'ETHEREUM', label: 'Ethereum', testnetAlias: 'ETHEREUM_TESTNET', assets: ['USDC', 'USDT', 'ETH'], addressFormat: 'EVM_EIP55', depositWallet: 'ETHEREUM_WALLET', nativeAsset: 'ETH', derivation: 'eth' },
  BASE: { network: 'BASE', label: 'Base', testnetAlias: 'BASE_TESTNET', assets: ['USDC'], addressFormat: 'EVM_EIP55', depositWallet: 'BASE_WALLET', derivation: 'base' },
  POLYGON: { network: 'POLYGON', label: 'Polygon', testnetAlias: 'POLYGON_TESTNET', assets: ['USDC'], addressFormat: 'EVM_EIP55', depositWallet: 'POLYGON_WALLET', derivation: 'polygon' },
  TRON: { network: 'TRON', label: 'Tron', testnetAlias: 'TRON_TESTNET', assets: ['USDT'], addressFormat: 'TRON_BASE58CHECK', depositWallet: 'TRON_WALLET', derivation: 'trx' },
  PLASMA: { network: 'PLASMA', label: 'Plasma', testnetAlias: 'PLASMA_TESTNET', assets: ['USDT'], addressFormat: 'EVM_EIP55', depositWallet: 'PLASMA_WALLET', derivation: 'plasma' },
  BITCOIN: { network: 'BITCOIN', label: 'Bitcoin', testnetAlias: 'BITCOIN_TESTNET', assets: ['BTC'], addressFormat: 'BITCOIN_BECH32', depositWallet: null, derivation: 'btc' },
  SPARK: { network: 'SPARK', label: 'Spark', testnetAlias: 'SPARK_TESTNET', assets: ['BTC'], addressFormat: 'SPARK_BECH32M', depositWallet: null, derivation: 'spark' },
  LIGHTNING: { network: 'LIGHTNING', label: 'Lightning', testnetAlias: 'LIGHTNING_TESTNET', assets: ['BTC'], addressFormat: 'LIGHTNING', depositWallet: null, derivation: 'ln' },
};

/** Every testnet alias, in table order. */
export const TESTNET_ALIASES: readonly string[] = CRYPTO_NETWORKS.map((n) => NETWORK_RULES[n].testnetAlias);

/** Every name a request may give a network: the bare names, then their testnet aliases. */
export const CRYPTO_NETWORK_NAMES: readonly string[] = [...CRYPTO_NETWORKS, ...TESTNET_ALIASES];

const BY_NAME: ReadonlyMap<string, CryptoNetwork> = new Map([
  ...CRYPTO_NETWORKS.map((n) => [n, n] as const),
  ...CRYPTO_NETWORKS.map((n) => [NETWORK_RULES[n].testnetAlias, n] as const),
]);

/** The network a name (bare or testnet alias, exact case) stands for, or undefined. */
export function networkNamed(name: string): CryptoNetwork | undefined {
  return BY_NAME.get(name);
}

/** Networks that carry a currency, in table order (empty for a currency none carries). */
export function networksCarrying(currency: string): CryptoNetwork[] {
  return CRYPTO_NETWORKS.filter((n) => NETWORK_RULES[n].assets.includes(currency));
}

/** Networks a currency can be deposited on into a wallet address of its own, in table order. */
export function depositNetworks(currency: string): CryptoNetwork[] {
  return networksCarrying(currency).filter((n) => NETWORK_RULES[n].depositWallet !== null);
}

// ---- Deposit addresses ------------------------------------------------------------------

const tronBase58check = createBase58check(sha256);

function seed(ownerId: string, label: string): Uint8Array {
  return createHash('sha256').update(`sandbox-funding|${label}|${ownerId}`).digest();
}

/**
 * A deposit address of `ownerId` (an internal account or a quote) for `currency` on a
 * network with a wallet shape, in the network's own form and checksum. Derived with
 * SHA-256 from the owner id, the network and the currency: the same owner always shows the
 * same address, and each network and asset has its own.
 */
export function depositAddress(network: CryptoNetwork, currency: string, ownerId: string): string {
  const rule = NETWORK_RULES[network];
  // A network's own coin (SOL, ETH) is derived under the bare prefix, a token under prefix-token.
  const bytes = seed(ownerId, rule.nativeAsset === currency ? rule.derivation : `${rule.derivation}-${currency.toLowerCase()}`);
  switch (rule.addressFormat) {
    case 'SOLANA_BASE58':
      return base58.encode(bytes);
    case 'EVM_EIP55':
      return toEip55(`0x${Buffer.from(bytes.subarray(0, 20)).toString('hex')}`);
    case 'TRON_BASE58CHECK':
      return tronBase58check.encode(Uint8Array.from([0x41, ...bytes.subarray(0, 20)]));
    default:
      throw new Error(`crypto networks: ${network} has no wallet deposit address`);
  }
}

// The table must agree with itself: checked once, at load.
for (const n of CRYPTO_NETWORKS) {
  const rule = NETWORK_RULES[n];
  if (rule.network !== n) throw new Error(`crypto networks: ${n} is filed as ${rule.network}`);
  if (rule.depositWallet !== null && !['SOLANA_BASE58', 'EVM_EIP55', 'TRON_BASE58CHECK'].includes(rule.addressFormat)) throw new Error(`crypto networks: ${n} has a wallet but no address form`);
}
if (new Set(CRYPTO_NETWORK_NAMES).size !== CRYPTO_NETWORK_NAMES.length) throw new Error('crypto networks: a testnet alias repeats a name');
