// Which customers fall under the rules of an EU payment provider: contact verification
// (email and phone codes before KYC) and Strong Customer Authentication (factors, login
// sessions, per-payment challenges). One rule for both, decided by the region a customer is
// created in: a customer created in one of these regions is served by the EU provider, which
// mandates both; everyone else never sees either (their endpoints answer 409).
//
// The provider is chosen when the customer is created and kept with it (customers carry
// `contactVerification` from then on): changing `region` later does not move a customer to
// another provider, for either area.

/** Regions (ISO 3166-1 alpha-2) served by the EU provider: the EU and the EEA. */
export const EU_PROVIDER_REGIONS: ReadonlySet<string> = new Set(
  'AT BE BG HR CY CZ DK EE FI FR DE GR HU IE IT LV LT LU MT NL PL PT RO SK SI ES SE IS LI NO'.split(' '),
);

/** Does the provider of a customer created in `region` mandate contact verification and SCA? */
export function providerMandatesCustomerAuthentication(region: string | null | undefined): boolean {
  return region !== null && region !== undefined && EU_PROVIDER_REGIONS.has(region);
}

/**
 * Is a customer in scope, from what its creation recorded: the customers the rule above put
 * under the EU provider carry a contact-verification record (`contact_verification`), and
 * only they. Contact verification and SCA both ask this.
 */
export function customerUnderMandatingProvider(customer: { contact_verification: string | null }): boolean {
  return customer.contact_verification !== null;
}
