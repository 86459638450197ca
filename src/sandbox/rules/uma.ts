import { ApiError, type ErrorCode } from '../../kernel/errors.js';
import { corridorOf } from './corridors.js';

// The sandbox UMA world: the counterparty VASP that answers for the sandbox domain, its
// test receivers and the reserved addresses that make the counterparty fail.
//
// - `$success.usd@sandbox.uma.money` … are the specification's sandbox receivers. Any
//   currency with a receiving corridor works the same way (`$success.jpy`, `$success.btc`);
//   the tag (SUCCESS, PENDING_LONG, FAIL_COMPLIANCE) tells the quotes how the payment ends.
// - `$fail.<step>@sandbox.uma.money` make one step of the UMA protocol fail, at the lookup
//   (LNURLP request, public keys, version negotiation, sender screening) or at the quote
//   (the pay request).
// - Any other local part at the sandbox domain has no receiver: 404 UMA_NOT_FOUND.
// - Any other domain is not the sandbox VASP's: the address is a customer of some platform
//   of this service (by its umaAddress) or nobody (404 UMA_NOT_FOUND); see
//   src/api/lookups/service.ts.
//
// The domain is a constant, the same for every platform (platforms' own customers live on
// their own `<slug>.platforms.sandbox.uma.money` domains, so the two never collide). The
// counterparty also answers for the other sandbox domain the reference uses in its examples
// (`sandbox.grid.uma.money`, the SandboxUmaReceiveRequest example): the same local parts
// behave the same at either domain.

export const SANDBOX_UMA_DOMAIN = 'sandbox.uma.money';

/** Every domain the sandbox counterparty answers for: ours first, then the reference's. */
export const SANDBOX_UMA_DOMAINS: readonly string[] = [SANDBOX_UMA_DOMAIN, 'sandbox.grid.uma.money'];

/** Is this (lower-cased) domain one of the sandbox counterparty's? */
export function isSandboxUmaDomain(domain: string): boolean {
  return SANDBOX_UMA_DOMAINS.includes(domain);
}

/** `$local@domain`: the pattern customers' umaAddress uses too (src/api/customers/schemas.ts). */
export const UMA_ADDRESS_PATTERN = '^\\$[A-Za-z0-9._+-]{1,64}@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+$';
const UMA_ADDRESS_RE = new RegExp(UMA_ADDRESS_PATTERN);
const MAX_ADDRESS_LENGTH = 255;

export interface UmaAddress {
  /** As given (trimmed): what the lookup echoes. */
  address: string;
  /** Lower-cased `$local@domain`: UMA addresses are case-insensitive. */
  normalized: string;
  /** The local part with its `$`, lower-cased. */
  local: string;
  /** The domain, lower-cased. */
  domain: string;
}

/** Parse `$local@domain`; null when malformed (the caller answers 400 INVALID_UMA_ADDRESS). */
export function parseUmaAddress(input: string): UmaAddress | null {
  const address = input.trim();
  if (address.length > MAX_ADDRESS_LENGTH || !UMA_ADDRESS_RE.test(address)) return null;
  const normalized = address.toLowerCase();
  const at = normalized.lastIndexOf('@');
  const domain = normalized.slice(at + 1);
  if (domain.split('.').some((label) => label.length > 63 || label.startsWith('-') || label.endsWith('-'))) return null;
  return { address, normalized, local: normalized.slice(0, at), domain };
}

/** How a sandbox payment to the receiver ends (the quotes read it). */
export type UmaBehaviour = 'SUCCESS' | 'PENDING_LONG' | 'FAIL_COMPLIANCE';

/** Where a counterparty failure shows: at the receiver lookup, or at quote creation. */
export type UmaStage = 'LOOKUP' | 'QUOTE';

export interface UmaFailure {
  status: 400 | 412 | 424;
  /** A code the specification lists for `status`. */
  code: ErrorCode<400> | ErrorCode<412> | ErrorCode<424>;
  message: string;
  stage: UmaStage;
}

/** What the sandbox counterparty says about an address. */
export type UmaCounterparty =
  | {
      kind: 'SANDBOX';
      address: UmaAddress;
      /** Currencies the receiver accepts, its default first. */
      currencies: string[];
      behaviour: UmaBehaviour;
      /** A protocol step that fails, and where. */
      failure?: UmaFailure;
    }
  /** At the sandbox domain with no receiver. */
  | { kind: 'NOT_FOUND'; address: UmaAddress }
  /** Another domain: resolve against the customers of every platform. */
  | { kind: 'EXTERNAL'; address: UmaAddress };

/** The reserved `$fail.*` local parts (without `$`), each a receiver of USD whose step fails. */
export const UMA_FAILURE_TRIGGERS: Readonly<Record<string, UmaFailure>> = {
  'fail.version': {
    status: 412,
    code: 'UNSUPPORTED_UMA_VERSION',
    message: 'The counterparty VASP does not support this service\'s UMA version',
    stage: 'LOOKUP',
  },
  'fail.noversion': {
    status: 424,
    code: 'NO_COMPATIBLE_UMA_VERSION',
    message: 'The counterparty VASP and this service share no UMA version',
    stage: 'LOOKUP',
  },
  'fail.lnurlp': {
    status: 424,
    code: 'LNURLP_REQUEST_FAILED',
    message: 'The LNURLP request to the counterparty VASP failed',
    stage: 'LOOKUP',
  },
  'fail.pubkey': {
    status: 424,
    code: 'COUNTERPARTY_PUBKEY_FETCH_ERROR',
    message: 'The counterparty VASP\'s public keys could not be fetched',
    stage: 'LOOKUP',
  },
  'fail.sender': {
    status: 400,
    code: 'SENDER_NOT_ACCEPTED',
    message: 'The counterparty VASP does not accept payments from this sender',
    stage: 'LOOKUP',
  },
  'fail.payreq': {
    status: 424,
    code: 'PAYREQ_REQUEST_FAILED',
    message: 'The pay request to the counterparty VASP failed',
    stage: 'QUOTE',
  },
};

const BEHAVIOUR_PREFIXES: ReadonlyArray<[string, UmaBehaviour]> = [
  ['success.', 'SUCCESS'],
  ['pending.long.', 'PENDING_LONG'],
  ['fail.compliance.', 'FAIL_COMPLIANCE'],
];

/**
 * The sandbox counterparty's answer for an address (parsed, or text to parse; malformed
 * text throws 400 INVALID_UMA_ADDRESS). The external-account lookup, the UMA lookup and the
 * quotes all ask here, so one address behaves the same everywhere.
 */
export function umaCounterparty(input: UmaAddress | string): UmaCounterparty {
  const address = typeof input === 'string' ? parseUmaAddress(input) : input;
  if (!address) throw invalidUmaAddress('receiverUmaAddress', String(input));
  if (!isSandboxUmaDomain(address.domain)) return { kind: 'EXTERNAL', address };
  const local = address.local.slice(1);
  const failure = UMA_FAILURE_TRIGGERS[local];
  if (failure) return { kind: 'SANDBOX', address, currencies: ['USD'], behaviour: 'SUCCESS', failure };
  for (const [prefix, behaviour] of BEHAVIOUR_PREFIXES) {
    if (!local.startsWith(prefix)) continue;
    const code = local.slice(prefix.length).toUpperCase();
    if (corridorOf(code)) return { kind: 'SANDBOX', address, currencies: [code], behaviour };
  }
  return { kind: 'NOT_FOUND', address };
}

/** The error a counterparty failure answers with. */
export function umaFailureError(f: UmaFailure, address: string): ApiError {
  return new ApiError(f.status, f.code, `${f.message} (${address})`, { receiverUmaAddress: address, sandboxTrigger: true });
}

/** Throw the counterparty's failure when it happens at `stage`. */
export function assertCounterpartyStep(cp: UmaCounterparty, stage: UmaStage): void {
  if (cp.kind === 'SANDBOX' && cp.failure && cp.failure.stage === stage) throw umaFailureError(cp.failure, cp.address.address);
}

/** 400 INVALID_UMA_ADDRESS for one malformed address field. */
export function invalidUmaAddress(field: string, value: string): ApiError {
  return new ApiError(400, 'INVALID_UMA_ADDRESS', `${field} "${value}" is not a UMA address ($name@domain)`, {
    errors: [{ field, constraint: { pattern: UMA_ADDRESS_PATTERN }, message: 'must be a UMA address: $name@domain' }],
  });
}
