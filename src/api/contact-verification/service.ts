import type { Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, invalidInput } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import { customerUnderMandatingProvider } from '../../sandbox/rules/customer-authentication.js';
import { CONTACT_VERIFICATION_CODE } from '../../sandbox/rules/verification-rules.js';
import type { Customer } from '../customers/schemas.js';
import { customerView } from '../customers/service.js';
import { type CustomerRow, findCustomerForUpdate, updateCustomer } from '../customers/store.js';
import { effectTransaction } from '../../kernel/idempotency.js';

// Email and phone verification by one-time code. Only customers created in a region whose
// provider mandates it carry `contactVerification` ({email?, phone?}: PENDING | VERIFIED);
// for everyone else every operation here is 409. The stored JSON also remembers where the
// last code went (emailCodeSentTo / phoneCodeSentTo): a code confirms the address it was
// sent to, so after the address changes a new code must be sent.

export type Channel = 'email' | 'phone';
type ChannelStatus = 'PENDING' | 'VERIFIED';

interface StoredContactVerification {
  email?: ChannelStatus;
  phone?: ChannelStatus;
  emailCodeSentTo?: string;
  phoneCodeSentTo?: string;
}

export interface ContactVerificationDeps {
  store: Store;
}

const WORDS: Record<Channel, { noun: string; path: string }> = {
  email: { noun: 'email address', path: 'verify-email' },
  phone: { noun: 'phone number', path: 'verify-phone' },
};

function addressOf(row: CustomerRow, channel: Channel): string | null {
  return channel === 'email' ? row.email : row.phone_number;
}

const sentKey = (channel: Channel): 'emailCodeSentTo' | 'phoneCodeSentTo' => (channel === 'email' ? 'emailCodeSentTo' : 'phoneCodeSentTo');

/** The customer, under its row lock, with a channel that can still be verified (else missing, kernel/references.ts, or 409). */
async function lockChannel(
  trx: Transaction<DB>,
  store: Store,
  platformId: string,
  customerId: string,
  channel: Channel,
): Promise<{ row: CustomerRow; cv: StoredContactVerification; address: string }> {
  const row = await findCustomerForUpdate(trx, platformId, customerId, store.kind === 'postgres');
  if (!row || row.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', customerId, 'customerId', row?.is_deleted === 1);
  if (!customerUnderMandatingProvider(row) || !row.contact_verification) {
    throw apiError(409, 'CONFLICT', `Customer ${customerId}'s payment provider does not require contact verification${row.region ? ` (region ${row.region})` : ''}`, {
      customerId,
      reason: 'CONTACT_VERIFICATION_NOT_REQUIRED',
    });
  }
  const cv = JSON.parse(row.contact_verification) as StoredContactVerification;
  const address = addressOf(row, channel);
  if (cv[channel] === undefined || !address) {
    throw apiError(409, 'CONFLICT', `Customer ${customerId} has no ${WORDS[channel].noun} to verify`, { customerId, channel, reason: 'CHANNEL_NOT_PRESENT' });
  }
  if (cv[channel] === 'VERIFIED') {
    throw apiError(409, 'CONFLICT', `Customer ${customerId}'s ${WORDS[channel].noun} is already verified`, { customerId, channel, reason: 'ALREADY_VERIFIED' });
  }
  return { row, cv, address };
}

/** Send (or resend) a code: in the sandbox nothing is delivered and the code is always CONTACT_VERIFICATION_CODE. */
export async function sendContactCode(deps: ContactVerificationDeps, platformId: string, customerId: string, channel: Channel): Promise<void> {
  const { store } = deps;
  // The route answers 204: that answer is stored under the Idempotency-Key with the change.
  await effectTransaction(
    store.db,
    async (trx) => {
      const { row, cv, address } = await lockChannel(trx, store, platformId, customerId, channel);
      cv[sentKey(channel)] = address;
      // Sending a code changes nothing the customer resource shows: updatedAt stays.
      await updateCustomer(trx, row.id, { contact_verification: JSON.stringify(cv) });
    },
    () => null,
  );
}

/** Confirm a code: the channel becomes VERIFIED and the customer is returned. */
export async function confirmContactCode(
  deps: ContactVerificationDeps,
  platformId: string,
  at: string,
  customerId: string,
  channel: Channel,
  code: string,
): Promise<Customer> {
  const { store } = deps;
  return effectTransaction(store.db, async (trx) => {
    const { row, cv, address } = await lockChannel(trx, store, platformId, customerId, channel);
    const sentTo = cv[sentKey(channel)];
    if (sentTo !== address) {
      const why = sentTo === undefined ? 'no code was sent yet' : `the last code was sent to a previous ${WORDS[channel].noun}`;
      throw invalidInput(
        [{ field: 'code', message: `cannot be confirmed: ${why}; send one with POST /customers/${customerId}/${WORDS[channel].path}` }],
        `No verification code is outstanding for this ${WORDS[channel].noun}: ${why}`,
      );
    }
    if (code !== CONTACT_VERIFICATION_CODE) {
      throw invalidInput([{ field: 'code', message: 'is not the code that was sent' }], 'Invalid verification code');
    }
    cv[channel] = 'VERIFIED';
    delete cv[sentKey(channel)];
    const patch = { contact_verification: JSON.stringify(cv), updated_at: at };
    await updateCustomer(trx, row.id, patch);
    return customerView(trx, { ...row, ...patch });
  });
}

/** The channels present on a customer that are not VERIFIED yet (empty when none is required). */
export function unverifiedChannels(row: CustomerRow): Channel[] {
  if (!row.contact_verification) return [];
  const cv = JSON.parse(row.contact_verification) as StoredContactVerification;
  return (['email', 'phone'] as const).filter((c) => cv[c] !== undefined && cv[c] !== 'VERIFIED');
}
