import type { Kysely } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { apiError } from '../../kernel/errors.js';
import type { PayerDataField } from '../../sandbox/rules/corridors.js';
import { assertCounterpartyStep, parseUmaAddress, umaCounterparty } from '../../sandbox/rules/uma.js';
import type { PlatformCurrencyConfig } from '../config/schemas.js';
import { findConfig } from '../config/store.js';
import { type CustomerRow, findCustomerByUmaAddress } from '../customers/store.js';
import {
  type LookupQuery,
  type LookupReceiver,
  lookupQueryErrors,
  performLookup,
  type ReceivingCurrency,
  resolveSender,
  throwLookupFieldErrors,
  umaAddressError,
} from '../lookups/service.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type { ReceiverUmaLookupResponse } from './schemas.js';

// GET /receiver/uma/{receiverUmaAddress}: the UMA twin of the external-account lookup.
// Order of checks: every field problem in one 400 (INVALID_INPUT, or INVALID_UMA_ADDRESS
// when only addresses are malformed); the sender (404 USER_NOT_FOUND, 400 INVALID_CURRENCY);
// the counterparty (412 / 424 / 400 sandbox triggers, 404 UMA_NOT_FOUND); self payment.

/** What a customer of any platform can receive, under its platform's currency configuration. */
async function customerReceiving(db: Kysely<DB>, customer: CustomerRow): Promise<ReceivingCurrency[]> {
  const currencies = JSON.parse(customer.currencies) as string[];
  const config = await findConfig(db, customer.platform_id);
  const configured = config ? (JSON.parse(config.supported_currencies) as PlatformCurrencyConfig[]) : undefined;
  const out: ReceivingCurrency[] = [];
  for (const currency of currencies) {
    if (!configured) {
      out.push({ currency });
      continue;
    }
    const c = configured.find((x) => x.currencyCode === currency);
    // A currency the receiving platform no longer supports, or does not take INCOMING in.
    if (!c || !c.enabledTransactionTypes.includes('INCOMING')) continue;
    out.push({ currency, min: c.minAmount, max: c.maxAmount, requiredPayerDataFields: c.requiredCounterpartyFields as PayerDataField[] });
  }
  return out;
}

export async function lookupUmaReceiver(
  db: Kysely<DB>,
  platform: PlatformRow,
  now: { ms: number; at: string },
  receiverUmaAddress: string,
  query: LookupQuery,
): Promise<ReceiverUmaLookupResponse> {
  const errors = lookupQueryErrors(query);
  const address = parseUmaAddress(receiverUmaAddress);
  if (!address) errors.umaAddress.unshift(umaAddressError('receiverUmaAddress'));
  throwLookupFieldErrors(errors);
  const receiverAddress = address!;

  const sender = await resolveSender(db, platform.id, query);

  const cp = umaCounterparty(receiverAddress);
  let receiving: ReceivingCurrency[];
  let receiver: LookupReceiver;
  let receiverCustomerId: string | undefined;
  if (cp.kind === 'NOT_FOUND') {
    throw apiError(404, 'UMA_NOT_FOUND', `No receiver ${receiverAddress.address} at the counterparty`, { receiverUmaAddress: receiverAddress.address });
  } else if (cp.kind === 'SANDBOX') {
    assertCounterpartyStep(cp, 'LOOKUP');
    receiving = cp.currencies.map((currency) => ({ currency }));
    receiver = { kind: 'SANDBOX_UMA', address: receiverAddress.normalized, behaviour: cp.behaviour };
    if (cp.failure) receiver.failure = { status: cp.failure.status, code: cp.failure.code, stage: cp.failure.stage };
  } else {
    const customer =
      (await findCustomerByUmaAddress(db, receiverAddress.address)) ??
      (receiverAddress.address === receiverAddress.normalized ? undefined : await findCustomerByUmaAddress(db, receiverAddress.normalized));
    if (!customer) {
      throw apiError(404, 'UMA_NOT_FOUND', `No receiver ${receiverAddress.address} at the counterparty`, { receiverUmaAddress: receiverAddress.address });
    }
    receiving = await customerReceiving(db, customer);
    receiver = { kind: 'CUSTOMER', platformId: customer.platform_id, customerId: customer.id, address: customer.uma_address };
    receiverCustomerId = customer.id;
  }

  const result = await performLookup(db, platform, now, {
    kind: 'UMA',
    target: receiverAddress.address,
    query,
    receiving,
    receiver,
    receiverCustomerId,
    sender,
  });
  return { receiverUmaAddress: receiverAddress.address, ...result };
}
