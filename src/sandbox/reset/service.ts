import type { AppDeps } from '../../kernel/deps.js';
import { iso } from '../../kernel/clock.js';
import { apiError } from '../../kernel/errors.js';
import { openPlatformAccounts } from '../../api/internal-accounts/service.js';
import { findPlatform, listPlatforms } from '../../operator/platforms/store.js';
import { requestLogOf } from '../request-log/service.js';
import { deleteRows, resetTables } from './store.js';

export interface ResetResult {
  /** The platforms reset. */
  platformIds: string[];
  /** Rows deleted, per table (only tables that had some). */
  deleted: Record<string, number>;
  resetAt: string;
}

type Deps = Pick<AppDeps, 'store' | 'clock'>;

function nonZero(counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
}

/**
 * Empty one platform's sandbox (or every platform's when platformId is null) in one
 * transaction: its customers, accounts and ledger, quotes, transactions, jobs, events,
 * webhook deliveries, Idempotency-Key answers and request log. Its tokens, configuration,
 * webhook signing key and sandbox clock are kept; its own internal accounts are opened
 * again, empty, so the platform works as after its creation.
 */
export async function resetSandbox(deps: Deps, platformId: string | null): Promise<ResetResult> {
  const tables = await resetTables(deps.store);
  const result = await deps.store.db.transaction().execute(async (trx) => {
    const platforms = platformId === null ? await listPlatforms(trx) : [await findPlatform(trx, platformId)];
    if (platforms[0] === undefined && platformId !== null) throw apiError(404, 'REFERENCE_NOT_FOUND', `Platform ${platformId} not found`);
    const counts = await deleteRows(trx, tables, platformId);
    let at = iso(deps.clock.nowMs());
    for (const p of platforms) {
      if (!p) continue;
      const pAt = iso(deps.clock.nowMs() + Number(p.clock_offset_ms));
      if (platformId !== null) at = pAt;
      await openPlatformAccounts(trx, p, pAt);
    }
    return { platformIds: platforms.filter((p) => p !== undefined).map((p) => p.id), deleted: nonZero(counts), resetAt: at };
  });
  const log = requestLogOf(deps.store);
  if (platformId === null) log.clearAll();
  else log.clear(platformId);
  return result;
}
