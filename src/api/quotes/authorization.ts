import type { Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type { PaymentDeps } from '../transactions/payments.js';
import type { QuoteRow } from './store.js';

// The authorization gate the SCA area installs (its area.ts): a quote about to be executed
// may be held for strong customer authentication.

type Now = { ms: number; at: string };

// ---- Authorization (SCA) ----------------------------------------------------------------

/**
 * A gate the SCA area installs: given a quote about to be executed (or a REALTIME_FUNDING
 * quote just created), it either holds it for authorization (true: it moved the quote to
 * PENDING_AUTHORIZATION) or lets it through (false). Runs in the caller's transaction. A gate
 * about to hold the quote first awaits `beforeHold`: the quote and its transaction may not be
 * written yet (executeRow writes a quote created with immediatelyExecute once, at its start).
 */
export type AuthorizationGate = (trx: Transaction<DB>, deps: PaymentDeps, platform: PlatformRow, row: QuoteRow, now: Now, beforeHold?: () => Promise<void>) => Promise<boolean>;
export let authorizationGate: AuthorizationGate | undefined;
export function setAuthorizationGate(gate: AuthorizationGate): void {
  authorizationGate = gate;
}
