import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { base58, base64, bech32m, createBase58check, hex } from '@scure/base';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requiresOwnershipVerification } from '../../src/api/external-accounts/service.js';
import { listEvents } from '../../src/kernel/events.js';
import { OWNERSHIP_VERIFICATION_THRESHOLD_USD_CENTS } from '../../src/sandbox/rules/ownership-verification.js';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// Ownership verification of self-custody wallets (Travel Rule), black box: which accounts
// start PENDING_OWNERSHIP_VERIFICATION, challenges, real signatures made here with
// @noble/curves (EIP-191 secp256k1, Ed25519, Tron, Bitcoin message signing for Spark), the
// legacy fixed signature, the hosted liveness page, and the EXTERNAL_ACCOUNT.STATUS_UPDATED
// event of every status change.

type Json = Record<string, unknown>;
interface Account {
  id: string;
  status: string;
  ownershipType?: string;
  accountInfo: Json & { accountType: string; address?: string };
}
interface SignatureChallenge {
  method: 'WALLET_SIGNATURE';
  messageToSign: string;
  expiresAt: string;
  nonce: string;
  algorithm: string;
  signatureFormat: string;
}
interface LivenessChallenge {
  method: 'LIVENESS';
  verificationLink: string;
  expiresAt: string;
}

const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };
const utf8 = (s: string) => new TextEncoder().encode(s);
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

/**
 * A random wallet whose address does not end in three digits: such an ending is a sandbox
 * suffix (1xx name verification, 105 an account that does not exist, 002–007 outcomes), which
 * would make a random address fail now and then.
 */
function plainAddress<W extends { address: string }>(make: () => W): W {
  for (;;) {
    const w = make();
    if (!/\d{3}$/.test(w.address)) return w;
  }
}

/** An EVM wallet: its address and personal_sign (EIP-191, hex r‖s‖v with v 27/28). */
function evmWallet() {
  return plainAddress(evmWalletAny);
}
function evmWalletAny() {
  const { secretKey, publicKey } = secp256k1.keygen();
  const uncompressed = secp256k1.Point.fromBytes(publicKey).toBytes(false);
  const address = `0x${hex.encode(keccak_256(uncompressed.slice(1)).slice(-20))}`;
  const sign = (message: string): string => {
    const m = utf8(message);
    const digest = keccak_256(concat(utf8(`\x19Ethereum Signed Message:\n${m.length}`), m));
    const rec = secp256k1.sign(digest, secretKey, { prehash: false, format: 'recovered' });
    return `0x${hex.encode(rec.slice(1))}${(rec[0]! + 27).toString(16)}`;
  };
  return { address, sign };
}

/** A Solana wallet: the address is the Ed25519 public key; signatures base58. */
function solanaWallet() {
  return plainAddress(solanaWalletAny);
}
function solanaWalletAny() {
  const { secretKey, publicKey } = ed25519.keygen();
  return { address: base58.encode(publicKey), sign: (message: string) => base58.encode(ed25519.sign(utf8(message), secretKey)) };
}

/** A Tron wallet: base58check(0x41 + keccak address); signMessageV2. */
function tronWallet() {
  return plainAddress(tronWalletAny);
}
function tronWalletAny() {
  const { secretKey, publicKey } = secp256k1.keygen();
  const uncompressed = secp256k1.Point.fromBytes(publicKey).toBytes(false);
  const address = createBase58check(sha256).encode(concat(new Uint8Array([0x41]), keccak_256(uncompressed.slice(1)).slice(-20)));
  const sign = (message: string): string => {
    const m = utf8(message);
    const rec = secp256k1.sign(keccak_256(concat(utf8(`\x19TRON Signed Message:\n${m.length}`), m)), secretKey, { prehash: false, format: 'recovered' });
    return `${hex.encode(rec.slice(1))}${(rec[0]! + 27).toString(16)}`;
  };
  return { address, sign };
}

/** A Spark wallet: bech32m of the identity key; Bitcoin signed message (BIP-137, compressed header 31–34), base64. */
function sparkWallet() {
  return plainAddress(sparkWalletAny);
}
function sparkWalletAny() {
  const { secretKey, publicKey } = secp256k1.keygen();
  const address = bech32m.encode('spark', bech32m.toWords(concat(new Uint8Array([0x0a, 0x21]), publicKey)), 1000);
  const sign = (message: string): string => {
    const prefix = utf8('Bitcoin Signed Message:\n');
    const m = utf8(message);
    const digest = sha256(sha256(concat(new Uint8Array([prefix.length]), prefix, m.length < 0xfd ? new Uint8Array([m.length]) : new Uint8Array([0xfd, m.length & 0xff, m.length >> 8]), m)));
    const rec = secp256k1.sign(digest, secretKey, { prehash: false, format: 'recovered' });
    return base64.encode(concat(new Uint8Array([31 + rec[0]!]), rec.slice(1)));
  };
  return { address, sign };
}

describe('requiresOwnershipVerification (the quotes check)', () => {
  const T = OWNERSHIP_VERIFICATION_THRESHOLD_USD_CENTS;
  it('a pending wallet is usable below the threshold only', () => {
    expect(T).toBe(100_000);
    const pending = { status: 'PENDING_OWNERSHIP_VERIFICATION' };
    expect(requiresOwnershipVerification(pending, 0)).toBe(false);
    expect(requiresOwnershipVerification(pending, T - 1)).toBe(false);
    expect(requiresOwnershipVerification(pending, T)).toBe(true);
    expect(requiresOwnershipVerification(pending, BigInt(T) + 1n)).toBe(true);
  });
  it('an UNVERIFIED wallet at any amount; ACTIVE and other accounts never', () => {
    expect(requiresOwnershipVerification({ status: 'UNVERIFIED' }, 1)).toBe(true);
    expect(requiresOwnershipVerification({ status: 'ACTIVE' }, T * 10)).toBe(false);
    expect(requiresOwnershipVerification({ status: 'PENDING' }, T * 10)).toBe(false);
  });
});

describe(`ownership verification (${STORE})`, () => {
  let t: TestApp;
  let customerId: string;
  let platformId: string;

  beforeAll(async () => {
    t = await makeApp();
    const c = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Maria Garcia' });
    customerId = (c.json() as { id: string }).id;
    platformId = ((await t.call('GET', '/admin/platforms', undefined, ADMIN)).json() as { data: Array<{ id: string; isDefault: boolean }> }).data.find((p) => p.isDefault)!.id;
  });
  afterAll(async () => t.close());

  async function createWallet(accountType: string, address: string, extra: Json = {}, currency = 'USDC'): Promise<Account> {
    const res = await t.call('POST', '/customers/external-accounts', { customerId, currency, ownershipType: 'FIRST_PARTY', accountInfo: { accountType, address }, ...extra });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Account;
  }
  const challenge = (id: string, method: string, prefix = '/customers') => t.call('POST', `${prefix}/external-accounts/${id}/challenge`, { method });
  const verify = (id: string, signature: string, prefix = '/customers', extra: Json = {}) =>
    t.call('POST', `${prefix}/external-accounts/${id}/verify`, { signature, ...extra });
  const statusEvents = async (id: string) => (await listEvents(t.store.db, platformId, { resourceId: id, type: 'EXTERNAL_ACCOUNT.STATUS_UPDATED' })).map((e) => e.payload.data as Account);
  const hosted = (url: string, method: 'GET' | 'POST' = 'GET', payload?: string): Promise<LightMyRequestResponse> =>
    t.app.inject({ method, url: new URL(url).pathname, ...(payload !== undefined ? { payload, headers: { 'content-type': 'application/x-www-form-urlencoded' } } : {}) });

  it('FIRST_PARTY self-custody wallets start PENDING_OWNERSHIP_VERIFICATION; everything else ACTIVE', async () => {
    const evm = evmWallet();
    expect((await createWallet('ETHEREUM_WALLET', evm.address)).status).toBe('PENDING_OWNERSHIP_VERIFICATION');
    expect((await createWallet('SOLANA_WALLET', solanaWallet().address)).status).toBe('PENDING_OWNERSHIP_VERIFICATION');
    expect((await createWallet('TRON_WALLET', tronWallet().address, {}, 'USDT')).status).toBe('PENDING_OWNERSHIP_VERIFICATION');
    expect((await createWallet('SPARK_WALLET', sparkWallet().address, {}, 'BTC')).status).toBe('PENDING_OWNERSHIP_VERIFICATION');
    const third = await t.call('POST', '/customers/external-accounts', { customerId, currency: 'USDC', ownershipType: 'THIRD_PARTY', accountInfo: { accountType: 'BASE_WALLET', address: evmWallet().address } });
    expect((third.json() as Account).status).toBe('ACTIVE');
    const noType = await t.call('POST', '/customers/external-accounts', { customerId, currency: 'USDC', accountInfo: { accountType: 'BASE_WALLET', address: evmWallet().address } });
    expect((noType.json() as Account).status).toBe('ACTIVE');
    const custodial = await createWallet('POLYGON_WALLET', evmWallet().address, { accountInfo: { accountType: 'POLYGON_WALLET', address: evmWallet().address, vaspName: 'Kraken' } });
    expect(custodial.status).toBe('ACTIVE');
    const lightning = await t.call('POST', '/customers/external-accounts', { customerId, currency: 'BTC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'LIGHTNING', lightningAddress: 'maria@wallet.example' } });
    expect((lightning.json() as Account).status).toBe('ACTIVE');
    const bank = await t.call('POST', '/customers/external-accounts', {
      customerId,
      currency: 'USD',
      ownershipType: 'FIRST_PARTY',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '123456789', routingNumber: '021000021', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Maria Garcia' } },
    });
    const bankAccount = bank.json() as Account;
    expect(bankAccount.status).toBe('ACTIVE');
    // Ownership verification does not apply to them: 409.
    for (const a of [third.json() as Account, custodial, bankAccount]) {
      expect(envelope(await challenge(a.id, 'WALLET_SIGNATURE'), 409, 'CONFLICT').details).toMatchObject({ reason: 'NOT_APPLICABLE' });
    }
    expect(await statusEvents(custodial.id)).toEqual([]);
  });

  it('EVM: a secp256k1 personal_sign by the address makes the wallet ACTIVE, with the event', async () => {
    const w = evmWallet();
    const a = await createWallet('ETHEREUM_WALLET', w.address);
    const res = await challenge(a.id, 'WALLET_SIGNATURE');
    expect(res.statusCode, res.body).toBe(201);
    const ch = res.json() as SignatureChallenge;
    expect(ch).toMatchObject({ method: 'WALLET_SIGNATURE', algorithm: 'secp256k1', signatureFormat: 'EIP191_PERSONAL_SIGN' });
    expect(ch.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(ch.messageToSign).toContain(`Nonce: ${ch.nonce}`);
    expect(ch.messageToSign).toContain(`Address: ${w.address}`);
    expect(ch.messageToSign).toContain(a.id);
    expect(Date.parse(ch.expiresAt) - t.clock.nowMs()).toBe(15 * 60_000);
    expect(await statusEvents(a.id)).toEqual([]); // still pending: no change, no event

    const ok = await verify(a.id, w.sign(ch.messageToSign));
    expect(ok.statusCode, ok.body).toBe(200);
    const active = ok.json() as Account;
    expect(active.status).toBe('ACTIVE');
    expect((await t.call('GET', `/customers/external-accounts/${a.id}`)).json()).toEqual(active);
    const events = await statusEvents(a.id);
    expect(events).toEqual([active]);

    // Verified: no challenge outstanding, and no new one.
    expect(envelope(await verify(a.id, w.sign(ch.messageToSign)), 409, 'CONFLICT').details).toMatchObject({ reason: 'NO_OUTSTANDING_CHALLENGE' });
    expect(envelope(await challenge(a.id, 'WALLET_SIGNATURE'), 409, 'CONFLICT').details).toMatchObject({ reason: 'ALREADY_VERIFIED' });
  });

  it('a signature by another key makes it UNVERIFIED (400, event); a new challenge and the right key make it ACTIVE', async () => {
    const w = evmWallet();
    const a = await createWallet('BASE_WALLET', w.address);
    const ch = (await challenge(a.id, 'WALLET_SIGNATURE')).json() as SignatureChallenge;
    const bad = envelope(await verify(a.id, evmWallet().sign(ch.messageToSign)), 400, 'INVALID_INPUT');
    expect(bad.details).toMatchObject({ status: 'UNVERIFIED', errors: [{ field: 'signature' }] });
    expect(((await t.call('GET', `/customers/external-accounts/${a.id}`)).json() as Account).status).toBe('UNVERIFIED');
    expect((await statusEvents(a.id)).map((e) => e.status)).toEqual(['UNVERIFIED']);
    // The failed challenge is spent.
    envelope(await verify(a.id, w.sign(ch.messageToSign)), 409, 'CONFLICT');

    const again = (await challenge(a.id, 'WALLET_SIGNATURE')).json() as SignatureChallenge;
    expect(again.nonce).not.toBe(ch.nonce);
    expect(((await t.call('GET', `/customers/external-accounts/${a.id}`)).json() as Account).status).toBe('PENDING_OWNERSHIP_VERIFICATION');
    // A signature of the previous message does not verify the new challenge.
    envelope(await verify(a.id, w.sign(ch.messageToSign)), 400, 'INVALID_INPUT');
    const third = (await challenge(a.id, 'WALLET_SIGNATURE')).json() as SignatureChallenge;
    expect((await verify(a.id, w.sign(third.messageToSign))).statusCode).toBe(200);
    expect((await statusEvents(a.id)).map((e) => e.status)).toEqual(['UNVERIFIED', 'PENDING_OWNERSHIP_VERIFICATION', 'UNVERIFIED', 'PENDING_OWNERSHIP_VERIFICATION', 'ACTIVE']);
  });

  it('a malformed signature and an expired challenge fail the attempt too', async () => {
    const w = evmWallet();
    const a = await createWallet('PLASMA_WALLET', w.address, {}, 'USDT');
    await challenge(a.id, 'WALLET_SIGNATURE');
    envelope(await verify(a.id, '0x1234'), 400, 'INVALID_INPUT');
    const ch = (await challenge(a.id, 'WALLET_SIGNATURE')).json() as SignatureChallenge;
    t.clock.advance(15 * 60_000);
    const expired = envelope(await verify(a.id, w.sign(ch.messageToSign)), 400, 'INVALID_INPUT');
    expect(expired.message).toContain('expired');
    expect(((await t.call('GET', `/customers/external-accounts/${a.id}`)).json() as Account).status).toBe('UNVERIFIED');
    // The body is still validated before anything happens.
    expect((await verify(a.id, '')).statusCode).toBe(400);
    envelope(await t.call('POST', `/customers/external-accounts/${a.id}/challenge`, { method: 'SELFIE' }), 400, 'INVALID_INPUT');
  });

  it('Solana: an Ed25519 signature by the address (its public key)', async () => {
    const w = solanaWallet();
    const a = await createWallet('SOLANA_WALLET', w.address);
    const ch = (await challenge(a.id, 'WALLET_SIGNATURE')).json() as SignatureChallenge;
    expect(ch).toMatchObject({ algorithm: 'ed25519', signatureFormat: 'ED25519_BASE58' });
    expect(((await verify(a.id, w.sign(ch.messageToSign))).json() as Account).status).toBe('ACTIVE');

    const other = solanaWallet();
    const b = await createWallet('SOLANA_WALLET', other.address, {}, 'USDT');
    const ch2 = (await challenge(b.id, 'WALLET_SIGNATURE')).json() as SignatureChallenge;
    envelope(await verify(b.id, w.sign(ch2.messageToSign)), 400, 'INVALID_INPUT');
    expect((await statusEvents(b.id)).map((e) => e.status)).toEqual(['UNVERIFIED']);
  });

  it('Tron (signMessageV2) and Spark (Bitcoin message signing by the identity key)', async () => {
    const tron = tronWallet();
    const a = await createWallet('TRON_WALLET', tron.address, {}, 'USDT');
    const ch = (await challenge(a.id, 'WALLET_SIGNATURE')).json() as SignatureChallenge;
    expect(ch).toMatchObject({ algorithm: 'secp256k1', signatureFormat: 'TRON_SIGN_MESSAGE_V2' });
    expect(((await verify(a.id, tron.sign(ch.messageToSign))).json() as Account).status).toBe('ACTIVE');

    const spark = sparkWallet();
    const s = await createWallet('SPARK_WALLET', spark.address, {}, 'BTC');
    const sch = (await challenge(s.id, 'WALLET_SIGNATURE')).json() as SignatureChallenge;
    expect(sch).toMatchObject({ algorithm: 'secp256k1', signatureFormat: 'BITCOIN_SIGNED_MESSAGE' });
    const res = await verify(s.id, spark.sign(sch.messageToSign), '/customers', { signatureScheme: 'bip137' });
    expect(res.statusCode, res.body).toBe(200);
    expect((res.json() as Account).status).toBe('ACTIVE');
  });

  it('the legacy fixed sandbox signature is still accepted', async () => {
    const a = await createWallet('ETHEREUM_WALLET', evmWallet().address, {}, 'USDT');
    await challenge(a.id, 'WALLET_SIGNATURE');
    const res = await verify(a.id, 'SANDBOX_VALID_SIGNATURE');
    expect(res.statusCode, res.body).toBe(200);
    expect((res.json() as Account).status).toBe('ACTIVE');
    expect((await statusEvents(a.id)).map((e) => e.status)).toEqual(['ACTIVE']);
    // Only as a signature of an outstanding challenge.
    const b = await createWallet('ETHEREUM_WALLET', evmWallet().address, {}, 'USDT');
    envelope(await verify(b.id, 'SANDBOX_VALID_SIGNATURE'), 409, 'CONFLICT');
  });

  it('hosted liveness check: pass makes the wallet ACTIVE', async () => {
    const a = await createWallet('ETHEREUM_WALLET', evmWallet().address);
    const res = await challenge(a.id, 'LIVENESS');
    expect(res.statusCode, res.body).toBe(201);
    const ch = res.json() as LivenessChallenge;
    expect(ch.method).toBe('LIVENESS');
    expect(ch.verificationLink).toMatch(/^http:\/\/[^/]+\/hosted\/ownership\/[A-Za-z0-9_-]+$/);
    expect(Date.parse(ch.expiresAt) - t.clock.nowMs()).toBe(30 * 60_000);
    // Liveness completes on the page, never on …/verify.
    envelope(await verify(a.id, 'SANDBOX_VALID_SIGNATURE'), 409, 'CONFLICT');

    const page = await hosted(ch.verificationLink);
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).toContain('value="pass"');
    expect(page.body).toContain('value="fail"');
    expect(page.body).toContain(a.accountInfo.address!);

    const done = await hosted(ch.verificationLink, 'POST', 'outcome=pass');
    expect(done.statusCode, done.body).toBe(200);
    expect(done.body).toContain('ACTIVE');
    const account = (await t.call('GET', `/customers/external-accounts/${a.id}`)).json() as Account;
    expect(account.status).toBe('ACTIVE');
    expect(await statusEvents(a.id)).toEqual([account]);
    // The link works once.
    expect((await hosted(ch.verificationLink)).statusCode).toBe(404);
    expect((await hosted(ch.verificationLink, 'POST', 'outcome=fail')).statusCode).toBe(404);
  });

  it('hosted liveness check: fail makes it UNVERIFIED; expired and replaced links are closed', async () => {
    const a = await createWallet('ETHEREUM_WALLET', evmWallet().address);
    const first = (await challenge(a.id, 'LIVENESS')).json() as LivenessChallenge;
    const second = (await challenge(a.id, 'LIVENESS')).json() as LivenessChallenge;
    expect((await hosted(first.verificationLink)).statusCode).toBe(404); // replaced by the new challenge
    expect((await hosted(second.verificationLink, 'POST', 'outcome=maybe')).statusCode).toBe(400);
    const failed = await hosted(second.verificationLink, 'POST', 'outcome=fail');
    expect(failed.statusCode).toBe(200);
    expect(failed.body).toContain('UNVERIFIED');
    expect(((await t.call('GET', `/customers/external-accounts/${a.id}`)).json() as Account).status).toBe('UNVERIFIED');
    expect((await statusEvents(a.id)).map((e) => e.status)).toEqual(['UNVERIFIED']);

    const third = (await challenge(a.id, 'LIVENESS')).json() as LivenessChallenge;
    t.clock.advance(30 * 60_000);
    expect((await hosted(third.verificationLink)).statusCode).toBe(410);
    expect((await hosted(third.verificationLink, 'POST', 'outcome=pass')).statusCode).toBe(410);
    expect(((await t.call('GET', `/customers/external-accounts/${a.id}`)).json() as Account).status).toBe('PENDING_OWNERSHIP_VERIFICATION');
    expect((await hosted('http://localhost/hosted/ownership/no-such-token')).statusCode).toBe(404);
  });

  it('platform wallets verify on the /platform twin; the other prefix and other platforms answer 404', async () => {
    const w = evmWallet();
    const res = await t.call('POST', '/platform/external-accounts', { currency: 'USDC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'ETHEREUM_WALLET', address: w.address } });
    const p = res.json() as Account;
    expect(p.status).toBe('PENDING_OWNERSHIP_VERIFICATION');
    envelope(await challenge(p.id, 'WALLET_SIGNATURE', '/customers'), 404, 'REFERENCE_NOT_FOUND');
    const ch = (await challenge(p.id, 'WALLET_SIGNATURE', '/platform')).json() as SignatureChallenge;
    envelope(await verify(p.id, w.sign(ch.messageToSign), '/customers'), 404, 'REFERENCE_NOT_FOUND');
    expect(((await verify(p.id, w.sign(ch.messageToSign), '/platform')).json() as Account).status).toBe('ACTIVE');

    const created = await t.call('POST', '/admin/platforms', { name: 'Other' }, ADMIN);
    const { clientId, clientSecret } = (created.json() as { credentials: { clientId: string; clientSecret: string } }).credentials;
    const other = { authorization: basic(clientId, clientSecret) };
    const a = await createWallet('ETHEREUM_WALLET', evmWallet().address);
    envelope(await t.call('POST', `/customers/external-accounts/${a.id}/challenge`, { method: 'WALLET_SIGNATURE' }, other), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('POST', `/customers/external-accounts/${a.id}/verify`, { signature: 'SANDBOX_VALID_SIGNATURE' }, other), 404, 'REFERENCE_NOT_FOUND');
  });
});
