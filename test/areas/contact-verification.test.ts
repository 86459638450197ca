import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// Contact verification: email and phone one-time codes for customers whose provider mandates it (black box).

const CODE = '123456';

describe(`contact verification (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  async function customer(extra: Record<string, unknown>, auth?: string): Promise<Record<string, any>> {
    const res = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Marie Curie', ...extra }, auth ? { authorization: auth } : {});
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  }

  const eu = () => customer({ region: 'FR', email: 'marie@example.fr', phoneNumber: '+33612345678' });

  it('gives an EU customer with email and phone both channels PENDING', async () => {
    const c = await eu();
    expect(c.contactVerification).toEqual({ email: 'PENDING', phone: 'PENDING' });
  });

  for (const channel of ['email', 'phone'] as const) {
    const other = channel === 'email' ? 'phone' : 'email';

    it(`sends and confirms the ${channel} code: that channel becomes VERIFIED`, async () => {
      const c = await eu();
      const sent = await t.call('POST', `/customers/${c.id}/verify-${channel}`);
      expect(sent.statusCode, sent.body).toBe(204);
      expect(sent.body).toBe('');
      // Sending shows nothing on the customer.
      const afterSend = (await t.call('GET', `/customers/${c.id}`)).json();
      expect(afterSend.contactVerification).toEqual({ email: 'PENDING', phone: 'PENDING' });
      expect(afterSend.updatedAt).toBe(c.updatedAt);

      t.clock.advance(60_000);
      const res = await t.call('POST', `/customers/${c.id}/verify-${channel}/confirm`, { code: CODE });
      expect(res.statusCode, res.body).toBe(200);
      const confirmed = res.json();
      expect(confirmed.id).toBe(c.id);
      expect(confirmed.contactVerification).toEqual({ [channel]: 'VERIFIED', [other]: 'PENDING' });
      expect(confirmed.updatedAt).toBe(new Date(t.clock.nowMs()).toISOString());
      expect((await t.call('GET', `/customers/${c.id}`)).json()).toEqual(confirmed);
    });

    it(`refuses a wrong ${channel} code with a field error on code, then accepts the right one`, async () => {
      const c = await eu();
      expect((await t.call('POST', `/customers/${c.id}/verify-${channel}`)).statusCode).toBe(204);
      const e = envelope(await t.call('POST', `/customers/${c.id}/verify-${channel}/confirm`, { code: '000000' }), 400, 'INVALID_INPUT');
      expect(e.details!.errors).toEqual([{ field: 'code', message: expect.any(String) }]);
      expect((await t.call('GET', `/customers/${c.id}`)).json().contactVerification[channel]).toBe('PENDING');
      expect((await t.call('POST', `/customers/${c.id}/verify-${channel}/confirm`, { code: CODE })).statusCode).toBe(200);
    });

    it(`answers 409 for a ${channel} already verified`, async () => {
      const c = await eu();
      await t.call('POST', `/customers/${c.id}/verify-${channel}`);
      expect((await t.call('POST', `/customers/${c.id}/verify-${channel}/confirm`, { code: CODE })).statusCode).toBe(200);
      envelope(await t.call('POST', `/customers/${c.id}/verify-${channel}`), 409, 'CONFLICT');
      envelope(await t.call('POST', `/customers/${c.id}/verify-${channel}/confirm`, { code: CODE }), 409, 'CONFLICT');
    });
  }

  it('refuses to confirm before a code was sent', async () => {
    const c = await eu();
    const e = envelope(await t.call('POST', `/customers/${c.id}/verify-email/confirm`, { code: CODE }), 400, 'INVALID_INPUT');
    expect((e.details!.errors as Array<{ field: string }>).map((x) => x.field)).toEqual(['code']);
    expect((await t.call('GET', `/customers/${c.id}`)).json().contactVerification.email).toBe('PENDING');
  });

  it('needs a new code after the address changed, and a changed address is PENDING again', async () => {
    const c = await eu();
    await t.call('POST', `/customers/${c.id}/verify-email`);
    expect((await t.call('PATCH', `/customers/${c.id}`, { customerType: 'INDIVIDUAL', email: 'new@example.fr' })).statusCode).toBe(200);
    envelope(await t.call('POST', `/customers/${c.id}/verify-email/confirm`, { code: CODE }), 400, 'INVALID_INPUT');
    await t.call('POST', `/customers/${c.id}/verify-email`);
    expect((await t.call('POST', `/customers/${c.id}/verify-email/confirm`, { code: CODE })).json().contactVerification.email).toBe('VERIFIED');

    const patched = await t.call('PATCH', `/customers/${c.id}`, { customerType: 'INDIVIDUAL', email: 'newer@example.fr' });
    expect(patched.json().contactVerification.email).toBe('PENDING');
  });

  it('checks the body of confirm', async () => {
    const c = await eu();
    await t.call('POST', `/customers/${c.id}/verify-phone`);
    const e = envelope(await t.call('POST', `/customers/${c.id}/verify-phone/confirm`, {}), 400, 'INVALID_INPUT');
    expect((e.details!.errors as Array<{ field: string }>).map((x) => x.field)).toEqual(['code']);
  });

  it('answers 409 on every endpoint for customers whose provider does not require it', async () => {
    const us = await customer({ region: 'US', email: 'sam@example.com', phoneNumber: '+14155550100' });
    const none = await customer({ email: 'x@example.com' });
    for (const c of [us, none]) {
      expect(c).not.toHaveProperty('contactVerification');
      for (const path of ['verify-email', 'verify-phone']) {
        envelope(await t.call('POST', `/customers/${c.id}/${path}`), 409, 'CONFLICT');
        envelope(await t.call('POST', `/customers/${c.id}/${path}/confirm`, { code: CODE }), 409, 'CONFLICT');
      }
    }
  });

  it('answers 409 for a channel the customer does not have', async () => {
    const c = await customer({ region: 'DE', email: 'hans@example.de' });
    expect(c.contactVerification).toEqual({ email: 'PENDING' });
    envelope(await t.call('POST', `/customers/${c.id}/verify-phone`), 409, 'CONFLICT');
    envelope(await t.call('POST', `/customers/${c.id}/verify-phone/confirm`, { code: CODE }), 409, 'CONFLICT');
    expect((await t.call('POST', `/customers/${c.id}/verify-email`)).statusCode).toBe(204);
  });

  it('answers 404 USER_NOT_FOUND for unknown customers and another platform’s', async () => {
    const unknown = 'Customer:01950000-0000-7000-8000-000000000000';
    const created = await t.call('POST', '/admin/platforms', { name: 'Other' }, { authorization: `Bearer ${ADMIN_KEY}` });
    const cred = created.json().credentials as { clientId: string; clientSecret: string };
    const foreign = await customer({ region: 'FR', email: 'o@example.fr' }, basic(cred.clientId, cred.clientSecret));
    for (const id of [unknown, foreign.id]) {
      envelope(await t.call('POST', `/customers/${id}/verify-email`), 404, 'USER_NOT_FOUND');
      envelope(await t.call('POST', `/customers/${id}/verify-email/confirm`, { code: CODE }), 404, 'USER_NOT_FOUND');
    }
  });
});
