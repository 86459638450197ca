import type { Transaction } from 'kysely';
import type { PlatformRow } from './credentials.js';
import type { DB } from './db/schema.js';

// Seams between areas. An area that must react to another's change inside the same
// transaction (the accounts area opening a customer's internal accounts when the customer
// is created) registers here when the app is built, instead of the first area calling it.

export interface CustomerCreatedEvent {
  trx: Transaction<DB>;
  platform: PlatformRow;
  customerId: string;
  currencies: string[];
  /** The customer's acceptance of the end-user terms is on file (after the change). */
  endUserTermsOnFile: boolean;
  /** The customer's email after the change (null: none), so a hook need not read the row it was handed. */
  email: string | null;
  at: string;
}

/** A customer update, inside its transaction; `currencies` are the customer's currencies after it. */
export type CustomerUpdatedEvent = CustomerCreatedEvent;

/** A platform configuration change (e.g. its supported currencies), inside its transaction. */
export interface PlatformConfigUpdatedEvent {
  trx: Transaction<DB>;
  platform: PlatformRow;
  at: string;
}

export class Hooks {
  /** Run right after the customer's row is inserted, in that transaction: nothing of it exists yet but the row. */
  readonly customerCreated: Array<(e: CustomerCreatedEvent) => Promise<void>> = [];
  readonly customerUpdated: Array<(e: CustomerUpdatedEvent) => Promise<void>> = [];
  readonly platformConfigUpdated: Array<(e: PlatformConfigUpdatedEvent) => Promise<void>> = [];

  async emitCustomerCreated(e: CustomerCreatedEvent): Promise<void> {
    for (const fn of this.customerCreated) await fn(e);
  }

  async emitCustomerUpdated(e: CustomerUpdatedEvent): Promise<void> {
    for (const fn of this.customerUpdated) await fn(e);
  }

  async emitPlatformConfigUpdated(e: PlatformConfigUpdatedEvent): Promise<void> {
    for (const fn of this.platformConfigUpdated) await fn(e);
  }
}
