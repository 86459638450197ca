import { currencyView } from '../../kernel/currencies.js';
import { apiError } from '../../kernel/errors.js';
import { decodeCursor, DEFAULT_LIMIT, encodeCursor } from '../../kernel/pagination.js';
import { discoveries } from '../../sandbox/rules/corridors.js';
import { UMA_PROVIDERS, type UmaProviderEntry, VASPS } from '../../sandbox/rules/directory.js';
import type { DiscoveryQuery, UmaProviderQuery, VaspQuery } from './schemas.js';

// Static directories of the sandbox: banks and providers per corridor, UMA providers, VASPs.
// The lists are fixed tables (src/sandbox/rules/corridors.ts, src/sandbox/rules/directory.ts); pages use
// the same opaque cursor as the stored lists, over each entry's unique key.

export function listDiscoveries(q: DiscoveryQuery) {
  const data = discoveries({ country: q.country, currency: q.currency }).map((d) => ({
    bankName: d.bankName,
    displayName: d.displayName,
    country: d.country,
    currency: d.currency,
    paymentRails: d.paymentRails,
    accountType: d.accountType,
  }));
  return { data };
}

/** One page of a fixed, ordered list; the cursor is the key of the last entry returned. */
function pageOf<T>(items: readonly T[], key: (t: T) => string, limit: number | undefined, cursor: string | undefined) {
  const n = limit ?? DEFAULT_LIMIT;
  let start = 0;
  if (cursor !== undefined) {
    const k = decodeCursor(cursor);
    const at = items.findIndex((t) => key(t) === k);
    if (at < 0) {
      throw apiError(400, 'INVALID_INPUT', 'cursor does not name an entry of this list', { errors: [{ field: 'cursor', message: 'is not a valid cursor for this list' }] });
    }
    start = at + 1;
  }
  const data = items.slice(start, start + n);
  const hasMore = start + n < items.length;
  return { data, hasMore, ...(hasMore && data.length > 0 ? { nextCursor: encodeCursor(key(data[data.length - 1]!)) } : {}) };
}

function providerView(e: UmaProviderEntry) {
  return {
    name: e.name,
    supportedRegions: [...e.supportedRegions],
    domain: e.domain,
    logoUrl: e.logoUrl,
    supportedCurrencies: e.supportedCurrencies.map(currencyView),
    lei: e.lei,
    allowListStatus: e.allowListStatus,
  };
}

export function listUmaProviders(q: UmaProviderQuery) {
  const country = q.countryCode?.trim().toUpperCase();
  const currency = q.currencyCode?.trim().toUpperCase();
  const filtered = UMA_PROVIDERS.filter(
    (e) =>
      (country === undefined || e.supportedRegions.includes(country)) &&
      (currency === undefined || e.supportedCurrencies.includes(currency)) &&
      (q.hasBlockedProviders !== false || e.allowListStatus),
  );
  const sorted = [...filtered].sort((a, b) => a.listedAt.localeCompare(b.listedAt) || a.domain.localeCompare(b.domain));
  if ((q.sortOrder ?? 'desc') === 'desc') sorted.reverse();
  const page = pageOf(sorted, (e) => e.domain, q.limit, q.cursor);
  return { ...page, data: page.data.map(providerView), totalCount: sorted.length };
}

export function listVasps(q: VaspQuery) {
  const sorted = [...VASPS].sort((a, b) => a.vaspName.toLowerCase().localeCompare(b.vaspName.toLowerCase()));
  const page = pageOf(sorted, (v) => v.vaspName, q.limit, q.cursor);
  return { ...page, data: page.data.map((v) => ({ ...v })) };
}
