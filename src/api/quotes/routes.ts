import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, nowOf, requestIdHeader, signedHeadersOf } from '../../kernel/http.js';
import { SignedHeaders, SignedRequestChallenge, TransactionOneOf } from './shapes.js';
import { listQuotes } from './list.js';
import { ExecuteQuoteRequest, Quote, QuoteListQuery, QuoteListResponse, QuoteParams, QuoteRequest, SandboxSendRequest, TransferInRequest, TransferOutRequest } from './schemas.js';
import { createQuote } from './service.js';
import { executeQuote, walletExecuteChallenge } from './execute.js';
import { fundRealtimeQuote } from './realtime-funding.js';
import { createTransfer } from './transfers.js';
import { getQuote } from './views.js';

const tags = ['Cross-Currency Transfers'];

export const quotesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, jobs, sealer } = app.deps;
  const deps = { store, jobs };

  app.post(
    '/quotes',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      schema: {
        tags,
        operationId: 'createQuote',
        summary: 'Create a transfer quote',
        description:
          'Prices a transfer at the platform’s cached rate and fee (the lookup’s), executable for 5 minutes of platform time. Source: an internal account, an external account with pull functionality, or REALTIME_FUNDING (the answer carries paymentInstructions). Destination: an external or internal account, or a UMA address (with the lookupId). With `immediatelyExecute` the quote is executed in the same request.',
        body: QuoteRequest,
        response: { 201: Quote, ...errorResponses(403, 409, 412, 424, 429, 501) },
      },
    },
    async (req, reply) => {
      const quote = await createQuote(deps, authOf(req).platform, nowOf(req, clock), req.body);
      return reply.code(201).send(quote);
    },
  );

  app.get(
    '/quotes',
    {
      // Newer than the 2025-10-13 reference: the official SDK lists quotes (client.quotes.list).
      config: { auth: 'basic', extension: true },
      schema: {
        tags,
        operationId: 'listQuotes',
        summary: 'List quotes',
        description:
          'The platform’s quotes, newest first, with cursor pagination; each as GET /quotes/{quoteId} shows it (a PENDING quote past its expiry is EXPIRED, and filters as such). A customerId equal to the platform id lists the platform’s own quotes.',
        querystring: QuoteListQuery,
        response: { 200: QuoteListResponse, ...errorResponses() },
      },
    },
    async (req) => listQuotes(store.db, authOf(req).platform.id, req.query, nowOf(req, clock).ms),
  );

  app.get(
    '/quotes/:quoteId',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'getQuoteById', summary: 'Get a quote', params: QuoteParams, response: { 200: Quote, ...errorResponses(404) } },
    },
    async (req) => getQuote(store.db, authOf(req).platform.id, req.params.quoteId, nowOf(req, clock).ms),
  );

  app.post(
    '/quotes/:quoteId/execute',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      // The body is optional (the reference's ExecuteQuoteRequest): no body reads as {}.
      preValidation: async (req) => {
        if (req.body === undefined || req.body === null) req.body = {};
      },
      schema: {
        tags,
        operationId: 'executeQuote',
        summary: 'Execute a quote',
        description: 'Starts the quote’s transaction: the sending total is held on the source account (or pulled from the external source); no body. Honours Idempotency-Key. From an EMBEDDED_WALLET source it needs the wallet’s stamp over the quote’s payloadToSign in Service-Wallet-Signature (without one: 202 with the payload and a requestId).',
        params: QuoteParams,
        body: ExecuteQuoteRequest,
        headers: SignedHeaders,
        response: { 200: Quote, 202: SignedRequestChallenge, ...errorResponses(403, 404, 409, 429) },
      },
    },
    async (req, reply) => {
      // From an embedded wallet: the wallet's signature first (202 challenge without one).
      const challenge = await walletExecuteChallenge({ store, sealer }, authOf(req).platform.id, nowOf(req, clock), req.params.quoteId, signedHeadersOf(req));
      if (challenge) {
        requestIdHeader(reply, challenge);
        return reply.code(202).send(challenge);
      }
      return executeQuote(deps, authOf(req).platform, nowOf(req, clock), req.params.quoteId);
    },
  );

  app.post(
    '/transfer-in',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      schema: {
        tags: ['Same-Currency Transfers'],
        operationId: 'createTransferIn',
        deprecated: true,
        summary: 'Create a transfer-in request (deprecated)',
        description:
          'Deprecated: use POST /quotes with an external-account source and `immediatelyExecute: true`. Pulls `amount` (required: an external account’s balance cannot be known) from an external account into an internal account of the same currency; the external account’s last 3 digits decide the sandbox outcome.',
        body: TransferInRequest,
        response: { 201: TransactionOneOf, ...errorResponses(403, 404, 429) },
      },
    },
    async (req, reply) => {
      const b = req.body;
      const tx = await createTransfer(
        deps,
        authOf(req).platform,
        nowOf(req, clock),
        {
          source: { sourceType: 'ACCOUNT', accountId: b.source.accountId },
          destination: { destinationType: 'ACCOUNT', accountId: b.destination.accountId },
          lockedCurrencySide: 'SENDING',
          ...(b.amount !== undefined ? { lockedCurrencyAmount: b.amount } : {}),
        },
        'IN',
      );
      return reply.code(201).send(tx);
    },
  );

  app.post(
    '/transfer-out',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      schema: {
        tags: ['Same-Currency Transfers'],
        operationId: 'createTransferOut',
        deprecated: true,
        summary: 'Create a transfer-out request (deprecated)',
        description:
          'Deprecated: use POST /quotes with `immediatelyExecute: true`. Pays `amount` (absent: the whole available balance) from an internal account to an external account of the same currency; answers the transaction as created (PENDING). The external account’s last 3 digits decide the sandbox outcome.',
        body: TransferOutRequest,
        response: { 201: TransactionOneOf, ...errorResponses(403, 404, 429) },
      },
    },
    async (req, reply) => {
      const b = req.body;
      const tx = await createTransfer(
        deps,
        authOf(req).platform,
        nowOf(req, clock),
        {
          source: { sourceType: 'ACCOUNT', accountId: b.source.accountId },
          destination: { destinationType: 'ACCOUNT', accountId: b.destination.accountId, ...(b.destination.paymentRail ? { paymentRail: b.destination.paymentRail } : {}) },
          lockedCurrencySide: 'SENDING',
          ...(b.amount !== undefined ? { lockedCurrencyAmount: b.amount } : {}),
          ...(b.remittanceInformation !== undefined ? { remittanceInformation: b.remittanceInformation } : {}),
          ...(b.purposeOfPayment !== undefined ? { purposeOfPayment: b.purposeOfPayment } : {}),
        },
        'OUT',
      );
      return reply.code(201).send(tx);
    },
  );

  app.post(
    '/sandbox/send',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      schema: {
        tags: ['Sandbox'],
        operationId: 'sandboxSend',
        summary: 'Simulate sending funds',
        description:
          'Simulates the real-time funding payment of a REALTIME_FUNDING quote: the funds arrive and the quote’s transaction starts. The quote must be waiting for funds (400 QUOTE_REQUEST_FAILED) and the currency must be its sending currency (400 INVALID_CURRENCY).',
        body: SandboxSendRequest,
        response: { 200: TransactionOneOf, ...errorResponses(403, 404, 429) },
      },
    },
    async (req) => fundRealtimeQuote(deps, authOf(req).platform, nowOf(req, clock), req.body),
  );
};
