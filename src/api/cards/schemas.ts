import { Type, type Static } from 'typebox';
import { ListOf, PageQuery, SortOrderQuery } from '../../kernel/pagination.js';
import { CurrencyAmount } from '../internal-accounts/schemas.js';

// Cards (reference tag Cards) and the card sandbox simulators (tag Sandbox). docs/cards.md.

export const CardState = Type.Enum(['PENDING_KYC', 'PROCESSING', 'ACTIVE', 'FROZEN', 'CLOSED'], {
  title: 'CardState',
  description: 'PROCESSING while the issuer provisions the card, ACTIVE (can transact), FROZEN (new authorizations declined CARD_PAUSED), CLOSED (terminal)',
});
export const CardStateReason = Type.Enum(['ISSUER_REJECTED', 'CLOSED_BY_PLATFORM', 'CLOSED_BY_GRID'], {
  title: 'CardStateReason',
  description: 'Why the card is CLOSED: the issuer rejected provisioning, the platform closed it, or the service did',
});
export const CardBrand = Type.Enum(['VISA', 'MASTERCARD'], { title: 'CardBrand', description: 'Card network (set when the card is provisioned)' });
export const CardForm = Type.Enum(['VIRTUAL'], { title: 'CardForm', description: 'Form factor: VIRTUAL only' });

const CardId = Type.String({ description: 'Card:<uuid>', examples: ['Card:019542f5-b3e7-1d02-0000-000000000010'] });
const AccountId = Type.String({ minLength: 1, maxLength: 255, description: 'InternalAccount:<uuid>' });
const FundingSources = Type.Array(AccountId, {
  minItems: 1,
  maxItems: 10,
  uniqueItems: true,
  description: 'Internal account ids in priority order (the first is tried first); each belongs to the cardholder, all in one card-eligible currency',
});
const MaxSpend = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Largest amount one card transaction may authorize (smallest unit of the card currency); a transaction of exactly this amount is allowed' });

export const Card = Type.Object(
  {
    id: CardId,
    cardholderId: Type.String({ description: 'The Customer holding the card' }),
    platformCardId: Type.Optional(Type.String({ description: 'The platform’s own identifier of the card (generated when the create omits it)' })),
    state: CardState,
    stateReason: Type.Union([CardStateReason, Type.Null()], { description: 'Set when the card is CLOSED; otherwise null' }),
    brand: Type.Optional(CardBrand),
    form: CardForm,
    last4: Type.Optional(Type.String({ description: 'Last four digits of the PAN (once provisioned)' })),
    expMonth: Type.Optional(Type.Integer({ minimum: 1, maximum: 12 })),
    expYear: Type.Optional(Type.Integer()),
    fundingSources: Type.Array(Type.String(), { description: 'Bound internal accounts, in priority order (detached, so empty, once the platform closed the card)' }),
    maxSpendPerTransaction: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'Per-transaction limit in the smallest unit of the card currency; null: none' }),
    currency: Type.Optional(Type.String({ description: 'The currency of the funding sources, which the card transacts in' })),
    processorRef: Type.Optional(Type.String({ description: 'Opaque processor-side reference' })),
    issuerRef: Type.Optional(Type.String({ description: 'Opaque issuer-side reference' })),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Card', description: 'A debit card issued against the cardholder’s internal accounts. Never carries the PAN, the CVV or a reveal URL.' },
);
export type Card = Static<typeof Card>;

export const CardListResponse = ListOf(Card, 'cards');

export const CardCreateRequest = Type.Object(
  {
    cardholderId: Type.String({ minLength: 1, maxLength: 255, description: 'The Customer to issue the card to; its KYC status must be APPROVED' }),
    platformCardId: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Your identifier of the card; its last 3 characters drive the sandbox issuance' })),
    threeDSecurePassword: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Static 3-D Secure password: only for programs whose issuer supports it (none in this sandbox)' })),
    form: CardForm,
    fundingSources: FundingSources,
    maxSpendPerTransaction: Type.Optional(MaxSpend),
  },
  { title: 'CardCreateRequest', additionalProperties: false },
);
export type CardCreateRequest = Static<typeof CardCreateRequest>;

export const CardUpdateRequest = Type.Object(
  {
    state: Type.Optional(Type.Enum(['ACTIVE', 'FROZEN', 'CLOSED'], { description: 'ACTIVE ⇄ FROZEN, ACTIVE | FROZEN → CLOSED (terminal)' })),
    fundingSources: Type.Optional(FundingSources),
    maxSpendPerTransaction: Type.Optional(Type.Union([MaxSpend, Type.Null()], { description: 'A positive limit, or null to clear it' })),
  },
  { title: 'CardUpdateRequest', additionalProperties: false, description: 'At least one field. state CLOSED cannot be combined with fundingSources or maxSpendPerTransaction.' },
);
export type CardUpdateRequest = Static<typeof CardUpdateRequest>;

export const CardRevealResponse = Type.Object(
  {
    panEmbedUrl: Type.String({
      format: 'uri',
      description:
        'Short-lived signed URL of the page that shows the PAN, CVV and expiry to the cardholder (render it in an iframe); the PAN and CVV are never in an API answer. A bearer secret: never store or log it',
    }),
    expiresAt: Type.String({ format: 'date-time', description: 'When the URL stops loading; ask for a new reveal after it' }),
  },
  { title: 'CardRevealResponse', additionalProperties: false },
);
export type CardRevealResponse = Static<typeof CardRevealResponse>;

export const CardParams = Type.Object({ id: Type.String({ description: 'The card id' }) });
export const CardTransactionParams = Type.Object({ id: Type.String({ description: 'The card id' }), cardTransactionId: Type.String({ description: 'The card transaction id' }) });

export const CardListQuery = Type.Object({
  cardholderId: Type.Optional(Type.String({ description: 'Cards of this customer' })),
  accountId: Type.Optional(Type.String({ description: 'Cards whose fundingSources contain this internal account' })),
  platformCardId: Type.Optional(Type.String({ description: 'Cards with this platform card id' })),
  state: Type.Optional(CardState),
  ...PageQuery,
  sortOrder: SortOrderQuery,
});
export type CardListQuery = Static<typeof CardListQuery>;

// ---- Card transactions ------------------------------------------------------------------

export const CardTransactionStatus = Type.Enum(['AUTHORIZED', 'PARTIALLY_SETTLED', 'SETTLED', 'REFUNDED', 'EXCEPTION'], {
  title: 'CardTransactionStatus',
  description: 'AUTHORIZED (hold placed), PARTIALLY_SETTLED (some clearings posted), SETTLED (closed against the funding source), REFUNDED (returned in full), EXCEPTION (settled to the network, pull from the funding source failed)',
});

export const CardMerchant = Type.Object(
  {
    descriptor: Type.String({ minLength: 1, maxLength: 255, description: 'Merchant descriptor; its last 3 characters drive the sandbox decisioning' }),
    mcc: Type.Optional(Type.String({ pattern: '^[0-9]{4}$', description: 'Merchant category code (4 digits)' })),
    country: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2' })),
  },
  { title: 'CardMerchant', additionalProperties: false },
);

const Summary = (title: string) => Type.Object({ count: Type.Integer(), totalAmount: Type.Integer() }, { title });
export const CardPullSummary = Type.Object(
  {
    count: Type.Integer({ description: 'Pulls (debits of the funding source) for this transaction; > 1 after a post-hoc pull' }),
    totalAmount: Type.Integer({ description: 'What the pulls collected' }),
    pendingCount: Type.Integer({ description: 'Pulls still PENDING' }),
  },
  { title: 'CardPullSummary' },
);
export const CardRefundSummary = Summary('CardRefundSummary');
export const CardSettlementSummary = Summary('CardSettlementSummary');

const cardTransactionProps = {
  type: Type.Literal('CARD'),
  id: Type.String({ description: 'CardTransaction:<uuid>' }),
  cardId: Type.String(),
  customerId: Type.String(),
  platformCustomerId: Type.String(),
  issuerTransactionToken: Type.String(),
  status: CardTransactionStatus,
  direction: Type.Enum(['DEBIT', 'CREDIT'], { description: 'DEBIT: the card spends; CREDIT: money to the card (credit authorizations)' }),
  kind: Type.Optional(
    Type.Enum(['AUTHORIZATION', 'FINANCIAL_AUTHORIZATION', 'CREDIT_AUTHORIZATION', 'CREDIT_AUTHORIZATION_ADVICE', 'FINANCIAL_CREDIT_AUTHORIZATION'], {
      description: 'The network message that opened the transaction',
    }),
  ),
  merchant: CardMerchant,
  authorizedAmount: CurrencyAmount,
  settledAmount: Type.Optional(CurrencyAmount),
  refundedAmount: Type.Optional(CurrencyAmount),
  /** Authorized but released without clearing (authorization expiry, a smaller advice, the card closed). */
  releasedAmount: Type.Optional(CurrencyAmount),
  accountId: Type.String({ description: 'The funding internal account' }),
  pullSummary: CardPullSummary,
  refundSummary: CardRefundSummary,
  settlementSummary: CardSettlementSummary,
  authorizedAt: Type.String({ format: 'date-time' }),
  lastEventAt: Type.Optional(Type.String({ format: 'date-time' })),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
};

export const CardTransaction = Type.Object(cardTransactionProps, {
  title: 'CardTransaction',
  description: 'The parent row of a card authorization, with its pulls, clearings and refunds rolled up into the summaries',
});
export type CardTransaction = Static<typeof CardTransaction>;

export const CardTransactionListResponse = ListOf(CardTransaction, 'card transactions');
export const CardTransactionListQuery = Type.Object({
  status: Type.Optional(CardTransactionStatus),
  ...PageQuery,
  sortOrder: SortOrderQuery,
});
export type CardTransactionListQuery = Static<typeof CardTransactionListQuery>;

// ---- Sandbox simulators -------------------------------------------------------------------

const Amount = (description: string) => Type.Integer({ exclusiveMinimum: 0, maximum: 100_000_000_000, description });
const TxRef = Type.String({ minLength: 1, maxLength: 255, description: 'The CardTransaction to act on' });
const CurrencyRef = Type.Object({ code: Type.String({ pattern: '^[A-Z0-9]{3,5}$', description: 'The card’s currency' }) }, { additionalProperties: true, description: 'Currency of the amount ({code}; other Currency fields are ignored)' });

export const SandboxCardAuthorizationRequest = Type.Object(
  { amount: Amount('Amount in the smallest unit of currency'), currency: CurrencyRef, merchant: CardMerchant },
  { title: 'SandboxCardAuthorizationRequest', additionalProperties: false },
);
export type SandboxCardAuthorizationRequest = Static<typeof SandboxCardAuthorizationRequest>;

export const SandboxCardClearingRequest = Type.Object(
  { cardTransactionId: TxRef, amount: Type.Integer({ minimum: 0, maximum: 100_000_000_000, description: 'Clearing amount; 0 expires the authorization (AUTHORIZATION_EXPIRY)' }) },
  { title: 'SandboxCardClearingRequest', additionalProperties: false },
);
export type SandboxCardClearingRequest = Static<typeof SandboxCardClearingRequest>;

export const SandboxCardReturnRequest = Type.Object(
  { cardTransactionId: TxRef, amount: Amount('Return amount: at most the net settled amount (settled minus refunded)') },
  { title: 'SandboxCardReturnRequest', additionalProperties: false },
);
export type SandboxCardReturnRequest = Static<typeof SandboxCardReturnRequest>;

export const SandboxCardBalanceInquiryRequest = Type.Object({ merchant: CardMerchant }, { title: 'SandboxCardBalanceInquiryRequest', additionalProperties: false });
export type SandboxCardBalanceInquiryRequest = Static<typeof SandboxCardBalanceInquiryRequest>;

export const SandboxCardAuthorizationAdviceRequest = Type.Object(
  { cardTransactionId: TxRef, amount: Amount('The new total authorized amount') },
  { title: 'SandboxCardAuthorizationAdviceRequest', additionalProperties: false },
);
export type SandboxCardAuthorizationAdviceRequest = Static<typeof SandboxCardAuthorizationAdviceRequest>;

export const SandboxCardTransactionRefRequest = Type.Object({ cardTransactionId: TxRef }, { title: 'SandboxCardTransactionRefRequest', additionalProperties: false });
export type SandboxCardTransactionRefRequest = Static<typeof SandboxCardTransactionRefRequest>;

/**
 * What a simulator answers, as the reference declares it: the issuer's token of the simulated
 * event, nothing else. The card transaction it makes or changes is delivered by its
 * CARD_TRANSACTION.* webhook and read through GET /cards/{id}/transactions.
 */
export const SandboxCardSimulationResponse = Type.Object(
  {
    issuerTransactionToken: Type.String({
      description:
        'The sandbox issuer’s token of the simulated event: the issuerTransactionToken of the card transaction it made or changed (none for a decline or a balance inquiry)',
    }),
  },
  { title: 'SandboxCardSimulationResponse', additionalProperties: false, description: 'Simulation accepted: the token that correlates the simulated event with the card transaction webhooks' },
);
