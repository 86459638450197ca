import type { FastifyPluginAsync } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { platformNowMs } from '../../kernel/clock.js';
import type { JobQueue } from '../../kernel/jobs.js';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import {
  Card,
  CardCreateRequest,
  CardListQuery,
  CardListResponse,
  CardParams,
  CardRevealResponse,
  CardTransaction,
  CardTransactionListQuery,
  CardTransactionListResponse,
  CardTransactionParams,
  CardUpdateRequest,
  SandboxCardAuthorizationAdviceRequest,
  SandboxCardAuthorizationRequest,
  SandboxCardBalanceInquiryRequest,
  SandboxCardClearingRequest,
  SandboxCardReturnRequest,
  SandboxCardSimulationResponse,
  SandboxCardTransactionRefRequest,
} from './schemas.js';
import { CARD_JOB, type CardJob, getCard, issueCard, listCards, revealCard, revealPageModel, REVEAL_PAGE_PATH, runActivation, updateCardById } from './service.js';
import {
  type AuthorizationKind,
  closeOpenTransactions,
  getCardTransaction,
  listCardTransactions,
  runPullConfirmation,
  simulateAuthorization,
  simulateAuthorizationAdvice,
  simulateBalanceInquiry,
  simulateClearing,
  simulateReturn,
  simulateReturnReversal,
} from './transactions.js';

// Cards (tag Cards) and the ten card simulators (tag Sandbox). docs/cards.md.

const tags = ['Cards'];
const sandboxTags = ['Sandbox'];

export const cardsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, jobs, sealer } = app.deps;
  const deps = { store, jobs, sealer };
  // Once per queue: a second app built on the same dependencies reuses the handler.
  jobs.registerOnce(CARD_JOB, async (ctx) => {
    const job = ctx.job.payload as CardJob;
    if (job.step === 'ACTIVATE') await runActivation(deps, ctx);
    else await runPullConfirmation(deps, ctx);
  });

  app.post(
    '/cards',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'createCard',
        summary: 'Issue a card',
        description:
          'Issues a VIRTUAL debit card to an APPROVED cardholder (else 400 CARDHOLDER_KYC_NOT_APPROVED), bound to its internal accounts (else 400 FUNDING_SOURCE_INELIGIBLE). ' +
          'The sandbox issuer answers by the last 3 characters of platformCardId (or cardholderId): 001 stays PROCESSING, 002 CLOSED (ISSUER_REJECTED), 005 ACTIVE after about 30 s, any other ACTIVE at once; each activation or rejection sends CARD.STATE_CHANGE.',
        body: CardCreateRequest,
        response: { 201: Card, ...errorResponses() },
      },
    },
    async (req, reply) => reply.code(201).send(await issueCard(deps, authOf(req).platform.id, nowOf(req, clock), req.body)),
  );

  app.get(
    '/cards',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'listCards',
        summary: 'List cards',
        description: 'The platform’s cards, newest first (sortOrder=asc: oldest first), filtered by cardholder, bound funding source (accountId), platformCardId or state.',
        querystring: CardListQuery,
        response: { 200: CardListResponse, ...errorResponses() },
      },
    },
    async (req) => listCards(store.db, authOf(req).platform.id, req.query),
  );

  app.get(
    '/cards/:id',
    { config: { auth: 'basic' }, schema: { tags, operationId: 'getCardById', summary: 'Get a card', params: CardParams, response: { 200: Card, ...errorResponses(404) } } },
    async (req) => getCard(store.db, authOf(req).platform.id, req.params.id),
  );

  app.patch(
    '/cards/:id',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'updateCardById',
        summary: 'Update a card',
        description:
          'Freeze (ACTIVE → FROZEN), unfreeze (FROZEN → ACTIVE), close (ACTIVE | FROZEN → CLOSED, terminal: open authorizations are released, funding sources detached), ' +
          'replace the funding sources (CARD.FUNDING_SOURCE_CHANGE) or set / clear maxSpendPerTransaction. 409 INVALID_STATE_TRANSITION, CARD_ALREADY_CLOSED, CARD_NOT_MUTABLE.',
        params: CardParams,
        body: CardUpdateRequest,
        response: { 200: Card, ...errorResponses(404, 409) },
      },
    },
    async (req) => updateCardById(deps, authOf(req).platform.id, nowOf(req, clock), req.params.id, req.body, (trx, card, now) => closeOpenTransactions(trx, deps, card, now)),
  );

  app.post(
    '/cards/:id/reveal',
    {
      // The answer is a bearer secret: never kept for an Idempotency-Key replay.
      config: { auth: 'basic', secretFields: ['panEmbedUrl'] },
      schema: {
        tags,
        operationId: 'revealCard',
        summary: 'Reveal card details',
        description:
          'A signed URL (valid 5 minutes, for this card only) of the page that shows the PAN, CVV and expiry to the cardholder, and when it expires: nothing else. The PAN and CVV are in no API answer; the URL is never stored, never in a card, a list or a webhook; each reveal is recorded with the token that asked. An expired or altered URL shows an error page and no card details.',
        params: CardParams,
        response: { 200: CardRevealResponse, ...errorResponses(404, 409) },
      },
    },
    async (req) => revealCard(deps, authOf(req).platform.id, authOf(req).tokenId, nowOf(req, clock), req.params.id, `${req.protocol}://${req.host}`),
  );

  app.get(
    '/cards/:id/transactions',
    {
      config: { auth: 'basic', extension: true },
      schema: {
        tags,
        operationId: 'listCardTransactions',
        summary: 'List a card’s transactions',
        description: 'The card’s CardTransactions (each the parent of an authorization with its pulls, clearings and refunds rolled up), newest first.',
        params: CardParams,
        querystring: CardTransactionListQuery,
        response: { 200: CardTransactionListResponse, ...errorResponses(404) },
      },
    },
    async (req) => listCardTransactions(store.db, authOf(req).platform.id, req.params.id, req.query),
  );

  app.get(
    '/cards/:id/transactions/:cardTransactionId',
    {
      config: { auth: 'basic', extension: true },
      schema: { tags, operationId: 'getCardTransaction', summary: 'Get a card transaction', params: CardTransactionParams, response: { 200: CardTransaction, ...errorResponses(404) } },
    },
    async (req) => getCardTransaction(store.db, authOf(req).platform.id, req.params.id, req.params.cardTransactionId),
  );

  // ---- The simulators -------------------------------------------------------------------

  // The reference's simulate operations answer 202/400/401/403/404/500: a transaction in the
  // wrong state is a 400 INVALID_INPUT, never a 409.
  const simulated = { 202: SandboxCardSimulationResponse, ...errorResponses(404) };
  const authorizationFamily: Array<[string, AuthorizationKind, string, string]> = [
    ['authorization', 'AUTHORIZATION', 'sandboxSimulateCardAuthorization', 'Simulate a card authorization'],
    ['credit_authorization', 'CREDIT_AUTHORIZATION', 'sandboxSimulateCardCreditAuthorization', 'Simulate a card credit authorization'],
    ['financial_authorization', 'FINANCIAL_AUTHORIZATION', 'sandboxSimulateCardFinancialAuthorization', 'Simulate a card financial authorization'],
    ['financial_credit_authorization', 'FINANCIAL_CREDIT_AUTHORIZATION', 'sandboxSimulateCardFinancialCreditAuthorization', 'Simulate a card financial credit authorization'],
    ['credit_authorization_advice', 'CREDIT_AUTHORIZATION_ADVICE', 'sandboxSimulateCardCreditAuthorizationAdvice', 'Simulate a card credit authorization advice'],
  ];
  for (const [path, kind, operationId, summary] of authorizationFamily) {
    app.post(
      `/sandbox/cards/:id/simulate/${path}`,
      {
        config: { auth: 'basic' },
        schema: {
          tags: sandboxTags,
          operationId,
          summary,
          description:
            'Decisioning by the last 3 characters of merchant.descriptor: 002 declined INSUFFICIENT_FUNDS, 003 declined CARD_PAUSED (as is any authorization on a FROZEN card), 005 the pull stays PENDING about 30 s then CONFIRMED, 006 the pull’s confirmation reports FAILED (EXCEPTION once settled), any other approved. ' +
            'Answers 202 with the issuerTransactionToken of the simulated event only: the card transaction it makes is delivered by CARD_TRANSACTION.* webhooks and read with GET /cards/{id}/transactions (same issuerTransactionToken). A decline records, moves and sends nothing.',
          params: CardParams,
          body: SandboxCardAuthorizationRequest,
          response: simulated,
        },
      },
      async (req, reply) => reply.code(202).send(await simulateAuthorization(deps, authOf(req).platform.id, nowOf(req, clock), req.params.id, req.body, kind)),
    );
  }

  app.post(
    '/sandbox/cards/:id/simulate/clearing',
    {
      config: { auth: 'basic' },
      schema: {
        tags: sandboxTags,
        operationId: 'sandboxSimulateCardClearing',
        summary: 'Simulate a card clearing',
        description: 'Clears an AUTHORIZED or PARTIALLY_SETTLED transaction: below the open hold PARTIALLY_SETTLED, equal SETTLED, above it the difference is pulled post hoc (EXCEPTION when that pull fails); 0 expires the authorization (hold released). Answers 202 with the transaction’s issuerTransactionToken; the change comes as a CARD_TRANSACTION.* webhook.',
        params: CardParams,
        body: SandboxCardClearingRequest,
        response: simulated,
      },
    },
    async (req, reply) => reply.code(202).send(await simulateClearing(deps, authOf(req).platform.id, nowOf(req, clock), req.params.id, req.body)),
  );

  app.post(
    '/sandbox/cards/:id/simulate/return',
    {
      config: { auth: 'basic' },
      schema: {
        tags: sandboxTags,
        operationId: 'sandboxSimulateCardReturn',
        summary: 'Simulate a card return',
        description: 'A merchant RETURN against a settled transaction, back to the funding source: the whole net settled amount makes it REFUNDED, less keeps it SETTLED with refundedAmount. Answers 202 with the transaction’s issuerTransactionToken; the change comes as a CARD_TRANSACTION.* webhook.',
        params: CardParams,
        body: SandboxCardReturnRequest,
        response: simulated,
      },
    },
    async (req, reply) => reply.code(202).send(await simulateReturn(deps, authOf(req).platform.id, nowOf(req, clock), req.params.id, req.body)),
  );

  app.post(
    '/sandbox/cards/:id/simulate/return_reversal',
    {
      config: { auth: 'basic' },
      schema: {
        tags: sandboxTags,
        operationId: 'sandboxSimulateCardReturnReversal',
        summary: 'Simulate a card return reversal',
        description: 'Reverses the returns of a REFUNDED transaction: the refunded amount is pulled back from the funding source (SETTLED), or EXCEPTION when it cannot be. Answers 202 with the transaction’s issuerTransactionToken; the change comes as a CARD_TRANSACTION.* webhook.',
        params: CardParams,
        body: SandboxCardTransactionRefRequest,
        response: simulated,
      },
    },
    async (req, reply) => reply.code(202).send(await simulateReturnReversal(deps, authOf(req).platform.id, nowOf(req, clock), req.params.id, req.body)),
  );

  app.post(
    '/sandbox/cards/:id/simulate/authorization_advice',
    {
      config: { auth: 'basic' },
      schema: {
        tags: sandboxTags,
        operationId: 'sandboxSimulateCardAuthorizationAdvice',
        summary: 'Simulate a card authorization advice',
        description: 'Re-sizes an open authorization (AUTHORIZED or PARTIALLY_SETTLED) to a new total: the hold grows (declined, unchanged, when the funding source cannot cover it) or shrinks. Answers 202 with the transaction’s issuerTransactionToken; the change comes as a CARD_TRANSACTION.* webhook.',
        params: CardParams,
        body: SandboxCardAuthorizationAdviceRequest,
        response: simulated,
      },
    },
    async (req, reply) => reply.code(202).send(await simulateAuthorizationAdvice(deps, authOf(req).platform.id, nowOf(req, clock), req.params.id, req.body)),
  );

  app.post(
    '/sandbox/cards/:id/simulate/balance_inquiry',
    {
      config: { auth: 'basic' },
      schema: {
        tags: sandboxTags,
        operationId: 'sandboxSimulateCardBalanceInquiry',
        summary: 'Simulate a card balance inquiry',
        description: 'A 0-amount authorization: records, moves and sends nothing; answers 202 with the event’s issuerTransactionToken.',
        params: CardParams,
        body: SandboxCardBalanceInquiryRequest,
        response: simulated,
      },
    },
    async (req, reply) => reply.code(202).send(await simulateBalanceInquiry(deps, authOf(req).platform.id, req.params.id)),
  );
};

// ---- The reveal page ------------------------------------------------------------------------

const HEADERS = {
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'",
};

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>` +
    '<style>body{font-family:system-ui,sans-serif;margin:1.5rem}dl{display:grid;grid-template-columns:auto 1fr;gap:.4rem 1rem}dt{color:#555}dd{margin:0;font-family:monospace;font-size:1.1rem}</style>' +
    `</head><body>${body}</body></html>`;
}

/**
 * The sandbox's stand-in for the processor's iframe: GET /hosted/cards/reveal?t=<token>
 * shows the PAN, CVV and expiry while the token lives. No credentials (the sealed token is
 * the credential); request logging is off for it, so the token never reaches a log line.
 */
export const cardRevealPages: FastifyPluginAsync = async (app) => {
  const { store, clock } = app.deps;
  const nowMsOf = async (platformId: string) => {
    const p = await store.db.selectFrom('platforms').select('clock_offset_ms').where('id', '=', platformId).executeTakeFirst();
    return platformNowMs(clock, Number(p?.clock_offset_ms ?? 0));
  };
  // No query schema: whatever the link carries (no token, a repeated or oversized one) is
  // answered by the page itself, an error page like any token that does not open.
  app.get<{ Querystring: { t?: unknown } }>(
    REVEAL_PAGE_PATH,
    { logLevel: 'silent', schema: { hide: true } },
    async (req, reply) => {
      const token = typeof req.query.t === 'string' && req.query.t !== '' && req.query.t.length <= 4096 ? req.query.t : undefined;
      const model = token ? await revealPageModel(store.db, nowMsOf, token) : ({ ok: false, status: 404, reason: 'This link is not valid.' } as const);
      reply.headers(HEADERS).type('text/html; charset=utf-8');
      if (!model.ok) return reply.code(model.status).send(page('Card details', `<p>${escape(model.reason)}</p>`));
      const pan = model.pan.replace(/(\d{4})(?=\d)/g, '$1 ');
      return reply.code(200).send(
        page(
          'Card details',
          `<h1>Card ending ${escape(model.last4)}</h1><dl><dt>Card number</dt><dd>${escape(pan)}</dd><dt>Expires</dt><dd>${String(model.expMonth).padStart(2, '0')}/${model.expYear}</dd><dt>CVV</dt><dd>${escape(model.cvv)}</dd></dl>`,
        ),
      );
    },
  );
};
