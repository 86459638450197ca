import { type Static, Type } from 'typebox';
import { ListOf, PageQuery } from '../../kernel/pagination.js';

export const LedgerEntryParams = Type.Object({ accountId: Type.String({ description: 'InternalAccount:<uuid>' }) });

export const LedgerEntryQuery = Type.Object({ ...PageQuery });

export const LedgerPosting = Type.Object(
  {
    bucket: Type.Enum(['available', 'pending', 'held'], { description: 'The part of the balance the line moves' }),
    amount: Type.Integer({ description: 'Signed, in the smallest unit of the currency: positive credits the account' }),
  },
  { title: 'SandboxLedgerPosting' },
);

export const LedgerEntry = Type.Object(
  {
    id: Type.String({ description: 'LedgerEntry:<uuid>' }),
    accountId: Type.String({ description: 'The internal account asked about' }),
    kind: Type.String({ description: 'What the entry records: FUNDING, HOLD, CAPTURE, RELEASE, REFUND, UMA_RECEIVE, …' }),
    currency: Type.String(),
    postings: Type.Array(LedgerPosting, { description: 'The entry’s lines on this account (its other lines are on the ledger’s counter-accounts)' }),
    availableChange: Type.Integer({ description: 'Net change of the account’s available balance' }),
    totalChange: Type.Integer({ description: 'Net change of the account’s total balance (available + pending + held)' }),
    referenceId: Type.Union([Type.String(), Type.Null()], { description: 'What caused it, usually a Transaction id' }),
    relatedEntryId: Type.Union([Type.String(), Type.Null()], { description: 'The entry it settles or reverses (a CAPTURE or RELEASE of a HOLD)' }),
    memo: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.String({ format: 'date-time', description: 'Platform sandbox time' }),
  },
  { title: 'SandboxLedgerEntry' },
);
export type LedgerEntry = Static<typeof LedgerEntry>;

export const LedgerEntryListResponse = ListOf(LedgerEntry, 'ledger entries');
