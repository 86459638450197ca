import { createPrivateKey, createPublicKey, type KeyObject, sign as cryptoSign } from 'node:crypto';
import { p256 } from '@noble/curves/nist.js';
import { openSealed, type Sealer } from './sealed.js';

// Webhook signing. Each platform has its own P-256 key pair. The header X-Service-Signature
// is base64 of the DER-encoded ECDSA P-256 signature over SHA-256 of the exact body bytes, so
// `crypto.verify('sha256', body, publicKeyPem, Buffer.from(header, 'base64'))` checks it.

export const SIGNATURE_HEADER = 'X-Service-Signature';
/**
 * The vendor's name of the same header: every delivery carries it too, with the identical
 * value, so a platform's verification code written for the vendor works unchanged.
 */
export const SIGNATURE_HEADER_ALIAS = 'X-Grid-Signature';

export interface WebhookKeyPair {
  /** The private scalar, hex (64 characters). */
  privateKeyHex: string;
  /** The public key, PEM (SubjectPublicKeyInfo). */
  publicKeyPem: string;
}

function b64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64url');
}

/** PEM (SPKI) of an uncompressed P-256 point. */
export function publicKeyPemOf(point: Uint8Array): string {
  const jwk = { kty: 'EC', crv: 'P-256', x: b64url(point.subarray(1, 33)), y: b64url(point.subarray(33, 65)) };
  return createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' }).toString();
}

export function newWebhookKeyPair(): WebhookKeyPair {
  const sk = p256.utils.randomSecretKey();
  const point = p256.getPublicKey(sk, false);
  return { privateKeyHex: Buffer.from(sk).toString('hex'), publicKeyPem: publicKeyPemOf(point) };
}

function bytesOf(body: string | Uint8Array): Uint8Array {
  return typeof body === 'string' ? new Uint8Array(Buffer.from(body, 'utf8')) : new Uint8Array(body);
}

// SEC1 DER of a P-256 private key without its public point (OpenSSL derives it).
const SEC1_PREFIX = Buffer.from('30310201010420', 'hex');
const SEC1_SUFFIX = Buffer.from('a00a06082a8648ce3d030107', 'hex');
/** The order of P-256's group: an S above half of it is replaced by N − S (low-S, as before). */
const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

/** The private key as a node:crypto key object, to sign many bodies without importing it each time. */
export function webhookSigningKey(privateKeyHex: string): KeyObject {
  return createPrivateKey({ key: Buffer.concat([SEC1_PREFIX, Buffer.from(privateKeyHex, 'hex'), SEC1_SUFFIX]), format: 'der', type: 'sec1' });
}

/**
 * The X-Service-Signature value for these exact body bytes: ECDSA P-256 over SHA-256,
 * DER, base64, S normalised to the lower half (issue 33: node:crypto signs about 15 times
 * faster than the JavaScript implementation; the nonce is random rather than RFC 6979's).
 */
export function signWebhookBody(body: string | Uint8Array, key: string | KeyObject): string {
  const k = typeof key === 'string' ? webhookSigningKey(key) : key;
  const raw = cryptoSign('sha256', typeof body === 'string' ? Buffer.from(body, 'utf8') : body, { key: k, dsaEncoding: 'ieee-p1363' });
  let sig = p256.Signature.fromBytes(new Uint8Array(raw), 'compact');
  if (sig.s > P256_N / 2n) sig = new p256.Signature(sig.r, P256_N - sig.s);
  return Buffer.from(sig.toBytes('der')).toString('base64');
}

/**
 * Check an X-Service-Signature header against the exact body bytes received and the
 * platform's webhook public key (PEM). False for any malformed input; never throws.
 */
export function verifyWebhookSignature(body: string | Buffer, header: string, publicKeyPem: string): boolean {
  try {
    const jwk = createPublicKey(publicKeyPem).export({ format: 'jwk' });
    if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || !jwk.x || !jwk.y) return false;
    const point = new Uint8Array(65);
    point[0] = 4;
    point.set(Buffer.from(jwk.x, 'base64url'), 1);
    point.set(Buffer.from(jwk.y, 'base64url'), 33);
    const sig = new Uint8Array(Buffer.from(header.trim(), 'base64'));
    if (sig.length === 0) return false;
    return p256.verify(sig, bytesOf(body), point, { prehash: true, format: 'der', lowS: false });
  } catch {
    return false;
  }
}

// ---- At rest ------------------------------------------------------------------------------
// A platform's private key is kept sealed (kernel/sealed.ts) in platforms.webhook_private_key,
// bound to its row (the additional authenticated data names column and platform), and opened
// only to sign. Rows written before sealing held the hex scalar; the start-up step
// (api/webhooks/service.ts resealWebhookKeys) seals those.

const PLAINTEXT_KEY = /^[0-9a-f]{64}$/;

export function webhookKeyContext(platformId: string): string {
  return `platforms.webhook_private_key:${platformId}`;
}

/** Whether a stored value is a plaintext key (from before sealing). */
export function isPlaintextWebhookKey(stored: string): boolean {
  return PLAINTEXT_KEY.test(stored);
}

/** The column value of a private key: sealed for its platform. */
export function sealWebhookKey(sealer: Sealer, platformId: string, privateKeyHex: string): string {
  return sealer.seal(privateKeyHex, webhookKeyContext(platformId));
}

/**
 * The private key (hex) of a stored value, to sign with: opened when sealed; a plaintext key
 * not yet re-sealed is taken as it is. Undefined when it cannot be opened (sealed with a
 * server secret this process does not have, or altered).
 */
export function openWebhookKey(platformId: string, stored: string): string | undefined {
  if (isPlaintextWebhookKey(stored)) return stored;
  const opened = openSealed(stored, webhookKeyContext(platformId));
  return opened !== undefined && PLAINTEXT_KEY.test(opened) ? opened : undefined;
}
