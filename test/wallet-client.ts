import { Aes256Gcm, CipherSuite, DhkemP256HkdfSha256, HkdfSha256 } from '@hpke/core';
import { p256 } from '@noble/curves/nist.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { base64urlnopad, createBase58check } from '@scure/base';

// What a wallet app does on the customer's device, written against the libraries and the
// documented wire formats only (docs/embedded-wallets.md), not the server's code:
// key pairs, the HPKE-sealed OTP bundle, opening encryptedSessionSigningKey and an export
// bundle, the stamp, OIDC-shaped tokens, and a software WebAuthn authenticator (P-256,
// attestation "none", real assertions).

const suite = new CipherSuite({ kem: new DhkemP256HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() });
const INFO = new TextEncoder().encode('turnkey_hpke');
const b58 = createBase58check(sha256);
const utf8 = (s: string) => new TextEncoder().encode(s);
const b64url = (b: Uint8Array) => base64urlnopad.encode(b);

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export interface ClientKey {
  privateKey: Uint8Array;
  /** Compressed SEC1 hex (66). */
  compressed: string;
  /** Uncompressed SEC1 hex (130). */
  uncompressed: string;
}

export function clientKey(privateKey: Uint8Array = p256.utils.randomSecretKey()): ClientKey {
  return { privateKey, compressed: bytesToHex(p256.getPublicKey(privateKey, true)), uncompressed: bytesToHex(p256.getPublicKey(privateKey, false)) };
}

/** The stamp: base64url of JSON {publicKey (compressed hex), scheme, signature (DER hex over SHA-256 of the payload)}. */
export function stamp(privateKey: Uint8Array, payload: string, opts: { publicKey?: string; scheme?: string } = {}): string {
  const signature = bytesToHex(p256.sign(utf8(payload), privateKey, { format: 'der' }));
  const json = JSON.stringify({ publicKey: opts.publicKey ?? bytesToHex(p256.getPublicKey(privateKey, true)), scheme: opts.scheme ?? 'SIGNATURE_SCHEME_TK_API_P256', signature });
  return b64url(utf8(json));
}

async function seal(plaintext: Uint8Array, recipient: Uint8Array): Promise<{ enc: Uint8Array; ciphertext: Uint8Array }> {
  const sender = await suite.createSenderContext({ recipientPublicKey: await suite.kem.deserializePublicKey(recipient.slice().buffer), info: INFO });
  const enc = new Uint8Array(sender.enc);
  const ciphertext = new Uint8Array(await sender.seal(plaintext.slice().buffer, concat(enc, recipient).slice().buffer));
  return { enc, ciphertext };
}

async function open(ciphertext: Uint8Array, enc: Uint8Array, privateKey: Uint8Array): Promise<Uint8Array> {
  const recipient = p256.getPublicKey(privateKey, false);
  const ctx = await suite.createRecipientContext({ recipientKey: await suite.kem.deserializePrivateKey(privateKey.slice().buffer), enc: enc.slice().buffer, info: INFO });
  return new Uint8Array(await ctx.open(ciphertext.slice().buffer, concat(enc, recipient).slice().buffer));
}

/** The target key of an otpEncryptionTargetBundle, after checking its enclave signature. */
export function targetOf(bundle: string): { targetPublic: Uint8Array; signatureValid: boolean } {
  const b = JSON.parse(bundle) as { data: string; dataSignature: string; enclaveQuorumPublic: string };
  const data = hexToBytes(b.data);
  const { targetPublic } = JSON.parse(new TextDecoder().decode(data)) as { targetPublic: string };
  const signatureValid = p256.verify(hexToBytes(b.dataSignature), data, hexToBytes(b.enclaveQuorumPublic), { format: 'der' });
  return { targetPublic: hexToBytes(targetPublic), signatureValid };
}

/** encryptedOtpBundle: HPKE-seal {otp_code, public_key} to the bundle's target key. */
export async function sealOtp(bundle: string, otp: string, publicKeyHex: string): Promise<string> {
  const { targetPublic } = targetOf(bundle);
  const { enc, ciphertext } = await seal(utf8(JSON.stringify({ otp_code: otp, public_key: publicKeyHex })), targetPublic);
  return JSON.stringify({ encappedPublic: bytesToHex(enc), ciphertext: bytesToHex(ciphertext) });
}

/** Open encryptedSessionSigningKey (base58check: compressed enc ‖ ciphertext): the 32-byte session key. */
export async function openSessionKey(encrypted: string, clientPrivateKey: Uint8Array): Promise<Uint8Array> {
  const payload = b58.decode(encrypted);
  const enc = p256.Point.fromBytes(payload.slice(0, 33)).toBytes(false);
  return open(payload.slice(33), enc, clientPrivateKey);
}

/** Open encryptedWalletCredentials: the wallet secret. */
export async function openExport(bundle: string, clientPrivateKey: Uint8Array): Promise<{ secret: string; organizationId: string }> {
  const b = JSON.parse(bundle) as { data: string };
  const d = JSON.parse(new TextDecoder().decode(hexToBytes(b.data))) as { encappedPublic: string; ciphertext: string; organizationId: string };
  const plain = await open(hexToBytes(d.ciphertext), hexToBytes(d.encappedPublic), clientPrivateKey);
  return { secret: new TextDecoder().decode(plain), organizationId: d.organizationId };
}

export const sha256Hex = (s: string) => bytesToHex(sha256(utf8(s)));

/** A JWT-shaped OIDC token with a dummy signature. */
export function oidcToken(claims: Record<string, unknown>): string {
  const part = (v: unknown) => b64url(utf8(JSON.stringify(v)));
  return `${part({ alg: 'RS256', typ: 'JWT' })}.${part(claims)}.sandbox-signature`;
}

// ---- A software WebAuthn authenticator --------------------------------------------------------

type Cbor = number | string | Uint8Array | Cbor[] | Map<number | string, Cbor>;

function cborHead(major: number, n: number): Uint8Array {
  if (n < 24) return new Uint8Array([(major << 5) | n]);
  if (n < 256) return new Uint8Array([(major << 5) | 24, n]);
  if (n < 65536) return new Uint8Array([(major << 5) | 25, n >> 8, n & 255]);
  return new Uint8Array([(major << 5) | 26, (n >>> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255]);
}

function cbor(v: Cbor): Uint8Array {
  if (typeof v === 'number') return v >= 0 ? cborHead(0, v) : cborHead(1, -1 - v);
  if (typeof v === 'string') {
    const b = utf8(v);
    return concat(cborHead(3, b.length), b);
  }
  if (v instanceof Uint8Array) return concat(cborHead(2, v.length), v);
  if (Array.isArray(v)) return concat(cborHead(4, v.length), ...v.map(cbor));
  return concat(cborHead(5, v.size), ...[...v.entries()].flatMap(([k, x]) => [cbor(k), cbor(x)]));
}

export class SoftAuthenticator {
  readonly privateKey = p256.utils.randomSecretKey();
  readonly rawId = crypto.getRandomValues(new Uint8Array(16));
  counter = 0;
  /** Flags of the next operations (UP = 0x01, UV = 0x04). */
  flags = 0x01;

  constructor(
    readonly rpId: string,
    readonly origin: string,
  ) {}

  get credentialId(): string {
    return b64url(this.rawId);
  }

  private clientData(type: string, challenge: string, origin: string): Uint8Array {
    return utf8(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
  }

  /** navigator.credentials.create() with attestation "none"; `challenge` is the base64url challenge. */
  create(challenge: string, opts: { origin?: string; rpId?: string } = {}): { credentialId: string; clientDataJson: string; attestationObject: string; transports: string[] } {
    const pub = p256.getPublicKey(this.privateKey, false);
    const cose = cbor(
      new Map<number, Cbor>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, pub.slice(1, 33)],
        [-3, pub.slice(33, 65)],
      ]),
    );
    const authData = concat(
      sha256(utf8(opts.rpId ?? this.rpId)),
      new Uint8Array([this.flags | 0x40]),
      new Uint8Array([0, 0, 0, 0]),
      new Uint8Array(16),
      new Uint8Array([0, this.rawId.length]),
      this.rawId,
      cose,
    );
    const attestationObject = cbor(
      new Map<string, Cbor>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    );
    return { credentialId: this.credentialId, clientDataJson: b64url(this.clientData('webauthn.create', challenge, opts.origin ?? this.origin)), attestationObject: b64url(attestationObject), transports: ['internal'] };
  }

  /** navigator.credentials.get() for the service's hex challenge (its UTF-8 bytes are the WebAuthn challenge). */
  get(challengeHex: string, opts: { origin?: string; rpId?: string; counter?: number; privateKey?: Uint8Array } = {}): { credentialId: string; clientDataJson: string; authenticatorData: string; signature: string } {
    this.counter = opts.counter ?? this.counter + 1;
    const c = this.counter;
    const authData = concat(sha256(utf8(opts.rpId ?? this.rpId)), new Uint8Array([this.flags]), new Uint8Array([(c >>> 24) & 255, (c >> 16) & 255, (c >> 8) & 255, c & 255]));
    const clientData = this.clientData('webauthn.get', b64url(utf8(challengeHex)), opts.origin ?? this.origin);
    const signature = p256.sign(concat(authData, sha256(clientData)), opts.privateKey ?? this.privateKey, { format: 'der' });
    return { credentialId: this.credentialId, clientDataJson: b64url(clientData), authenticatorData: b64url(authData), signature: b64url(signature) };
  }
}
