import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TestApp } from './helpers.js';
import { TERMS } from './money-helpers.js';
import { type ClientKey, clientKey, sealOtp, stamp } from './wallet-client.js';

// Wallet flows through HTTP, built on the client helper: a customer with its wallet, an OTP
// login, and the two legs of a signed action.

export interface Wallet {
  customerId: string;
  accountId: string;
  emailCredentialId: string;
}

export async function walletCustomer(t: TestApp, extra: Record<string, unknown> = {}, headers?: Record<string, string>): Promise<Wallet> {
  const body = { customerType: 'INDIVIDUAL', fullName: `Wally Wallet ${Math.random().toString(36).slice(2, 7)}x`, email: 'wally@example.com', currencies: ['USD'], endUserTermsConsent: TERMS, ...extra };
  const res = await t.call('POST', '/customers', body, headers);
  expect(res.statusCode, res.body).toBe(201);
  const customerId = (res.json() as { id: string }).id;
  await t.store.db.updateTable('customers').set({ status: 'APPROVED' }).where('id', '=', customerId).execute();
  const list = await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(customerId)}&type=EMBEDDED_WALLET`, undefined, headers);
  const data = (list.json() as { data: Array<{ id: string }> }).data;
  expect(data).toHaveLength(1);
  const accountId = data[0]!.id;
  const creds = await t.call('GET', `/auth/credentials?accountId=${encodeURIComponent(accountId)}`, undefined, headers);
  const emailCred = (creds.json() as { data: Array<{ id: string; type: string }> }).data.find((c) => c.type === 'EMAIL_OTP');
  return { customerId, accountId, emailCredentialId: emailCred?.id ?? '' };
}

export const enc = encodeURIComponent;

/** An OTP login: challenge, sealed code, 202, stamp with the TEK, 200. The TEK is the session key. */
export async function otpLogin(t: TestApp, credentialId: string, headers?: Record<string, string>): Promise<{ session: { id: string; expiresAt: string }; key: ClientKey }> {
  const ch = await t.call('POST', `/auth/credentials/${enc(credentialId)}/challenge`, undefined, headers);
  expect(ch.statusCode, ch.body).toBe(200);
  const tek = clientKey();
  const body = { type: (ch.json() as { type: string }).type, encryptedOtpBundle: await sealOtp((ch.json() as { otpEncryptionTargetBundle: string }).otpEncryptionTargetBundle, '000000', tek.uncompressed) };
  const first = await t.call('POST', `/auth/credentials/${enc(credentialId)}/verify`, body, headers);
  expect(first.statusCode, first.body).toBe(202);
  const c = first.json() as { payloadToSign: string; requestId: string };
  expect(first.headers['request-id']).toBe(c.requestId);
  const done = await t.call('POST', `/auth/credentials/${enc(credentialId)}/verify`, body, { ...headers, 'service-wallet-signature': stamp(tek.privateKey, c.payloadToSign), 'request-id': c.requestId });
  expect(done.statusCode, done.body).toBe(200);
  return { session: done.json() as { id: string; expiresAt: string }, key: tek };
}

/** Both legs of a signed action, the retry stamped with `key` (a raw header value when a string). */
export async function signed(
  t: TestApp,
  method: 'POST' | 'PATCH' | 'DELETE',
  url: string,
  body: unknown,
  key: ClientKey | string,
  headers?: Record<string, string>,
): Promise<{ first: LightMyRequestResponse; retry: LightMyRequestResponse }> {
  const first = await t.call(method, url, body, headers);
  expect(first.statusCode, first.body).toBe(202);
  const c = first.json() as { payloadToSign: string; requestId: string };
  // The challenge's requestId is also the Request-Id response header.
  expect(first.headers['request-id']).toBe(c.requestId);
  const sig = typeof key === 'string' ? key : stamp(key.privateKey, c.payloadToSign);
  const retry = await t.call(method, url, body, { ...headers, 'service-wallet-signature': sig, 'request-id': c.requestId });
  return { first, retry };
}
