import { describe, expect, it } from 'vitest';
import { customerUnderMandatingProvider, EU_PROVIDER_REGIONS, providerMandatesCustomerAuthentication } from '../../src/sandbox/rules/customer-authentication.js';
import { lockFor } from '../../src/sandbox/rules/sca.js';
import { CONTACT_VERIFICATION_REGIONS } from '../../src/sandbox/rules/verification-rules.js';

// The one rule contact verification and SCA share, and the lock escalation.

describe('customer authentication rule', () => {
  it('the EU provider serves the 27 EU members and the 3 EEA states, and only them', () => {
    expect(EU_PROVIDER_REGIONS.size).toBe(30);
    for (const r of ['DE', 'FR', 'NL', 'IS', 'LI', 'NO']) expect(providerMandatesCustomerAuthentication(r)).toBe(true);
    for (const r of ['US', 'GB', 'CH', 'MX', '']) expect(providerMandatesCustomerAuthentication(r)).toBe(false);
    expect(providerMandatesCustomerAuthentication(null)).toBe(false);
    expect(providerMandatesCustomerAuthentication(undefined)).toBe(false);
  });

  it('contact verification uses the same regions', () => {
    expect(CONTACT_VERIFICATION_REGIONS).toBe(EU_PROVIDER_REGIONS);
  });

  it('a customer is in scope when its creation recorded contact verification', () => {
    expect(customerUnderMandatingProvider({ contact_verification: '{}' })).toBe(true);
    expect(customerUnderMandatingProvider({ contact_verification: null })).toBe(false);
  });

  it('locks: none before 5 failures, then 15 min, 30 min, 1 h, 24 h, then suspended', () => {
    expect([1, 2, 3, 4].map(lockFor)).toEqual([null, null, null, null]);
    expect([5, 6, 7, 8].map(lockFor)).toEqual([15 * 60_000, 30 * 60_000, 3_600_000, 86_400_000]);
    expect([9, 10, 50].map(lockFor)).toEqual(['SUSPENDED', 'SUSPENDED', 'SUSPENDED']);
  });
});
