import type { Kysely } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { type Page, paginate } from '../../kernel/pagination.js';
import { requireInternalAccount } from '../../api/internal-accounts/service.js';
import type { EntryRow, PostingRow } from '../../api/ledger/store.js';
import type { LedgerEntry } from './schemas.js';
import { entriesOfAccountQuery, postingsOnAccount } from './store.js';

// The ledger entries of one internal account (GET /sandbox/internal-accounts/{id}/ledger-entries):
// what moved its balance, newest first, for the dashboard and for a developer checking a
// flow. Read only; balances change through ledger/service.ts alone.

export async function listLedgerEntries(db: Kysely<DB>, platformId: string, accountId: string, q: { limit?: number | undefined; cursor?: string | undefined }): Promise<Page<LedgerEntry>> {
  const account = await requireInternalAccount(db, platformId, accountId);
  const page = await paginate<EntryRow, EntryRow>(entriesOfAccountQuery(db, platformId, account.id), 'id', q, (r) => r);
  const postings = await postingsOnAccount(db, account.id, page.data.map((e) => e.id));
  const byEntry = new Map<string, PostingRow[]>();
  for (const p of postings) byEntry.set(p.entry_id, [...(byEntry.get(p.entry_id) ?? []), p]);
  return { ...page, data: page.data.map((e) => entryView(e, account.id, account.currency, byEntry.get(e.id) ?? [])) };
}

function entryView(e: EntryRow, accountId: string, currency: string, lines: PostingRow[]): LedgerEntry {
  const sum = (ps: PostingRow[]) => ps.reduce((n, p) => n + Number(p.amount), 0);
  return {
    id: e.id,
    accountId,
    kind: e.kind,
    currency: lines[0]?.currency ?? currency,
    postings: lines.map((p) => ({ bucket: p.bucket as 'available' | 'pending' | 'held', amount: Number(p.amount) })),
    availableChange: sum(lines.filter((p) => p.bucket === 'available')),
    totalChange: sum(lines),
    referenceId: e.reference_id,
    relatedEntryId: e.related_entry_id,
    memo: e.memo,
    createdAt: e.created_at,
  };
}
