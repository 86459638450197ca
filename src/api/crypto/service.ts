import { sha256 } from '@noble/hashes/sha2.js';
import { bech32, bech32m, createBase58check } from '@scure/base';
import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, type FieldError, invalidInput } from '../../kernel/errors.js';
import { formatMinor } from '../../kernel/money.js';
import {
  EVM_ADDRESS_PATTERN,
  evmAddressProblem,
  isBolt11Invoice,
  isBolt12Offer,
  isLightningAddress,
  isSolanaAddress,
  isSparkAddress,
  isTronAddress,
  SOLANA_ADDRESS_PATTERN,
} from '../../kernel/rails.js';
import {
  APPLICATION_FEE,
  NETWORK_FEES,
  networkFeeIn,
  networksCarrying,
  WITHDRAWAL_CURRENCIES,
  type WithdrawalNetwork,
} from '../../sandbox/rules/withdrawal-fees.js';
import { networkNamed } from '../../sandbox/rules/crypto-networks.js';
import { requireInternalAccount } from '../internal-accounts/service.js';
import { findAccount, type InternalAccountRow } from '../internal-accounts/store.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type { EstimateCryptoWithdrawalFeeRequest, EstimateCryptoWithdrawalFeeResponse } from './schemas.js';

// POST /crypto/estimate-withdrawal-fee: what a withdrawal from a crypto internal account to
// an address would cost, from the sandbox fee table (src/sandbox/rules/withdrawal-fees.ts).
// Nothing is stored. Order of checks: the body's schema (with every check below that can
// still be made, in one 400 INVALID_INPUT); the account (404 REFERENCE_NOT_FOUND, also for
// another platform's); then every field problem in one 400, whose code is INVALID_CURRENCY
// when only the currency is wrong, INVALID_AMOUNT when only the amount is, and
// INVALID_INPUT otherwise.

type Db = Kysely<DB> | Transaction<DB>;

type Kind = 'input' | 'currency' | 'amount';
interface Problem {
  kind: Kind;
  error: FieldError;
}

interface Checked {
  problems: Problem[];
  /** The estimate, when the network carries the currency. */
  fee?: { currency: string; networkFee: bigint; networkFeeAsset: string; applicationFee: bigint; totalFee: bigint };
}

type Obj = Record<string, unknown>;

/** A network name (bare or testnet alias). */
function isNetworkName(v: unknown): v is string {
  return typeof v === 'string' && networkNamed(v) !== undefined;
}

/**
 * Every check beyond the schema, on a body read defensively (it may have failed its
 * schema): a field in `skip` was already reported and is not looked at again. `account` is
 * the internal account the body names, when it exists.
 */
function checkBody(body: Obj, account: InternalAccountRow | undefined, skip: ReadonlySet<string>): Checked {
  const problems: Problem[] = [];
  const add = (kind: Kind, field: string, message: string, constraint?: FieldError['constraint']) => {
    const error: FieldError = { field, message };
    if (constraint) error.constraint = constraint;
    problems.push({ kind, error });
  };
  const take = <T>(field: string, ok: (v: unknown) => v is T): T | undefined => (skip.has(field) || !ok(body[field]) ? undefined : (body[field] as T));
  const currency = take('currency', (v): v is string => typeof v === 'string');
  // A testnet alias (SOLANA_DEVNET, …) is its network.
  const networkName = take('cryptoNetwork', isNetworkName);
  const network: WithdrawalNetwork | undefined = networkName === undefined ? undefined : networkNamed(networkName);
  const amount = take('amount', (v): v is number => Number.isSafeInteger(v));
  const address = take('destinationAddress', (v): v is string => typeof v === 'string' && v.length > 0);

  // The account: a crypto account, holding the currency.
  if (account && account.type !== 'INTERNAL_CRYPTO') {
    add('input', 'internalAccountId', `is an ${account.type} account (${account.currency}): only a crypto internal account (INTERNAL_CRYPTO) withdraws on a crypto network`);
  }
  // (The currency of a fiat account is not offered instead: the account itself is the problem.)
  let currencyOk = currency !== undefined;
  if (currency !== undefined && account?.type === 'INTERNAL_CRYPTO' && currency !== account.currency) {
    add('currency', 'currency', `must be ${account.currency}, the currency internal account ${account.id} holds`, { enum: [account.currency] });
    currencyOk = false;
  } else if (currency !== undefined && !WITHDRAWAL_CURRENCIES.includes(currency)) {
    add('currency', 'currency', `cannot be withdrawn on a crypto network: the sandbox withdraws ${WITHDRAWAL_CURRENCIES.join(', ')}`, { enum: [...WITHDRAWAL_CURRENCIES] });
    currencyOk = false;
  }

  // The network: one that carries the currency (not judged against a currency already refused).
  const withdrawn = currencyOk ? currency : undefined;
  let carries = false;
  if (network !== undefined && withdrawn !== undefined) {
    const allowed = networksCarrying(withdrawn);
    carries = allowed.includes(network);
    if (!carries) add('input', 'cryptoNetwork', `does not carry ${withdrawn}: ${withdrawn} is withdrawn on ${allowed.join(', ')}`, { enum: allowed });
  }

  // The address, in the network's form.
  if (network !== undefined && address !== undefined) {
    const problem = addressProblem(network, address);
    if (problem) add('input', 'destinationAddress', problem.message, problem.constraint);
  }

  // The amount: more than the fee.
  let fee: Checked['fee'];
  if (carries && network !== undefined && withdrawn !== undefined) {
    const rule = NETWORK_FEES[network];
    const converted = networkFeeIn(rule.networkFee, rule.feeAsset, withdrawn);
    fee = { currency: withdrawn, networkFee: rule.networkFee, networkFeeAsset: rule.feeAsset, applicationFee: APPLICATION_FEE, totalFee: converted + APPLICATION_FEE };
  }
  if (amount !== undefined) {
    if (fee && BigInt(amount) <= fee.totalFee) {
      const min = fee.totalFee + 1n;
      const words = fee.totalFee === 0n ? 'must be greater than 0' : `must be more than the total fee of ${fee.totalFee} (${formatMinor(Number(fee.totalFee), fee.currency)})`;
      add('amount', 'amount', `${words}: at least ${min}`);
    } else if (!fee && amount <= 0) {
      add('amount', 'amount', 'must be greater than 0');
    }
  }
  return fee ? { problems, fee } : { problems };
}

/** Throw the problems as one 400 (see the header); nothing when there are none. */
function throwProblems(problems: Problem[], fee: Checked['fee'], body: Obj): void {
  if (problems.length === 0) return;
  const errors = problems.map((p) => p.error);
  const only = (kind: Kind) => problems.every((p) => p.kind === kind);
  if (only('currency')) {
    throw apiError(400, 'INVALID_CURRENCY', `Invalid currency ${String(body.currency)}: ${errors[0]!.message}`, { errors });
  }
  if (only('amount')) {
    const details: Record<string, unknown> = { errors, amount: body.amount };
    let message = `Invalid amount: amount ${errors[0]!.message}`;
    if (fee) {
      details.totalFee = Number(fee.totalFee);
      details.minimumAmount = Number(fee.totalFee + 1n);
      details.currency = fee.currency;
      message =
        fee.totalFee === 0n
          ? `The amount ${String(body.amount)} is not positive: the minimum is 1`
          : `The amount ${String(body.amount)} does not exceed the total fee of ${fee.totalFee}: the minimum is ${fee.totalFee + 1n}`;
    }
    throw apiError(400, 'INVALID_AMOUNT', message, details);
  }
  throw invalidInput(errors);
}

export async function estimateWithdrawalFee(db: Db, platform: PlatformRow, body: EstimateCryptoWithdrawalFeeRequest): Promise<EstimateCryptoWithdrawalFeeResponse> {
  const account = await requireInternalAccount(db, platform.id, body.internalAccountId);
  const { problems, fee } = checkBody(body as unknown as Obj, account, new Set());
  throwProblems(problems, fee, body as unknown as Obj);
  if (!fee) throw new Error('estimateWithdrawalFee: checks passed without a fee');
  return {
    networkFee: Number(fee.networkFee),
    networkFeeAsset: fee.networkFeeAsset,
    applicationFee: Number(fee.applicationFee),
    totalFee: Number(fee.totalFee),
    netAmount: Number(BigInt(body.amount) - fee.totalFee),
  };
}

/**
 * A body its schema refused (the route checks it before validation): one 400 INVALID_INPUT
 * with the schema's problems and every other check that can be made. Always throws.
 */
export async function rejectEstimateBody(db: Db, platform: PlatformRow, body: unknown, schemaErrors: readonly FieldError[]): Promise<never> {
  const errors: FieldError[] = [...schemaErrors];
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const b = body as Obj;
    const skip = new Set(schemaErrors.map((e) => e.field.split('.')[0]!));
    const id = b.internalAccountId;
    const account = !skip.has('internalAccountId') && typeof id === 'string' ? await findAccount(db, platform.id, id) : undefined;
    errors.push(...checkBody(b, account, skip).problems.map((p) => p.error));
  }
  throw invalidInput(errors);
}

// ---- Addresses --------------------------------------------------------------------------

const EVM_NAMES: Partial<Record<WithdrawalNetwork, string>> = { ETHEREUM: 'an Ethereum', BASE: 'a Base', POLYGON: 'a Polygon', PLASMA: 'a Plasma' };

/** Why an address is not one of the network's, or undefined. */
function addressProblem(network: WithdrawalNetwork, address: string): Pick<FieldError, 'message' | 'constraint'> | undefined {
  switch (network) {
    case 'ETHEREUM':
    case 'BASE':
    case 'POLYGON':
    case 'PLASMA': {
      const problem = evmAddressProblem(address);
      if (problem === 'format') return { message: `is not ${EVM_NAMES[network]} address: 0x and 40 hexadecimal digits`, constraint: { pattern: EVM_ADDRESS_PATTERN } };
      if (problem === 'checksum') {
        return { message: 'is not a valid mixed-case address: its EIP-55 checksum does not match (send it in one case, or checksummed)', constraint: { format: 'eip55-address' } };
      }
      return undefined;
    }
    case 'SOLANA':
      if (!new RegExp(SOLANA_ADDRESS_PATTERN).test(address)) return { message: 'is not a Solana address: base58, 32 to 44 characters', constraint: { pattern: SOLANA_ADDRESS_PATTERN } };
      return isSolanaAddress(address) ? undefined : { message: 'is not a Solana address: it must be the base58 of 32 bytes', constraint: { format: 'solana-address' } };
    case 'TRON':
      return isTronAddress(address) ? undefined : { message: "is not a Tron address: base58check of a 21-byte address starting with 'T'", constraint: { format: 'tron-address' } };
    case 'SPARK':
      return isSparkAddress(address) ? undefined : { message: 'is not a Spark address (spark1…) carrying a valid identity public key', constraint: { format: 'spark-address' } };
    case 'LIGHTNING':
      return isBolt11Invoice(address) || isBolt12Offer(address) || isLightningAddress(address)
        ? undefined
        : { message: 'is not a Lightning destination: a BOLT 11 invoice (with a valid checksum), a BOLT 12 offer (lno1…) or a Lightning address (user@domain)', constraint: { format: 'lightning-destination' } };
    case 'BITCOIN':
      return isBitcoinAddress(address)
        ? undefined
        : { message: 'is not a Bitcoin address: a segwit address (bc1…, bech32 or bech32m) or a base58check P2PKH / P2SH address (1…, 3…), or their testnet forms', constraint: { format: 'bitcoin-address' } };
  }
}

const base58check = createBase58check(sha256);
/** Human-readable parts of segwit addresses: mainnet, testnet and signet, regtest. */
const SEGWIT_HRPS = ['bc', 'tb', 'bcrt'];
/** base58check version bytes: P2PKH and P2SH on mainnet, then on testnet. */
const BASE58_VERSIONS = new Set([0x00, 0x05, 0x6f, 0xc4]);

/**
 * A Bitcoin address: segwit (BIP 173 / BIP 350: version 0 in bech32 with a 20- or 32-byte
 * program, versions 1–16 in bech32m with 2 to 40 bytes; one case), or base58check P2PKH /
 * P2SH (21 bytes with a known version byte). Checksums are verified.
 */
export function isBitcoinAddress(address: string): boolean {
  const lower = address.toLowerCase();
  const sep = lower.lastIndexOf('1');
  if (sep > 0 && SEGWIT_HRPS.includes(lower.slice(0, sep))) {
    if (address !== lower && address !== address.toUpperCase()) return false;
    if (lower.length > 90) return false;
    return isSegwit(lower as `${string}1${string}`);
  }
  if (!/^[1-9A-HJ-NP-Za-km-z]{25,35}$/.test(address)) return false;
  try {
    const bytes = base58check.decode(address);
    return bytes.length === 21 && BASE58_VERSIONS.has(bytes[0]!);
  } catch {
    return false;
  }
}

function isSegwit(address: `${string}1${string}`): boolean {
  const v0 = bech32.decodeUnsafe(address, 90);
  const v1 = v0 ? undefined : bech32m.decodeUnsafe(address, 90);
  const decoded = v0 ?? v1;
  if (!decoded || decoded.words.length === 0) return false;
  const version = decoded.words[0]!;
  const program = bech32.fromWordsUnsafe(decoded.words.slice(1));
  if (!program || version > 16) return false;
  if (version === 0) return v0 !== undefined && (program.length === 20 || program.length === 32);
  return v1 !== undefined && program.length >= 2 && program.length <= 40;
}
