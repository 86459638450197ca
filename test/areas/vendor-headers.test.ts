import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNATURE_HEADER_ALIAS, verifyWebhookSignature } from '../../src/index.js';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { fund, newCustomer } from '../money-helpers.js';
import { clientKey, stamp } from '../wallet-client.js';
import { enc, otpLogin, walletCustomer } from '../wallet-flows.js';
import { Receiver } from '../webhook-receiver.js';

// The vendor's header names, for the official CLI and SDK helpers unmodified
// (docs/webhooks.md, docs/embedded-wallets.md): every webhook delivery is signed under
// X-Service-Signature and X-Grid-Signature with the same value (the TEST webhook, a domain
// event and its retry), and every signed action takes its stamp in Grid-Wallet-Signature
// as in Service-Wallet-Signature.

describe(`vendor header names (${STORE})`, () => {
  let t: TestApp;
  let receiver: Receiver;
  let publicKey: string;

  beforeAll(async () => {
    t = await makeApp();
    receiver = await new Receiver().start();
    expect((await t.call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
    publicKey = ((await t.call('GET', '/sandbox/webhooks/public-key')).json() as { publicKey: string }).publicKey;
  }, 30_000);
  afterAll(async () => {
    await receiver?.stop();
    await t?.close();
  });

  const bothSigned = (r: { body: string; headers: Record<string, string | string[] | undefined> }) => {
    const service = r.headers['x-service-signature'];
    const grid = r.headers['x-grid-signature'];
    expect(typeof service).toBe('string');
    expect(grid).toBe(service);
    expect(verifyWebhookSignature(r.body, String(grid), publicKey)).toBe(true);
  };

  it('the TEST webhook carries X-Grid-Signature with the X-Service-Signature value', async () => {
    expect(SIGNATURE_HEADER_ALIAS).toBe('X-Grid-Signature');
    const res = await t.call('POST', '/sandbox/webhooks/test');
    expect(res.statusCode, res.body).toBe(200);
    await t.running.webhooks.runDue();
    expect(receiver.tests.length).toBeGreaterThan(0);
    for (const r of receiver.tests) bothSigned(r);
  });

  it('a domain event and its retry carry both headers, the same value each time', async () => {
    let failFirst = true;
    receiver.behave = () => {
      if (failFirst) {
        failFirst = false;
        return 500;
      }
      return 200;
    };
    const c = await newCustomer(t, ['USD']);
    await fund(t, c.accounts.USD!.id, 1_000);
    await t.running.webhooks.runDue();
    const first = receiver.got.length;
    expect(first).toBeGreaterThan(0);
    expect((await t.call('POST', '/sandbox/clock/advance', { seconds: 600 })).statusCode).toBe(200);
    await t.running.webhooks.runDue();
    expect(receiver.got.length).toBeGreaterThan(first);
    const ids = receiver.got.map((r) => r.json.id);
    expect(new Set(ids).size).toBeLessThan(ids.length); // one event was sent twice: the retry
    for (const r of receiver.got) bothSigned(r);
  });

  it('a signed action passes with only Grid-Wallet-Signature', async () => {
    const w = await walletCustomer(t);
    const { key } = await otpLogin(t, w.emailCredentialId);
    const url = `/internal-accounts/${enc(w.accountId)}`;
    const first = await t.call('PATCH', url, { privateEnabled: true });
    expect(first.statusCode, first.body).toBe(202);
    const c = first.json() as { payloadToSign: string; requestId: string };
    const retry = await t.call('PATCH', url, { privateEnabled: true }, { 'grid-wallet-signature': stamp(key.privateKey, c.payloadToSign), 'request-id': c.requestId });
    expect(retry.statusCode, retry.body).toBe(200);
  });

  it('both names with the same stamp pass; with different stamps: 401 WALLET_SIGNATURE_MALFORMED, the challenge still usable', async () => {
    const w = await walletCustomer(t);
    const { key } = await otpLogin(t, w.emailCredentialId);
    const url = `/internal-accounts/${enc(w.accountId)}`;
    const first = await t.call('PATCH', url, { privateEnabled: true });
    const c = first.json() as { payloadToSign: string; requestId: string };
    const good = stamp(key.privateKey, c.payloadToSign);
    const other = stamp(clientKey().privateKey, c.payloadToSign);
    const e = envelope(await t.call('PATCH', url, { privateEnabled: true }, { 'service-wallet-signature': good, 'grid-wallet-signature': other, 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_MALFORMED');
    expect(e.message).toContain('Grid-Wallet-Signature');
    const ok = await t.call('PATCH', url, { privateEnabled: true }, { 'service-wallet-signature': good, 'grid-wallet-signature': good, 'request-id': c.requestId });
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('a wrong stamp under the alias is refused as under the service name', async () => {
    const w = await walletCustomer(t);
    await otpLogin(t, w.emailCredentialId);
    const url = `/internal-accounts/${enc(w.accountId)}`;
    const c = (await t.call('PATCH', url, { privateEnabled: true })).json() as { payloadToSign: string; requestId: string };
    envelope(await t.call('PATCH', url, { privateEnabled: true }, { 'grid-wallet-signature': 'not-a-stamp', 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_MALFORMED');
    const res = await t.call('PATCH', url, { privateEnabled: true }, { 'grid-wallet-signature': stamp(clientKey().privateKey, c.payloadToSign), 'request-id': c.requestId });
    expect(res.statusCode).toBe(401);
  });

  it('the served OpenAPI document names the alias on the signature header, which stays optional', async () => {
    const doc = (await t.call('GET', '/openapi.json')).json() as {
      paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string; required?: boolean; description?: string }> }>>;
    };
    const params = doc.paths['/quotes/{quoteId}/execute']!.post!.parameters!.filter((p) => p.in === 'header');
    const sig = params.find((p) => p.name.toLowerCase() === 'service-wallet-signature')!;
    expect(sig.required ?? false).toBe(false);
    expect(sig.description).toContain('Grid-Wallet-Signature');
    expect(params.some((p) => p.name.toLowerCase() === 'grid-wallet-signature')).toBe(false);
  });
});
