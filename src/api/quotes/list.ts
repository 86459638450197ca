import type { Kysely } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { type Page, paginate, timeRangeOf } from '../../kernel/pagination.js';
import type { Quote, QuoteListQuery } from './schemas.js';
import { quoteView } from './views.js';
import { type QuoteRow, quoteQuery } from './store.js';

// GET /quotes: the platform's quotes, newest first, each exactly as GET /quotes/{quoteId}
// shows it. Kept apart from service.ts (the quote flows) so the two change independently.

/**
 * The platform's quotes matching every filter given, newest first, in cursor pages. A
 * customerId equal to the platform's id names the platform's own quotes (those sent on no
 * customer's behalf), as GET /transactions does. Filters that name nothing match nothing.
 */
export async function listQuotes(db: Kysely<DB>, platformId: string, q: QuoteListQuery, nowMs: number): Promise<Page<Quote>> {
  const range = timeRangeOf({ createdAfter: q.createdAfter, createdBefore: q.createdBefore });
  const base = quoteQuery(
    db,
    platformId,
    {
      status: q.status,
      customerId: q.customerId === platformId ? null : q.customerId,
      sendingAccountId: q.sendingAccountId,
      receivingAccountId: q.receivingAccountId,
      sendingUmaAddress: q.sendingUmaAddress,
      receivingUmaAddress: q.receivingUmaAddress,
      createdAfter: range.createdAfter,
      createdBefore: range.createdBefore,
    },
    nowMs,
  );
  return paginate<QuoteRow, Quote>(base, 'id', { limit: q.limit, cursor: q.cursor }, (row) => quoteView(row, nowMs));
}
