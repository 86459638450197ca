import { p256 } from '@noble/curves/nist.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { base64urlnopad, createBase58check } from '@scure/base';

// The wire formats of embedded wallets. Where the hosted docs leave a constant open, it is
// the one of the key-management provider whose stamp scheme (SIGNATURE_SCHEME_TK_API_P256)
// the docs use, so that provider's public client libraries work unmodified
// (docs/embedded-wallets.md lists them all).

/** The stamp scheme: ECDSA P-256 with SHA-256 over the exact payload bytes. */
export const STAMP_SCHEME = 'SIGNATURE_SCHEME_TK_API_P256';
/** Legacy sandbox values, still accepted (hosted docs: sandbox magic values). */
export const LEGACY_WALLET_SIGNATURE = 'sandbox-valid-signature';
export const LEGACY_PASSKEY_SIGNATURE = 'sandbox-valid-passkey-signature';
export const LEGACY_OIDC_TOKEN = 'sandbox-valid-oidc-token';
/** HPKE: DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, this info, AAD = enc ‖ recipient (both uncompressed). */
export const HPKE_INFO = 'turnkey_hpke';
export const BUNDLE_VERSION = 'v1.0.0';

// @hpke/core is loaded on first use, not at start-up: the CLI and the server start without it.
let suiteOnce: Promise<import('@hpke/core').CipherSuite> | undefined;
function hpkeSuite(): Promise<import('@hpke/core').CipherSuite> {
  suiteOnce ??= import('@hpke/core').then(({ Aes256Gcm, CipherSuite, DhkemP256HkdfSha256, HkdfSha256 }) => new CipherSuite({ kem: new DhkemP256HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() }));
  return suiteOnce;
}
const info = new TextEncoder().encode(HPKE_INFO);
export const base58check = createBase58check(sha256);

export function sha256Hex(text: string | Uint8Array): string {
  return bytesToHex(sha256(typeof text === 'string' ? new TextEncoder().encode(text) : text));
}

const HEX = /^(?:[0-9a-fA-F]{2})+$/;

/** A P-256 public key given as SEC1 hex (compressed or uncompressed): the point, or undefined. */
export function pointOf(hex: string): InstanceType<typeof p256.Point> | undefined {
  if (!HEX.test(hex) || (hex.length !== 66 && hex.length !== 130)) return undefined;
  try {
    const point = p256.Point.fromHex(hex.toLowerCase());
    point.assertValidity();
    return point;
  } catch {
    return undefined;
  }
}

/** Compressed SEC1 hex of a P-256 public key (either form), or undefined when it is not one. */
export function compressedKey(hex: string): string | undefined {
  const p = pointOf(hex);
  return p ? bytesToHex(p.toBytes(true)) : undefined;
}

export function uncompressedKey(hex: string): Uint8Array | undefined {
  return pointOf(hex)?.toBytes(false);
}

export interface KeyPair {
  privateKey: Uint8Array;
  /** Compressed SEC1. */
  publicKey: Uint8Array;
}

export function newKeyPair(): KeyPair {
  const privateKey = p256.utils.randomSecretKey();
  return { privateKey, publicKey: p256.getPublicKey(privateKey, true) };
}

export function publicKeyOf(privateKey: Uint8Array, compressed = true): Uint8Array {
  return p256.getPublicKey(privateKey, compressed);
}

// ---- Stamps ---------------------------------------------------------------------------------

export interface Stamp {
  /** Compressed SEC1 hex. */
  publicKey: string;
  signature: Uint8Array;
}

/**
 * Parse a Service-Wallet-Signature stamp: base64url (padding optional) of the JSON
 * {publicKey: SEC1 hex, scheme: SIGNATURE_SCHEME_TK_API_P256, signature: DER hex}.
 * Undefined when it is not one (WALLET_SIGNATURE_MALFORMED).
 */
export function parseStamp(header: string): Stamp | undefined {
  let json: unknown;
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(base64urlnopad.decode(header.trim().replace(/=+$/, '')));
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (json === null || typeof json !== 'object') return undefined;
  const { publicKey, scheme, signature } = json as Record<string, unknown>;
  if (scheme !== STAMP_SCHEME || typeof publicKey !== 'string' || typeof signature !== 'string') return undefined;
  const key = compressedKey(publicKey);
  if (!key || !HEX.test(signature)) return undefined;
  const sig = hexToBytes(signature.toLowerCase());
  try {
    p256.Signature.fromBytes(sig, 'der');
  } catch {
    return undefined;
  }
  return { publicKey: key, signature: sig };
}

/** Does the stamp's signature verify over the exact payload bytes with the stamp's key? */
export function verifyStamp(stamp: Stamp, payload: string): boolean {
  try {
    return p256.verify(stamp.signature, new TextEncoder().encode(payload), hexToBytes(stamp.publicKey), { format: 'der', lowS: false });
  } catch {
    return false;
  }
}

/** A stamp over `payload` made with `privateKey` (what a wallet client sends). */
export function makeStamp(privateKey: Uint8Array, payload: string): string {
  const signature = p256.sign(new TextEncoder().encode(payload), privateKey, { format: 'der' });
  const json = JSON.stringify({ publicKey: bytesToHex(publicKeyOf(privateKey)), scheme: STAMP_SCHEME, signature: bytesToHex(signature) });
  return base64urlnopad.encode(new TextEncoder().encode(json));
}

// ---- HPKE -----------------------------------------------------------------------------------

/** HPKE-seal `plaintext` to a P-256 public key (SEC1, either form): the uncompressed encapsulated key and the ciphertext. */
export async function hpkeSeal(plaintext: Uint8Array, recipientPublicKey: Uint8Array): Promise<{ enc: Uint8Array; ciphertext: Uint8Array }> {
  const recipient = p256.Point.fromBytes(recipientPublicKey).toBytes(false);
  const suite = await hpkeSuite();
  const sender = await suite.createSenderContext({ recipientPublicKey: await suite.kem.deserializePublicKey(recipient.slice().buffer), info });
  const enc = new Uint8Array(sender.enc);
  const ciphertext = new Uint8Array(await sender.seal(plaintext.slice().buffer, concat(enc, recipient).buffer));
  return { enc, ciphertext };
}

/** Open an HPKE ciphertext with the recipient's private scalar; throws when it does not open. */
export async function hpkeOpen(ciphertext: Uint8Array, enc: Uint8Array, recipientPrivateKey: Uint8Array): Promise<Uint8Array> {
  const encUncompressed = p256.Point.fromBytes(enc).toBytes(false);
  const recipient = publicKeyOf(recipientPrivateKey, false);
  const suite = await hpkeSuite();
  const key = await suite.kem.deserializePrivateKey(recipientPrivateKey.slice().buffer);
  const ctx = await suite.createRecipientContext({ recipientKey: key, enc: encUncompressed.slice().buffer, info });
  return new Uint8Array(await ctx.open(ciphertext.slice().buffer, concat(encUncompressed, recipient).buffer));
}

/** encryptedSessionSigningKey: base58check(compressed encapsulated key ‖ ciphertext) of the 32-byte session scalar. */
export async function sessionBundle(sessionPrivateKey: Uint8Array, recipientPublicKey: Uint8Array): Promise<string> {
  const { enc, ciphertext } = await hpkeSeal(sessionPrivateKey, recipientPublicKey);
  return base58check.encode(concat(p256.Point.fromBytes(enc).toBytes(true), ciphertext));
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

// ---- The sandbox enclave key ----------------------------------------------------------------

/**
 * The sandbox's enclave signing key: fixed and public (the sandbox signs target bundles and
 * verification tokens with it, so clients can check them; it protects nothing).
 */
export const SANDBOX_ENCLAVE_PRIVATE_KEY = sha256(new TextEncoder().encode('payments-service sandbox enclave key v1'));
export const SANDBOX_ENCLAVE_PUBLIC_KEY = bytesToHex(publicKeyOf(SANDBOX_ENCLAVE_PRIVATE_KEY, false));

function enclaveSign(bytes: Uint8Array, format: 'der' | 'compact'): Uint8Array {
  return p256.sign(bytes, SANDBOX_ENCLAVE_PRIVATE_KEY, { format });
}

/**
 * otpEncryptionTargetBundle: {version, data: hex of JSON {targetPublic, organizationId, userId},
 * dataSignature: DER hex over the data bytes by the enclave key, enclaveQuorumPublic}.
 */
export function targetBundle(targetPublicKey: Uint8Array, organizationId: string, userId: string): string {
  const data = new TextEncoder().encode(JSON.stringify({ organizationId, targetPublic: bytesToHex(p256.Point.fromBytes(targetPublicKey).toBytes(false)), userId }));
  return JSON.stringify({
    version: BUNDLE_VERSION,
    data: bytesToHex(data),
    dataSignature: bytesToHex(enclaveSign(data, 'der')),
    enclaveQuorumPublic: SANDBOX_ENCLAVE_PUBLIC_KEY,
  });
}

/**
 * encryptedWalletCredentials: {version, data: hex of JSON {encappedPublic, ciphertext,
 * organizationId}, dataSignature: "", enclaveQuorumPublic: ""} (the reference: empty in sandbox).
 */
export async function exportBundle(secret: string, recipientPublicKey: Uint8Array, organizationId: string): Promise<string> {
  const { enc, ciphertext } = await hpkeSeal(new TextEncoder().encode(secret), recipientPublicKey);
  const data = new TextEncoder().encode(JSON.stringify({ encappedPublic: bytesToHex(enc), ciphertext: bytesToHex(ciphertext), organizationId }));
  return JSON.stringify({ version: BUNDLE_VERSION, data: bytesToHex(data), dataSignature: '', enclaveQuorumPublic: '' });
}

/** An ES256 JWT signed by the enclave key: the OTP verificationToken (the payload the TEK signs). */
export function verificationToken(claims: Record<string, unknown>): string {
  const enc = (v: unknown) => base64urlnopad.encode(new TextEncoder().encode(JSON.stringify(v)));
  const signingInput = `${enc({ alg: 'ES256', kid: 'sandbox-enclave', typ: 'JWT' })}.${enc(claims)}`;
  const sig = enclaveSign(new TextEncoder().encode(signingInput), 'compact');
  return `${signingInput}.${base64urlnopad.encode(sig)}`;
}

export { bytesToHex, hexToBytes };
