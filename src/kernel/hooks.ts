import type { Transaction } from 'kysely';
import type { PlatformRow } from '../areas/platforms/store.js';
import type { DB } from './db/schema.js';

// Seams between areas. An area that must react to another's change inside the same
// transaction (the accounts area opening a customer's internal accounts when the customer
// is created) registers here when the app is built, instead of the first area calling it.

export interface CustomerCreatedEvent {
  trx: Transaction<DB>;
  platform: PlatformRow;
  customerId: string;
  currencies: string[];
  at: string;
}

export class Hooks {
  readonly customerCreated: Array<(e: CustomerCreatedEvent) => Promise<void>> = [];

  async emitCustomerCreated(e: CustomerCreatedEvent): Promise<void> {
    for (const fn of this.customerCreated) await fn(e);
  }
}
