import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { base58, base64, hex, utf8 } from '@scure/base';
import { evmAddressOfPublicKey, sparkIdentityKey, tronAddressOfPublicKey } from './rails.js';

// Message signatures of self-custody wallets, verified with @noble/curves (no hand-rolled
// cryptography). Each scheme is the one the chain's wallets use for "sign this message":
//
// | Scheme        | Curve     | Message hash                                                          | Signature encoding                           | Signer check |
// |---------------|-----------|-----------------------------------------------------------------------|----------------------------------------------|--------------|
// | EIP191        | secp256k1 | keccak256("\x19Ethereum Signed Message:\n" + byteLength + message)    | hex r‖s‖v (65 bytes, 0x optional), v 27/28 or 0/1 | recovered key's address = the account address (case-insensitive) |
// | TIP191        | secp256k1 | keccak256("\x19TRON Signed Message:\n" + byteLength + message)        | hex r‖s‖v (65 bytes, 0x optional)            | recovered key's base58check address = the account address |
// | BITCOIN       | secp256k1 | sha256d(varint(24) "Bitcoin Signed Message:\n" varint(len) message)   | base64 header‖r‖s (65 bytes, BIP-137 or Electrum header) | recovered key = the Spark address's identity key |
// | ED25519       | ed25519   | none: the UTF-8 bytes of the message are signed                       | base58 (64 bytes)                            | the Solana address is the public key |

export type WalletSignatureScheme = 'EIP191' | 'TIP191' | 'BITCOIN' | 'ED25519';
export type BitcoinSignatureFormat = 'bip137' | 'electrum';

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

const bytesOf = (s: string): Uint8Array => utf8.decode(s);

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** EIP-191 version 0x45 (personal_sign) digest of a message. */
export function eip191Digest(message: string): Uint8Array {
  const m = bytesOf(message);
  return keccak_256(concat(bytesOf(`\x19Ethereum Signed Message:\n${m.length}`), m));
}

/** Tron's signMessageV2 (TIP-191) digest of a message. */
export function tip191Digest(message: string): Uint8Array {
  const m = bytesOf(message);
  return keccak_256(concat(bytesOf(`\x19TRON Signed Message:\n${m.length}`), m));
}

function varint(n: number): Uint8Array {
  if (n < 0xfd) return new Uint8Array([n]);
  if (n <= 0xffff) return new Uint8Array([0xfd, n & 0xff, n >> 8]);
  return new Uint8Array([0xfe, n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff]);
}

/** Bitcoin signed-message digest (BIP-137 / Electrum): double SHA-256 of the prefixed message. */
export function bitcoinMessageDigest(message: string): Uint8Array {
  const prefix = bytesOf('Bitcoin Signed Message:\n');
  const m = bytesOf(message);
  return sha256(sha256(concat(varint(prefix.length), prefix, varint(m.length), m)));
}

function hexBytes(s: string): Uint8Array | undefined {
  const h = s.startsWith('0x') || s.startsWith('0X') ? s.slice(2) : s;
  if (!/^[0-9a-fA-F]*$/.test(h) || h.length % 2 !== 0) return undefined;
  return hex.decode(h.toLowerCase());
}

/** The secp256k1 public key that made a 65-byte r‖s‖v signature over a digest, or undefined. */
function recoverRsv(sig: Uint8Array, digest: Uint8Array): Uint8Array | undefined {
  if (sig.length !== 65) return undefined;
  const v = sig[64]!;
  const recovery = v >= 27 ? v - 27 : v;
  if (recovery !== 0 && recovery !== 1) return undefined;
  try {
    return secp256k1.Signature.fromBytes(sig.slice(0, 64), 'compact').addRecoveryBit(recovery).recoverPublicKey(digest).toBytes(false);
  } catch {
    return undefined;
  }
}

/** The EVM address (lower case) that signed `message` with personal_sign, or undefined. */
export function recoverEip191Address(message: string, signature: string): string | undefined {
  const sig = hexBytes(signature);
  const key = sig && recoverRsv(sig, eip191Digest(message));
  return key ? evmAddressOfPublicKey(key) : undefined;
}

/** The Tron address that signed `message` with signMessageV2, or undefined. */
export function recoverTip191Address(message: string, signature: string): string | undefined {
  const sig = hexBytes(signature);
  const key = sig && recoverRsv(sig, tip191Digest(message));
  return key ? tronAddressOfPublicKey(key) : undefined;
}

/** The compressed secp256k1 key behind a Bitcoin signed-message signature (base64), or undefined. */
export function recoverBitcoinMessageKey(message: string, signature: string, format: BitcoinSignatureFormat = 'bip137'): Uint8Array | undefined {
  let sig: Uint8Array;
  try {
    sig = base64.decode(signature);
  } catch {
    return undefined;
  }
  if (sig.length !== 65) return undefined;
  const header = sig[0]!;
  // BIP-137: 27–30 uncompressed, 31–34 compressed P2PKH, 35–38 P2SH-P2WPKH, 39–42 P2WPKH.
  // Electrum: 27–34 whatever the address type.
  const max = format === 'electrum' ? 34 : 42;
  if (header < 27 || header > max) return undefined;
  try {
    return secp256k1.Signature.fromBytes(sig.slice(1), 'compact')
      .addRecoveryBit((header - 27) & 3)
      .recoverPublicKey(bitcoinMessageDigest(message))
      .toBytes(true);
  } catch {
    return undefined;
  }
}

/** Ed25519 over the UTF-8 bytes of `message`; the signature in base58, the key in base58 (a Solana address). */
export function verifyEd25519Base58(message: string, signature: string, publicKeyBase58: string): boolean {
  try {
    const sig = base58.decode(signature);
    const key = base58.decode(publicKeyBase58);
    if (sig.length !== 64 || key.length !== 32) return false;
    return ed25519.verify(sig, bytesOf(message), key);
  } catch {
    return false;
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Check that `signature` over `message` was made by the key behind `address`, under `scheme`. */
export function verifyWalletSignature(
  scheme: WalletSignatureScheme,
  address: string,
  message: string,
  signature: string,
  bitcoinFormat: BitcoinSignatureFormat = 'bip137',
): SignatureCheck {
  switch (scheme) {
    case 'EIP191': {
      const signer = recoverEip191Address(message, signature);
      if (!signer) return { ok: false, reason: 'The signature is not a 65-byte secp256k1 r‖s‖v signature (hex) that recovers a public key' };
      return signer === address.toLowerCase() ? { ok: true } : { ok: false, reason: `The signature was made by ${signer}, not by the account's address` };
    }
    case 'TIP191': {
      const signer = recoverTip191Address(message, signature);
      if (!signer) return { ok: false, reason: 'The signature is not a 65-byte secp256k1 r‖s‖v signature (hex) that recovers a public key' };
      return signer === address ? { ok: true } : { ok: false, reason: `The signature was made by ${signer}, not by the account's address` };
    }
    case 'BITCOIN': {
      const expected = sparkIdentityKey(address);
      const key = recoverBitcoinMessageKey(message, signature, bitcoinFormat);
      if (!expected) return { ok: false, reason: 'The account address carries no identity key' };
      if (!key) return { ok: false, reason: `The signature is not a 65-byte ${bitcoinFormat} message signature (base64) that recovers a public key` };
      return equalBytes(key, expected) ? { ok: true } : { ok: false, reason: "The signature was not made by the address's identity key" };
    }
    case 'ED25519':
      return verifyEd25519Base58(message, signature, address)
        ? { ok: true }
        : { ok: false, reason: "The signature is not a valid Ed25519 signature (base58) of the message by the account's address" };
  }
}
